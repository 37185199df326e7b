"""Every matmul loop order spyre-tile can choose matches PyTorch eager on odd shapes.

The residency switch (`spyrec.compile(..., resident=...)`) forces the loop order of every
matmul kernel: "a" (A row block kept over the column loop), "b" (B column block kept over
the row loop) or "acc" (K blocked innermost). Shapes are not multiples of 64, so the edge
sticks are padding, and small enough to emulate in full numerics quickly.
"""

from __future__ import annotations

import pytest
import torch

import spyrec


class _Linear(torch.nn.Module):
    def __init__(self, k: int, n: int):
        super().__init__()
        self.fc = torch.nn.Linear(k, n)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


@pytest.mark.parametrize("resident", ["a", "b", "acc", ""])
@pytest.mark.parametrize("m,k,n", [(100, 150, 130), (72, 1000, 96), (200, 64, 200)])
def test_loop_order_matches_eager(m, k, n, resident):
    torch.manual_seed(0)
    model = _Linear(k, n).to(torch.float16).eval()
    x = torch.randn(m, k).to(torch.float16)
    exe = spyrec.compile(torch.export.export(model, (x,)), resident=resident)
    with torch.no_grad():
        expected = model(x).float()
    out = exe(x).float()
    scale = expected.abs().max().item()
    tol = exe.tolerance(scale)
    assert (out - expected).abs().max().item() <= tol.atol + tol.rtol * scale
    prof = exe.last_profile.to_dict()
    assert prof["offchip_bytes"] >= prof["min_offchip_bytes"]


def test_switches_off_match_eager():
    """Fusion and double buffering off change the program, not the numbers."""
    torch.manual_seed(0)
    model = _Linear(150, 130).to(torch.float16).eval()
    x = torch.randn(100, 150).to(torch.float16)
    ep = torch.export.export(model, (x,))
    with torch.no_grad():
        expected = model(x).float()
    scale = expected.abs().max().item()
    unfused = spyrec.compile(ep, fuse=False)
    assert len(unfused.binary.kernels) == 2
    for exe in (unfused, spyrec.compile(ep, double_buffer=False)):
        tol = exe.tolerance(scale)
        assert (exe(x).float() - expected).abs().max().item() <= tol.atol + tol.rtol * scale


@pytest.mark.parametrize("resident", ["a", "b", "acc"])
def test_predicted_bytes_are_the_moved_bytes(resident):
    """The off-chip bytes spyre-tile predicts for a loop order are the bytes the emulator's
    DMAs move (edge sticks included)."""
    from spyrec.api import Executable
    from spyrec.driver import compile_program
    from spyrec.pipelines import compile_options

    torch.manual_seed(0)
    model = _Linear(1000, 130).to(torch.float16).eval()
    x = torch.randn(72, 1000).to(torch.float16)
    result = compile_program(torch.export.export(model, (x,)),
                             pass_options=compile_options(resident=resident))
    (program,) = [op for op in result.module.walk() if op.name == "spyrecode.program"]
    ledger = program.attributes["spyre.decisions"].data
    assert ledger["resident"].data == resident
    predicted = ledger["spyre.tiling"].data["offchip_bytes"].value.data
    exe = Executable(result.binary)
    exe(x)
    assert exe.last_profile.to_dict()["offchip_bytes"] == predicted
