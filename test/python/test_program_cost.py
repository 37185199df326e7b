"""The roofline is measured against the source program, not the compiled kernels (note 70).

`spyrec.frontend.program_cost` computes the program's least off-chip bytes (each input,
weight and output moved once) and its flops as written; the `.spyre` records them; the
profile's roofline and bytes ratio use them. Each test here would fail if the figures came
from the compiled kernels: the depthwise convolution's taps go through LPDDR as window
kernels, so the kernels' own minimum grows with them and hides it, while the program's
does not.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from spyrec.driver import compile_program
from spyrec.frontend.importer import decompose
from spyrec.frontend.program_cost import program_cost
from spyrec.runtime.emulator import Emulator
from spyrec.runtime.profile import Profile
from spyrec.target.container import ContainerError, ProgramCost, read_spyre, write_spyre

F16 = torch.float16


class _Mm(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


class _Attention(torch.nn.Module):
    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                                is_causal=self.causal)


def _cost(module: torch.nn.Module, *inputs: torch.Tensor, dynamic=None) -> ProgramCost:
    ep = torch.export.export(module, inputs, dynamic_shapes=dynamic)
    return program_cost(decompose(ep))


def _profile(module: torch.nn.Module, *inputs: torch.Tensor) -> Profile:
    result = compile_program(torch.export.export(module, inputs))
    assert result.binary is not None
    _, profile = Emulator(result.binary, mode="timing").run()
    return profile


def test_a_gemm_moves_a_b_and_c_once():
    m, k, n = 100, 192, 72
    cost = _cost(_Mm(), torch.randn(m, k, dtype=F16), torch.randn(k, n, dtype=F16))
    assert cost.min_offchip_bytes({}) == (m * k + k * n + m * n) * 2
    assert cost.flops({}) == 2 * m * k * n
    # each row padded to whole 128-byte sticks on the device
    assert cost.padded_offchip_bytes({}) == m * 384 + k * 256 + m * 256
    # fp32 is stored as fp32 (4 B), an int64 index as int32 (4 B)
    wide = _cost(_Mm(), torch.randn(m, k), torch.randn(k, n))
    assert wide.min_offchip_bytes({}) == 2 * cost.min_offchip_bytes({})


@pytest.mark.parametrize("groups", [1, 4, 32])
def test_convolution_flops_are_exact_for_any_groups(groups):
    conv = torch.nn.Conv2d(32, 64, (3, 5), padding=1, groups=groups).to(F16).eval()
    x = torch.randn(2, 32, 12, 10, dtype=F16)
    out = conv(x)
    cost = _cost(conv, x)
    kernel = (32 // groups) * 3 * 5
    assert cost.flops({}) == 2 * out.numel() * kernel + out.numel()
    weights = 64 * (32 // groups) * 15 + 64
    assert cost.min_offchip_bytes({}) == (weights + x.numel() + out.numel()) * 2
    assert not cost.uncounted


def test_depthwise_convolution_shows_its_dense_traffic():
    """A depthwise convolution moves far more than its program needs (its windows go
    through LPDDR, note 84); the kernels' own minimum would hide it (their ratio is near
    1)."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(64, 64, 3, padding=1, groups=64).to(F16).eval()
    x = torch.randn(1, 64, 16, 16, dtype=F16)
    profile = _profile(conv, x)
    out = conv(x)
    assert profile.program_flops == 2 * out.numel() * 9 + out.numel()
    assert profile.program_min_offchip_bytes == (64 * 9 + 64 + x.numel() + out.numel()) * 2
    assert profile.bytes_ratio > 4
    assert profile.to_dict()["roofline_source"] == "program"
    # the same run measured against the compiled kernels' figures reads near 1: the test
    # above cannot pass on them
    kernels = dataclasses.replace(profile, program=None)
    assert kernels.bytes_ratio < 2
    assert kernels.roofline_ratio > 4 * profile.roofline_ratio
    assert profile.kernel_roofline_us == kernels.roofline_us


def test_causal_attention_counts_only_the_pairs_it_computes():
    b, h, n, d = 2, 4, 40, 64
    q, k, v = (torch.randn(b, h, n, d, dtype=F16) for _ in range(3))
    full = _cost(_Attention(False), q, k, v).flops({})
    causal = _cost(_Attention(True), q, k, v).flops({})
    mask = torch.ones(n, n, dtype=torch.bool).tril()
    masked = _cost(_Attention(False), q, k, v, mask).flops({})
    per_pair = 2 * d + 2 * d + 6
    assert full == b * h * n * n * per_pair
    assert causal == b * h * n * (n + 1) // 2 * per_pair
    # a mask passed as data is computed in full (and added), as the op as written does
    assert masked - full == b * h * n * n
    assert masked > full > causal


def test_symbolic_sizes_give_exact_figures_at_every_size():
    from spyrec.demo import DemoDecoder

    seq = torch.export.Dim("s", min=1, max=64)
    model = DemoDecoder(128, 2).to(F16).eval()
    cost = _cost(model, torch.randn(2, 16, 128, dtype=F16), dynamic=({1: seq},))
    for size in (5, 17, 64):
        static = _cost(model, torch.randn(2, size, 128, dtype=F16))
        assert cost.flops({"x.dim1": size}) == static.flops({})
        assert cost.min_offchip_bytes({"x.dim1": size}) == static.min_offchip_bytes({})


def test_an_op_without_a_count_is_listed_not_guessed():
    class _TopK(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.topk(x, 4).values * 2

    x = torch.randn(8, 32, dtype=F16)
    cost = _cost(_TopK(), x)
    assert cost.uncounted == {"aten.topk.default": 1}
    assert cost.flops({}) == 8 * 4  # the multiply only


def test_the_binary_records_the_cost_and_reads_files_without_it(tmp_path):
    a, b = torch.randn(64, 128, dtype=F16), torch.randn(128, 64, dtype=F16)
    result = compile_program(torch.export.export(_Mm(), (a, b)), tmp_path / "mm.spyre")
    binary = read_spyre(tmp_path / "mm.spyre")
    assert result.binary is not None and result.binary.program_cost is not None
    assert binary == result.binary and binary.program_cost is not None
    assert binary.program_cost.min_offchip_bytes({}) == (64 * 128 * 2 + 64 * 64) * 2
    # a file written before the field existed: read, and profiled on the kernels' figures
    binary.program_cost = None
    write_spyre(binary, tmp_path / "old.spyre")
    old = read_spyre(tmp_path / "old.spyre")
    assert old.program_cost is None
    _, profile = Emulator(old, mode="timing").run()
    summary = profile.to_dict()
    assert summary["roofline_source"] == "kernels"
    assert summary["roofline_us"] == summary["kernel_roofline_us"]
    assert summary["program_min_offchip_bytes"] == summary["min_offchip_bytes"]
    # a damaged cost is refused like any other damaged manifest entry
    damaged = ProgramCost.from_dict(json.loads(json.dumps(result.binary.program_cost.to_dict())))
    assert damaged == result.binary.program_cost
    with pytest.raises((ContainerError, ValueError)):
        ProgramCost.from_dict({"tensors": [["x", "input"]], "flops": [], "uncounted": {}})


def test_spyrec_profile_labels_both_figures(tmp_path):
    from click.testing import CliRunner

    from spyrec.cli import main

    conv = torch.nn.Conv2d(32, 32, 3, padding=1, groups=32).to(F16).eval()
    compile_program(torch.export.export(conv, (torch.randn(1, 32, 8, 8, dtype=F16),)),
                    tmp_path / "dw.spyre")
    res = CliRunner().invoke(main, ["profile", str(tmp_path / "dw.spyre"), "--mode", "timing"])
    assert res.exit_code == 0, res.output
    assert "the source program's" in res.output
    assert "compiled kernels: roofline" in res.output
    assert "against the compiled kernel's own figures" in res.output
    data = json.loads(CliRunner().invoke(main, ["profile", str(tmp_path / "dw.spyre"),
                                               "--json", "--mode", "timing"]).output)
    assert data["program_min_offchip_bytes"] == (32 * 9 + 32 + 2 * 32 * 64) * 2
    assert data["bytes_ratio"] == data["offchip_bytes"] / data["program_min_offchip_bytes"]


def test_an_in_place_cache_update_writes_only_its_values():
    """`cache[:, pos] = x` (a KV cache's update) writes the assigned rows, not the cache."""

    class _Cache(torch.nn.Module):
        cache: torch.Tensor

        def __init__(self):
            super().__init__()
            self.register_buffer("cache", torch.zeros(4, 256, 64, dtype=F16))

        def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
            self.cache[:, pos] = x
            return self.cache.sum(1)

    cost = _cost(_Cache(), torch.randn(4, 1, 64, dtype=F16), torch.tensor([3]))
    kinds = {t.kind: t for t in cost.tensors}
    assert kinds["update"].shape == (4, 1, 64)
    # the cache read once, the ids (int64 on the host, int32 on the device), x, the
    # update and the output
    assert cost.min_offchip_bytes({}) == (4 * 256 * 64 + 4 * 64 + 4 * 64 + 4 * 64) * 2 + 4
