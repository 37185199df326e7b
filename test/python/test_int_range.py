"""Integers the program computes with run as f32 on the device, exact up to 2^24
(`passes/graph/int_range.py`): the compiler derives the largest integer input that keeps
every computed integer exact, the binary records it, and the runtime refuses an input
beyond it instead of returning a rounded result."""

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


def test_arithmetic_on_a_float_cast_to_an_integer_is_not_guarded_yet():
    """(x * 1000).long() + 1: nothing bounds the float, so nothing bounds the sum; such a
    program compiles without a limit (design note 85's open case)."""

    class Cast(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (x * 1000).long() + 1

    exe = _compile(Cast(), torch.randn(4, 64))
    assert all(b.int_limit is None for b in exe.binary.inputs)
