"""Reduced rows split over a grid row, their partial sums all-reduced by ring.reduce (note 59).

A kernel that reduces rows by sums (a sum, a mean, RMS and layer norms) on fewer rows than
cores splits each row over gn cores; every core sums its share and one `ring.reduce` per
tile gives every core of the grid row the whole sum. The emulator matches the reductions
of the group, checks every core's hazards and reports deadlocks, so a wrong schedule fails
here; the numbers must match eager either way, and `ring_reduce=False` keeps rows whole.
"""

from __future__ import annotations

import pytest
import torch
from conftest import assert_matches_eager, explain_both_ways, one

import spyrec
from spyrec.api import Executable
from spyrec.driver import compile_program
from spyrec.numeric_bisect import bisect
from spyrec.pipelines import compile_options

F = torch.nn.functional


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


CASES = {
    "sum": (lambda x: x.sum(-1, keepdim=True), (4, 16384)),
    "mean_f32": (lambda x: x.float().mean(-1), (4, 32768)),
    "rms_norm": (lambda x: F.rms_norm(x, (x.shape[-1],), eps=1e-6), (2, 8192)),
    "layer_norm": (lambda x: F.layer_norm(x, (x.shape[-1],)), (2, 8192)),
    "sum_of_squares": (lambda x: (x * x + 1).sum(-1), (3, 12288)),
}


def _compile(name: str, **switches):
    torch.manual_seed(0)
    fn, shape = CASES[name]
    model = _Fn(fn).eval()
    x = torch.randn(*shape).to(torch.float16)
    result = compile_program(torch.export.export(model, (x,)),
                             pass_options=compile_options(**switches))
    return model, x, result


def _programs(result) -> list:  # a CompileResult
    return [op for op in result.module.walk() if op.name == "spyrecode.program"]


def _grids(result) -> list[tuple[int, int]]:
    return [tuple(g.value.data for g in op.attributes["grid"].data)
            for op in result.module.walk()
            if op.name == "func.func" and "grid" in op.attributes]


def _ring_reduces(result) -> int:
    """ring.reduce instructions of the binary, over every kernel and core."""
    return sum(1 for kernel in result.binary.kernels for program in kernel.programs.values()
               for instr in program if instr.op == "ring.reduce")


def _check(model, x, result) -> Executable:
    exe = Executable(result.binary)
    assert_matches_eager(exe, model, x)
    assert not [w for w in exe.last_profile.warnings if "hazard" in w.lower()]
    return exe


@pytest.mark.parametrize("name", sorted(CASES))
def test_split_rows_match_eager(name):
    """Each case splits its reduced rows (gn > 1) and sums the shares over the ring; the
    bytes spyre-partition-cores predicted are the bytes the DMAs moved."""
    model, x, result = _compile(name)
    reducing = [g for g in _grids(result) if g[1] > 1]
    assert reducing, _grids(result)
    assert _ring_reduces(result) > 0
    exe = _check(model, x, result)
    (program,) = [p for p in _programs(result)
                  if "combined by ring.reduce" in str(p.attributes["spyre.decisions"])]
    ledger = program.attributes["spyre.decisions"].data["spyre.partition"].data
    assert "combined by ring.reduce" in ledger["reason"].data
    if len(_programs(result)) == 1:
        assert exe.last_profile.to_dict()["offchip_bytes"] == ledger["offchip_bytes"].value.data


@pytest.mark.parametrize("name", ["rms_norm", "sum"])
def test_whole_rows_switch(name):
    """ring_reduce=False keeps every reduced row on one core, with the same numbers, and
    is slower: the split is what makes the few long rows use the cores' SFUs."""
    model, x, split = _compile(name)
    _, _, whole = _compile(name, ring_reduce=False)
    assert all(g[1] == 1 for g in _grids(whole))
    assert _ring_reduces(whole) == 0
    fast = _check(model, x, split).last_profile.emulated_us
    slow = _check(model, x, whole).last_profile.emulated_us
    assert fast < slow


def test_max_reductions_and_padded_rows_stay_whole():
    """Softmax reduces by max (ring.reduce only adds) and 4000 fp16 columns end in stick
    padding: neither splits its rows."""
    class _Two(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor):
            return torch.softmax(a, -1), b.sum(-1)

    a, b = torch.randn(2, 8192).half(), torch.randn(2, 4000).half()
    result = compile_program(torch.export.export(_Two(), (a, b)))
    assert _grids(result) and all(g[1] == 1 for g in _grids(result)), _grids(result)
    assert result.binary is not None
    exe = Executable(result.binary)
    soft, total = exe(a, b)
    assert torch.allclose(soft.float(), torch.softmax(a.float(), -1), atol=1e-3)
    assert torch.allclose(total.float(), b.float().sum(-1), rtol=1e-2, atol=1.0)


def test_every_pass_keeps_the_numbers():
    """The KTIR interpreter runs the inter-tile produce/reduce pair of the lowered kernel
    (the all-reduce as KTIR states it) and agrees with eager, as the emulator does."""
    fn, shape = CASES["layer_norm"]
    torch.manual_seed(0)
    ep = torch.export.export(_Fn(fn).eval(), (torch.randn(*shape).half(),))
    result = bisect(ep)
    assert result.first_bad is None, result.report()
    ktir = [c.status for c in result.checkpoints if c.how == "KTIR interpreter"]
    assert ktir and all(s == "ok" for s in ktir), result.report()


def test_compile_switch_and_cli(tmp_path):
    """`spyrec.compile(..., ring_reduce=False)` and `spyrec explain --no-ring-reduce`."""
    fn, shape = CASES["rms_norm"]
    torch.manual_seed(0)
    x = torch.randn(*shape).half()
    ep = torch.export.export(_Fn(fn).eval(), (x,))
    exe = spyrec.compile(ep, ring_reduce=False, cache=False)
    assert torch.allclose(one(exe(x)).float(), fn(x.float()), atol=2e-2)
    split, whole = explain_both_ways(tmp_path, ep, "--no-ring-reduce")
    assert "combined by ring.reduce" in split
    assert "combined by ring.reduce" not in whole
