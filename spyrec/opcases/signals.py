"""Signals (1-D convolution, group norm, channels-last on the device) and top-k routing."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from spyrec.opcases.core import DTYPES, SHAPES, OpCase, _Fn, _randn

# ---- signals: 1-D convolution and group norm (channels-last on the device) -------------------

SIGNALS = {"signal": (2, 8, 45), "signal_aligned": (1, 64, 24)}  # N, C, L


def _group_norm(groups: int, channels: int) -> torch.nn.Module:
    norm = torch.nn.GroupNorm(groups, channels)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.normal_(0, 0.2)
    return norm


class _Tokens(torch.nn.Module):
    """An audio encoder's front: a 1-D convolution, its channels as the tokens' features
    (`conv(x).transpose(1, 2)`), and back through a 1-D convolution (`t.transpose(1, 2)`):
    both transposes read the channels-last rows as they are stored."""

    def __init__(self, channels: int):
        super().__init__()
        self.a = torch.nn.Conv1d(channels, 32, 3, stride=2)
        self.b = torch.nn.Conv1d(32, 32, 3, padding=1, groups=4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.a(x).transpose(1, 2) * 0.5
        return self.b(tokens.transpose(1, 2)).transpose(1, 2)


class _CausalConv(torch.nn.Module):
    """Mamba's causal depthwise convolution, called functionally: the weight is
    `conv.weight.squeeze(1)` unsqueezed back, padding k - 1 and the tail cut off."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = torch.nn.Conv1d(channels, channels, 4, groups=channels, padding=3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.conv.weight.squeeze(1)
        y = F.conv1d(x, weight.unsqueeze(1), self.conv.bias, padding=3, groups=x.shape[1])
        return y[..., :x.shape[-1]]


class _ShapedWeightConv(torch.nn.Module):
    """A dense convolution whose weight is a parameter stored taps-first ([K, Cin, Cout],
    two taps more than it uses) and brought to [Cout, Cin, K] by permute, slice,
    contiguous and a dtype cast to the input's."""

    def __init__(self, channels: int):
        super().__init__()
        self.taps = torch.nn.Parameter(torch.randn(5, channels, 16) / channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.taps.permute(2, 1, 0)[..., 1:4].contiguous().to(x.dtype)
        return F.conv1d(x, weight, padding=1)


SIGNAL_MODULES: dict[str, Callable[[int], torch.nn.Module]] = {
    "conv1d_k5_s2_p2": lambda c: torch.nn.Conv1d(c, 16, 5, stride=2, padding=2),
    "conv1d_k3_dilation2_groups4": lambda c: torch.nn.Conv1d(c, 16, 3, padding=2, dilation=2,
                                                             groups=4),
    "conv1d_tokens": _Tokens,
    "group_norm_per_channel": lambda c: _group_norm(c, c),
    "group_norm_2": lambda c: _group_norm(2, c),
    # wav2vec2's first feature layer: conv, group norm over each channel, GELU
    "conv1d_gn_gelu": lambda c: torch.nn.Sequential(torch.nn.Conv1d(c, 32, 5, stride=2),
                                                    _group_norm(32, 32), torch.nn.GELU()),
    # depthwise 1-D convolutions (note 84), channels a part of a stick and whole sticks
    "conv1d_depthwise_k5_p2": lambda c: torch.nn.Conv1d(c, c, 5, padding=2, groups=c),
    "conv1d_depthwise_s2_multiplier2": lambda c: torch.nn.Conv1d(c, 2 * c, 3, stride=2,
                                                                 groups=c),
    # convolution weights computed from a parameter by shape ops only (design note 86)
    "conv1d_causal_weight_views": _CausalConv,
    "conv1d_weight_permuted_sliced": _ShapedWeightConv,
}


# hybrid-SSM mixers' convolutions over thousands of channels (design note 91): one signal
# row does not fit a window kernel's LX in any dtype, so the signal runs a row per position
WIDE_SIGNALS = {"signal_wide": (1, 2048, 64), "signal_wide_unaligned": (2, 2050, 67)}
WIDE_SIGNAL_MODULES: dict[str, Callable[[int], torch.nn.Module]] = {
    "conv1d_wide_causal_depthwise": _CausalConv,
    "conv1d_wide_depthwise_k5_s2": lambda c: torch.nn.Conv1d(c, c, 5, stride=2, padding=2,
                                                             groups=c),
    "conv1d_wide_dense_k3": lambda c: torch.nn.Conv1d(c, 16, 3, padding=1),
}


def signal_cases() -> list[OpCase]:
    """1-D convolutions and group norm on NCL signals whose channels are a part of a stick
    (`signal`) or whole fp16 sticks (`signal_aligned`); the wide convolutions of
    `WIDE_SIGNAL_MODULES` on `WIDE_SIGNALS`."""
    out = []
    for dtype in DTYPES:
        for signals, modules in ((SIGNALS, SIGNAL_MODULES),
                                 (WIDE_SIGNALS, WIDE_SIGNAL_MODULES)):
            for shape_name, shape in signals.items():
                for name, make in modules.items():
                    out.append(OpCase(name, dtype, shape_name,
                                      lambda make=make, c=shape[1], d=dtype: make(c).to(d),
                                      _randn(shape, dtype)))
    return out


# ---- top-k routing (spyrec/frontend/moe.py, design note 76) ----------------------------------

def _distinct_rows(shape: tuple[int, ...], dtype: torch.dtype
                   ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    """Each row a permutation of distinct multiples of 1/8 (exact in every dtype), so the
    top-k indices do not depend on a tie order."""
    def make(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        rows = torch.stack([torch.randperm(shape[-1], generator=g)
                            for _ in range(max(1, math.prod(shape[:-1])))])
        return ((rows.reshape(shape).to(torch.float32) - shape[-1] / 2) / 8).to(dtype),
    return make


def routing_cases() -> list[OpCase]:
    """topk along the last dim: the values of rows with many ties (small integers), the
    indices of rows of distinct values (eager's tie order on the CPU is its selection
    algorithm's, not lowest index first: design note 76), k = 1 and 4."""
    out: list[OpCase] = []
    for dtype in DTYPES:
        for shape_name in ("aligned", "unaligned", "3d"):
            shape = SHAPES[shape_name]
            for k in (1, 4):
                out.append(OpCase(f"topk{k}_values_ties", dtype, shape_name,
                                  lambda k=k: _Fn(lambda x: torch.topk(x, k).values * 2),
                                  lambda g, s=shape, d=dtype: (
                                      torch.randint(-2, 3, s, generator=g).to(d),)))
                out.append(OpCase(f"topk{k}_indices", dtype, shape_name,
                                  lambda k=k: _Fn(lambda x: torch.topk(x, k).indices),
                                  _distinct_rows(shape, dtype)))
    return out
