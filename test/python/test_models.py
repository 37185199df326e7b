"""Transformer building blocks end to end against PyTorch eager.

LayerNorm, a hand-written RMS norm (the Llama form: fp32 upcast, pow, mean, rsqrt), softmax,
3-D linear layers, residual adds, in fp32, fp16 and bf16, with hidden sizes that fill whole
sticks (64, 128) and one that does not (100). Compared by `spyrec.verdict.check_outputs`,
with each output's reduction depth and rounding points read off the compiled program.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from conftest import assert_close

import spyrec


class LlamaRMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(d) + 0.5)
        self.eps = eps

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return self.weight * (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype)


class Block(nn.Module):
    """Pre-norm FFN with a residual, then an RMS norm and a softmax over the hidden dim."""

    def __init__(self, d: int):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        self.rms = LlamaRMSNorm(d)

    def forward(self, x):
        h = x + self.fc2(F.gelu(self.fc1(self.ln(x))))
        return torch.softmax(self.rms(h), dim=-1)


def _check(model, *inputs):
    ep = torch.export.export(model, inputs)
    exe = spyrec.compile(ep)
    with torch.no_grad():
        expected = model(*inputs)
    assert_close(exe, expected, exe(*inputs))
    return exe


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16],
                         ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("d", [64, 100, 128])
def test_block(dtype, d):
    torch.manual_seed(0)
    model = Block(d).to(dtype).eval()
    exe = _check(model, torch.randn(2, 16, d).to(dtype))
    # the residual add, RMS norm and softmax run as one kernel; so does the layer norm
    assert len(exe.binary.kernels) <= 6


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_softmax_rows(dtype):
    class Softmax(nn.Module):
        def forward(self, x):
            return torch.softmax(x * 0.125, dim=-1)

    exe = _check(Softmax(), (torch.randn(4, 32, 200) * 4).to(dtype))
    assert len(exe.binary.kernels) == 1


def test_torch_rms_norm_and_layer_norm_without_affine():
    class Norms(nn.Module):
        def __init__(self):
            super().__init__()
            self.rms = nn.RMSNorm(96, eps=1e-5)
            self.ln = nn.LayerNorm(96, elementwise_affine=False)

        def forward(self, x):
            return self.ln(self.rms(x) * 2.0 - 1.0)

    torch.manual_seed(0)
    _check(Norms().eval(), torch.randn(3, 40, 96))


def test_softmax_over_a_middle_dim_matches_eager():
    # dim 1 moves innermost through a device transpose and back (design note 51)
    class Middle(nn.Module):
        def forward(self, x):
            return torch.softmax(x, dim=1)

    _check(Middle().eval(), torch.randn(4, 8, 64))


def test_a_variance_over_two_dims_is_reported():
    class Bad(nn.Module):
        def forward(self, x):
            return x.var((0, 1))

    from spyrec.diagnostics import UnsupportedOpsError

    with pytest.raises(UnsupportedOpsError, match=r"over dims \[0, 1\] \(only the last dimension"):
        spyrec.compile(torch.export.export(Bad(), (torch.randn(4, 8, 64),)))


@pytest.mark.parametrize("name,fn,shape", [
    ("mean_pool", lambda x: x.mean(1), (2, 64, 100)),
    ("sum_dim0_keep", lambda x: x.sum(0, keepdim=True), (64, 100)),
    ("sum_all", lambda x: x.sum(), (2, 32, 100)),
    ("mean_all_keep", lambda x: x.mean((0, 1, 2), keepdim=True), (2, 32, 100)),
    ("mean_1d", lambda x: x.mean(), (100,)),
], ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
def test_sums_and_means_over_leading_dims(name, fn, shape, dtype):
    """Over leading dims a sum is P @ x with P a constant 0/1 summation matrix (the rows are
    the contraction); over the stick dim and leading dims, a row reduction first."""
    class Reduce(nn.Module):
        def forward(self, x):
            return fn(x)

    torch.manual_seed(0)
    _check(Reduce(), torch.randn(*shape).to(dtype))


def test_a_leading_dim_sum_over_rows_that_are_not_whole_sticks_moves_the_dim_last():
    """The 20 rows summed are not whole sticks, so no summation matrix: the reduced dim is
    moved last by a device transpose and summed as a row (design note 74)."""
    class Pool(nn.Module):
        def forward(self, x):
            return x.mean(1)

    _check(Pool(), torch.randn(2, 10, 64).half())
