"""Rotary embeddings written with complex numbers (Llama 4, DeepSeek-V2), rewritten at import
into real arithmetic on (re, im) pairs (`spyrec/frontend/complex_rotary.py`, design note
92), against eager; a wrong sign in the rewrite is caught by the verdict; a complex op the
rewrite does not cover is refused by name. SDPA of several query heads on one key/value
head without enable_gqa (Falcon) is grouped-query attention with one group. Division with
a rounding mode: integer floor and trunc exact, float floor refused by name. `x[mask] = v`
with a mask of x's shape is a where."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from conftest import assert_matches_eager, one

import spyrec
from spyrec.diagnostics import CompileError
from spyrec.frontend import complex_rotary
from spyrec.opcases.attention import _rope_complex, _rope_inputs, mqa_cases
from spyrec.opcases.core import _Fn
from spyrec.opcases.elementwise import div_mode_cases
from spyrec.opcases.movement import masked_write_cases
from spyrec.verdict import check_outputs


class ComplexMix(torch.nn.Module):
    """The other covered forms: a real tensor times a complex one, a complex sum and
    difference with a real scalar, a complex `cat`, a `polar` with a magnitude."""

    def forward(self, x: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
        z = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        turn = torch.polar(angle.cos() + 2, angle)
        mixed = (angle.sin() * z + turn) - 0.5 * z * turn
        return torch.view_as_real(torch.cat([mixed, z - 1.5], 0)).flatten(2)


def _inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    return _rope_inputs(shape, dtype, special=False)(torch.Generator().manual_seed(0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_llama4_rotary_matches_eager(dtype: torch.dtype) -> None:
    model = _Fn(_rope_complex)
    inputs = _inputs((1, 5, 2, 34), dtype)
    exe = spyrec.compile(torch.export.export(model, inputs), cache=False)
    assert_matches_eager(exe, model, *inputs)


def test_other_complex_forms_match_eager() -> None:
    x, angle = torch.randn(3, 8), torch.rand(3, 4) * 6
    model = ComplexMix()
    exe = spyrec.compile(torch.export.export(model, (x, angle)), cache=False)
    assert_matches_eager(exe, model, x, angle)


def test_a_wrong_sign_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The injected bug of note 92: the product by the conjugate, (ac + bd) + (bc - ad)i,
    the signs of the sine terms swapped."""
    right = complex_rotary._product

    def conjugate(emit: Any, a: tuple[Any, Any], c: tuple[Any, Any]) -> Any:
        return right(emit, a, (c[0], emit(torch.ops.aten.neg.default, c[1])))

    monkeypatch.setattr(complex_rotary, "_product", conjugate)
    model = _Fn(_rope_complex)
    inputs = _inputs((1, 5, 2, 34), torch.float32)
    exe = spyrec.compile(torch.export.export(model, inputs), cache=False)
    assert not check_outputs(model(*inputs), exe(*inputs), exe).ok


def test_uncovered_complex_op_is_refused_by_name() -> None:
    model = _Fn(lambda x: torch.view_as_complex(x.reshape(4, -1, 2)).abs())
    with pytest.raises(CompileError, match=r"aten\.abs.*complex-to-real rewrite does not cover"):
        spyrec.compile(torch.export.export(model, (torch.randn(4, 8),)), cache=False)


def test_one_key_value_head_broadcasts_without_enable_gqa() -> None:
    """Falcon's multi-query attention: 4 query heads on one key/value head by broadcasting."""
    case = next(c for c in mqa_cases() if c.dtype == torch.float32 and c.shape == "unaligned")
    model, inputs = case.module(), case.inputs(torch.Generator().manual_seed(0))
    exe = spyrec.compile(torch.export.export(model, inputs), cache=False)
    assert_matches_eager(exe, model, *inputs)


def test_integer_floor_division_is_exact_and_not_truncation() -> None:
    """`a // b` of integers of both signs bit for bit; the verdict tells it from the
    truncated quotient (the injected bug: 'floor' lowered as 'trunc')."""
    case = next(c for c in div_mode_cases()
                if c.op == "div_floor_int" and c.dtype == torch.int64 and c.shape == "unaligned")
    model, inputs = case.module(), case.inputs(torch.Generator().manual_seed(0))
    exe = spyrec.compile(torch.export.export(model, inputs), cache=False)
    out = one(exe(*inputs))
    assert torch.equal(out, model(*inputs))
    truncated = torch.div(*inputs, rounding_mode="trunc")
    assert not check_outputs(truncated, out, exe).ok


def test_float_floor_division_is_refused_by_name() -> None:
    model = _Fn(lambda a, b: torch.div(a, b, rounding_mode="floor"))
    with pytest.raises(CompileError, match=r"aten\.div\.Tensor_mode.*fmod-based"):
        spyrec.compile(torch.export.export(model, (torch.randn(4, 8), torch.randn(8))),
                       cache=False)


def test_masked_write_of_ids_is_exact() -> None:
    """Gemma 3's `ids[ids == image_token] = 0` (index_put with a boolean mask of the ids'
    shape) bit for bit, with the mask true at some ids."""
    case = next(c for c in masked_write_cases()
                if c.op == "index_put_mask_ids" and c.dtype == torch.int64
                and c.shape == "unaligned")
    model, inputs = case.module(), case.inputs(torch.Generator().manual_seed(0))
    assert (inputs[0] == 3).any()
    exe = spyrec.compile(torch.export.export(model, inputs), cache=False)
    assert torch.equal(one(exe(*inputs)), model(*inputs))


def test_complex_input_is_refused_by_name() -> None:
    """A complex program input has no parts to read: its first reader is refused."""
    model = _Fn(lambda z: torch.view_as_real(z * 2).flatten(1))
    with pytest.raises(CompileError, match=r"aten\.mul.*complex-to-real rewrite does not cover"):
        spyrec.compile(torch.export.export(model, (torch.randn(4, 8, dtype=torch.cfloat),)),
                       cache=False)
