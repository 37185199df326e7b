"""Slices and concatenations of the innermost dim (rotary embeddings) against eager.

spyre-legalize turns each chain of innermost-dim slices and negations feeding a
concatenation into one constant 0/+-1 matrix per source, so the half rotation of rotary
embeddings is a single matmul per tensor; a slice on its own is one matmul too.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from conftest import assert_close, one

import spyrec
from spyrec.driver import compile_program


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Rope(nn.Module):
    def forward(self, x, cos, sin):
        return x * cos + rotate_half(x) * sin


class Pieces(nn.Module):
    """A slice used alone, and a concatenation of two different sources."""

    def forward(self, a, b):
        return torch.cat((a[..., 16:48], b, -a[..., :8]), dim=-1), a[..., 32:]


def _column_matrices(result) -> list[str]:
    return sorted(b.name for b, _ in result.binary.weights if ".columns" in b.name)


def _run(model, *inputs):
    result = compile_program(torch.export.export(model, inputs))
    assert result.binary is not None
    exe = spyrec.api.Executable(result.binary)
    with torch.no_grad():
        expected = model(*inputs)
    outs = exe(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    outs = outs if isinstance(outs, tuple) else (outs,)
    assert_close(exe, expected, outs)
    return result


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16],
                         ids=["fp32", "fp16", "bf16"])
def test_rotary_half_rotation(dtype):
    torch.manual_seed(0)
    x = torch.randn(2, 4, 16, 64).to(dtype)
    angles = torch.randn(16, 64)
    result = _run(Rope(), x, angles.cos().to(dtype), angles.sin().to(dtype))
    # rotate_half is one matmul: slices and the negation fold into its matrix
    assert _column_matrices(result) == ["cat.columns0"]


def test_slice_alone_and_concatenation_of_two_sources():
    torch.manual_seed(0)
    result = _run(Pieces(), torch.randn(3, 64), torch.randn(3, 32))
    # one matrix per source of the concatenation; the slice used alone, columns 32..63 of
    # an fp32 row, is its second stick: a row move, no matrix (design note 63)
    assert _column_matrices(result) == ["cat.columns0", "cat.columns1"]


def test_slice_of_a_leading_dim_is_a_row_move_and_a_strided_innermost_slice_a_column_map():
    class Rows(nn.Module):
        def forward(self, x):
            return x[1:] * 2

    class Strided(nn.Module):
        def forward(self, x):
            return x[:, ::2] * 2

    x = torch.randn(4, 64)
    exe = spyrec.compile(torch.export.export(Rows(), (x,)))
    assert torch.equal(one(exe(x)), x[1:] * 2)
    exe = spyrec.compile(torch.export.export(Strided(), (x,)))  # a column map of step 2
    assert torch.equal(one(exe(x)), x[:, ::2] * 2)
