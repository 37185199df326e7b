"""Every matmul loop order spyre-tile can choose matches PyTorch eager on odd shapes.

The residency switch (`spyrec.compile(..., resident=...)`) forces the loop order of every
matmul kernel: "a" (A row block kept over the column loop), "b" (B column block kept over
the row loop) or "acc" (K blocked innermost). Shapes are not multiples of 64, so the edge
sticks are padding, and small enough to emulate in full numerics quickly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import torch
from conftest import assert_close, assert_matches_eager

import spyrec

if TYPE_CHECKING:
    from spyrec.driver import CompileResult


class _Linear(torch.nn.Module):
    def __init__(self, k: int, n: int):
        super().__init__()
        self.fc = torch.nn.Linear(k, n)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def _decisions(result: CompileResult) -> Any:
    """The spyrecode program's decision ledger (`spyre.decisions`), read untyped."""
    assert result.module is not None
    (program,) = [op for op in result.module.walk() if op.name == "spyrecode.program"]
    ledger: Any = program.attributes["spyre.decisions"]
    return ledger.data


@pytest.mark.parametrize("resident", ["a", "b", "acc", ""])
@pytest.mark.parametrize("m,k,n", [(100, 150, 130), (72, 1000, 96), (200, 64, 200)])
def test_loop_order_matches_eager(m, k, n, resident):
    torch.manual_seed(0)
    model = _Linear(k, n).to(torch.float16).eval()
    x = torch.randn(m, k).to(torch.float16)
    exe = spyrec.compile(torch.export.export(model, (x,)), resident=resident)
    assert_matches_eager(exe, model, x)
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
    unfused = spyrec.compile(ep, fuse=False)
    assert len(unfused.binary.kernels) == 2
    for exe in (unfused, spyrec.compile(ep, double_buffer=False)):
        assert_close(exe, expected, exe(x))


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
    ledger = _decisions(result)
    assert ledger["resident"].data == resident
    predicted = ledger["spyre.tiling"].data["offchip_bytes"].value.data
    assert result.binary is not None
    exe = Executable(result.binary)
    exe(x)
    assert exe.last_profile.to_dict()["offchip_bytes"] == predicted


@pytest.mark.parametrize("m,k,n,tail", [(96, 1000, 200, 2), (128, 600, 300, 3),
                                        (64, 520, 130, 2)])
def test_tail_pieces_match_eager(m, k, n, tail):
    """A matmul whose last column tile is computed in row pieces (`tail`, note 57) matches
    eager with no LX hazard: the pieces read rows of the A block's K slices and K slices of
    the resident B block, which spyre-schedule-dataflow keys by the piece each lies in. The
    third shape's cores have one column tile, all of it the tail; the second's pieces are
    uneven (48, 48, 32 rows)."""
    from spyrec.api import Executable
    from spyrec.driver import compile_program
    from spyrec.pipelines import compile_options

    torch.manual_seed(0)
    model = _Linear(k, n).to(torch.float16).eval()
    x = torch.randn(m, k).to(torch.float16)
    result = compile_program(torch.export.export(model, (x,)),
                             pass_options=compile_options(resident="a", tail=tail))
    assert _decisions(result)["tail"].value.data == tail and result.binary is not None
    exe = Executable(result.binary)
    with torch.no_grad():
        expected = model(x).float()
    assert_close(exe, expected, exe(x))
    assert not [w for w in exe.last_profile.warnings if "hazard" in w.lower()]


def _overlap(r, w) -> bool:  # two strided regions (runtime.isa.Region) share a byte
    rows = lambda g: {(g.base + i * g.pitch, g.base + i * g.pitch + g.row_bytes)  # noqa: E731
                      for i in range(g.rows)}
    return any(a < d and c < b for a, b in rows(r) for c, d in rows(w))


def test_tail_matmuls_depend_on_the_loads_of_what_they_read():
    """Every matmul's operands were written by an instruction it depends on through the
    schedule's dependences, not only through its engine's program order: a tail piece's
    rows of an A K slice (which do not start where the slice does) depend on that slice's
    DMA, so that reordering (`prefetch_order`) and the next block's load into the same slot
    stay ordered around them (note 57)."""
    from spyrec.driver import compile_program
    from spyrec.pipelines import compile_options
    from spyrec.runtime.emulator import Emulator
    from spyrec.target.isa import lx_access

    torch.manual_seed(0)
    model = _Linear(1000, 200).to(torch.float16).eval()
    x = torch.randn(96, 1000).to(torch.float16)
    result = compile_program(torch.export.export(model, (x,)),
                             pass_options=compile_options(resident="a", tail=2))
    assert result.binary is not None
    _, profile = Emulator(result.binary, mode="timing").run()
    timeline = profile.kernels[0].timeline
    assert timeline is not None
    program = timeline.programs[0]
    ancestors: list[set[int]] = []
    for instr in program:
        ancestors.append(set(instr.deps).union(*(ancestors[d] for d in instr.deps)))
    writes = [lx_access(instr, 0)[1] for instr in program]
    checked = 0
    for index, instr in enumerate(program):
        if not instr.op.startswith("pt."):
            continue
        for region in lx_access(instr, 0)[0]:
            writer = next((w for w in range(index - 1, -1, -1)
                           if any(_overlap(region, o) for o in writes[w])), None)
            assert writer is None or writer in ancestors[index], (index, instr, writer)
            checked += 1
    assert checked
