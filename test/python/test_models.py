"""Transformer building blocks end to end against PyTorch eager.

LayerNorm, a hand-written RMS norm (the Llama form: fp32 upcast, pow, mean, rsqrt), softmax,
3-D linear layers, residual adds, in fp32, fp16 and bf16, with hidden sizes that fill whole
sticks (64, 128) and one that does not (100). Tolerances from `spyrec.tolerance`, with the
reduction depth and rounding points read off the compiled program.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

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
        expected = model(*inputs).float()
    out = exe(*inputs).float()
    scale = expected.abs().max().item()
    tol = exe.tolerance(scale)
    err = (out - expected).abs().max().item()
    assert torch.isfinite(out).all()
    assert err <= tol.atol + tol.rtol * scale, (err, tol)
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


def test_softmax_over_a_middle_dim_is_reported():
    class Bad(nn.Module):
        def forward(self, x):
            return torch.softmax(x, dim=1)

    from spyrec.diagnostics import UnsupportedOpsError

    with pytest.raises(UnsupportedOpsError, match=r"over dims \[1\] \(only the last dimension"):
        spyrec.compile(torch.export.export(Bad(), (torch.randn(4, 8, 64),)))
