"""Zero-element tensors: compiled as PyTorch computes them, or refused by name.

A zero-element tensor has no data, so every op producing one is folded in the frontend, and
an op reading only such tensors (a reduction over an empty dim, a matmul with K = 0) is a
constant of its shape; `cat` skips its empty operands as PyTorch does. Each pattern is
compared with eager in fp32 and fp16.
"""

from __future__ import annotations

import pytest
import torch
from conftest import assert_close

import spyrec
from spyrec.diagnostics import CompileError
from spyrec.frontend.fold import fold_constants


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


class _Tokens(torch.nn.Module):
    """dinov3's embeddings: a class token, zero register tokens and patches, concatenated."""

    def __init__(self, dim: int = 64, registers: int = 0):
        super().__init__()
        self.cls = torch.nn.Parameter(torch.randn(1, 1, dim))
        self.registers = torch.nn.Parameter(torch.randn(1, registers, dim))

    def forward(self, x):
        return torch.cat([self.cls.expand(x.shape[0], -1, -1),
                          self.registers.expand(x.shape[0], -1, -1), x], 1) * 2


PATTERNS = {
    # an empty operand of cat in the middle, at the end, along the innermost dim
    "cat_empty_middle": lambda x: torch.cat([x[:, :1], x[:, 3:3], x[:, 1:]], 1) + 1,
    "cat_empty_last": lambda x: torch.cat([x, x[:, :0]], 1) * 3,
    "cat_empty_inner": lambda x: torch.cat([x[..., :0], x, x[..., 5:5]], -1) - x,
    # reductions over an empty dim: their identity
    "sum_empty": lambda x: x + x[..., :0].sum(-1, keepdim=True),
    "mean_rows_empty_cols": lambda x: x * 2 + x[:, :0].sum(1, keepdim=True),
    "prod_empty": lambda x: x * x[..., :0].prod(-1, keepdim=True),
    # matmul with K = 0 is zeros
    "matmul_k0": lambda x: x[..., :0] @ x[..., :0].transpose(-1, -2) + x[..., :1],
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_zero_element_pattern_matches_eager(name, dtype):
    x = torch.randn(2, 8, 64, generator=torch.Generator().manual_seed(0)).to(dtype)
    _compare(_Fn(PATTERNS[name]), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_zero_register_tokens_match_eager(dtype):
    model = _Tokens().to(dtype)
    x = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(1)).to(dtype)
    _compare(model, x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_zero_element_input_matches_eager(dtype):
    """A user input with no elements: its shape is all of it, so what reads it folds."""
    model = _Fn(lambda x, e: x + e.sum(-1, keepdim=True) + e @ e.transpose(0, 1)[:, :1])
    _compare(model, torch.randn(4, 40).to(dtype), torch.randn(4, 0).to(dtype))


def test_an_empty_output_is_refused_by_name():
    model = _Fn(lambda x: (x[:, :0] * 2, x + 1))
    with pytest.raises(CompileError, match=r"mul \(aten\.mul\.Tensor\): a program output "
                                           r"with no elements \(shape \[4, 0\]\)"):
        spyrec.compile(torch.export.export(model, (torch.randn(4, 40),)), cache=False)


def test_a_fold_torch_refuses_is_a_compile_error_naming_the_op():
    """amax over an empty dim of a weight: torch.export refuses it in a model, so the graph
    is built by hand; folding it raises a CompileError naming the node and op."""
    graph = torch.fx.Graph()
    weight = graph.placeholder("w")
    weight.meta["val"] = torch.empty(4, 0)
    amax = graph.call_function(torch.ops.aten.amax.default, (weight, [-1], True))
    amax.meta["val"] = torch.empty(4, 1)
    graph.output(amax)
    with pytest.raises(CompileError, match=r"amax_default \(aten\.amax\.default\)"):
        fold_constants(graph, {"w": torch.empty(4, 0)})


def _compare(model, *inputs):
    program = torch.export.export(model, inputs)
    exe = spyrec.compile(program, cache=False)
    with torch.no_grad():
        expected = model(*inputs)
    assert_close(exe, expected, exe(*inputs))
