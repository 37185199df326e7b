"""Integers the program computes with run as f32 on the device, exact up to 2^24
(`passes/graph/int_range.py`): the compiler derives the largest integer input that keeps
every computed integer exact, the binary records it, and the runtime refuses an input
beyond it instead of returning a rounded result; a float input that integers are computed
from through a cast gets such a limit too."""

from __future__ import annotations

import pytest
import torch
from conftest import one

import spyrec
from spyrec.diagnostics import CompileError, SpyrecError


class _Affine(torch.nn.Module):
    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return t * 3 + 1


class _Cumsum(torch.nn.Module):
    def forward(self, mask: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(mask, dim=1) + 2


def _compile(model: torch.nn.Module, *inputs: torch.Tensor) -> spyrec.api.Executable:
    return spyrec.compile(torch.export.export(model, inputs))


def test_values_within_the_limit_are_exact_and_beyond_it_refused():
    """x * 3 + 1 is exact while |3x + 1| <= 2^24: inputs up to (2^24 - 1) / 3 run and match
    eager exactly; one more is refused by name (it came back 2 off before the limit)."""
    limit = (2 ** 24 - 1) // 3
    ok = torch.tensor([[limit, -limit, 7, 0]] * 2, dtype=torch.int64).repeat(1, 16)
    exe = _compile(_Affine(), ok)
    assert exe.binary.inputs[0].int_limit == limit
    assert torch.equal(one(exe(ok)), _Affine()(ok))
    bad = ok.clone()
    bad[1, 5] = limit + 1
    with pytest.raises(SpyrecError, match=rf"input 't' holds {limit + 1} at \[1, 5\].*{limit}"):
        exe(bad)


def test_a_scan_divides_the_limit_by_its_length():
    """cumsum over 64 positions of values up to L reaches 64 L + 2."""
    mask = torch.ones(2, 64, dtype=torch.int64)
    exe = _compile(_Cumsum(), mask)
    assert exe.binary.inputs[0].int_limit == (2 ** 24 - 2) // 64
    assert torch.equal(one(exe(mask)), _Cumsum()(mask))


def test_ids_used_only_as_positions_have_no_limit():
    """Embedding ids move as int32 (exact to 2^31): no f32 limit on them."""
    emb = torch.nn.Embedding(100, 64)
    ids = torch.randint(0, 100, (2, 8))
    exe = _compile(emb, ids)
    assert exe.binary.inputs[0].int_limit is None


def test_integers_no_input_keeps_exact_are_refused():
    """A constant past 2^24 added on the device is wrong whatever the inputs are."""

    class Offset(torch.nn.Module):
        def forward(self, t: torch.Tensor) -> torch.Tensor:
            return t + 2 ** 25

    with pytest.raises(CompileError, match=r"reaches 33554432 in magnitude"):
        _compile(Offset(), torch.zeros(4, 64, dtype=torch.int64))


class _Cast(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * 1000).long() + 1


def test_arithmetic_on_a_float_cast_to_an_integer_limits_the_float_input():
    """(x * 1000).long() + 1: the cast bounds the integer by 1000 |x| (with bf16's rounding
    slack), so the float input gets a limit; within it the result is eager's exactly, past
    it the input is refused by name (it came back rounded before: 2^24 + 1 is not an f32)."""
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(0))
    exe = _compile(_Cast(), x)
    limit = exe.binary.inputs[0].int_limit
    assert limit is not None and 16000 < limit < (2 ** 24 - 1) // 1000
    assert torch.equal(one(exe(x)), _Cast()(x))
    big = x.clone()
    big[2, 3] = 16777.216  # 1000 x = 2^24 + 1 after the cast: rounds on the device
    with pytest.raises(SpyrecError, match=r"input 'x' holds 16777\.2.* at \[2, 3\].*float input"):
        exe(big)


def test_a_float_input_read_only_through_a_comparison_has_no_limit():
    """(x > 0).long().cumsum(): the 0/1 of a comparison does not grow with |x|."""

    class Count(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (x > 0).long().cumsum(dim=1) + 1

    x = torch.randn(2, 64)
    exe = _compile(Count(), x)
    assert exe.binary.inputs[0].int_limit is None
    assert torch.equal(one(exe(x * 1e30)), Count()(x * 1e30))


def test_a_float_through_an_op_without_a_rule_is_not_guarded_yet():
    """log has no bound near 0: the integers computed from it are not guarded yet (design
    note 85's open case), and the program compiles without a limit."""

    class LogCast(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (torch.log(x.abs() + 1) * 10).long() + 1

    exe = _compile(LogCast(), torch.randn(4, 64))
    assert all(b.int_limit is None for b in exe.binary.inputs)


def test_random_inputs_keep_within_a_float_inputs_limit():
    """`spyrec run` without --input draws normal floats: clamped to a small limit (x * 1e7
    cast to integers allows |x| <= 1), so the random run is not refused."""
    from spyrec.cli import random_inputs

    class Fine(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (x * 1e7).long() + 1

    exe = _compile(Fine(), torch.randn(4, 64))
    limit = exe.binary.inputs[0].int_limit
    assert limit is not None and limit < 2
    (x,) = random_inputs(exe.binary, {}, seed=0)
    assert float(x.abs().max()) == limit  # normal draws past 1 clamped, none refused
    assert torch.equal(one(exe(x)), Fine()(x))


def test_a_float_input_read_only_for_positions_has_no_limit():
    """argmax(x) + t: the integer input t gets its limit, the float x none (a position does
    not grow with |x|), so large logits run."""

    class Pick(torch.nn.Module):
        def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return x.argmax(dim=-1, keepdim=True) + t * 3

    x, t = torch.randn(4, 64), torch.randint(0, 9, (4, 1))
    exe = _compile(Pick(), x, t)
    assert [b.int_limit for b in exe.binary.inputs] == [None, (2 ** 24 - 64) // 3]
    assert torch.equal(one(exe(x * 1e30, t)), Pick()(x * 1e30, t))
