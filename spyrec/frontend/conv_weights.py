"""Convolution weights in their device form, with eval-mode batch norm folded in.

On Spyre a 2-D convolution (and a 1-D one, as a 2-D one with 1 x K windows) is im2col
by DMA (`spyre.window_rows`: one column block per tap, each block the input channels padded
to whole sticks) followed by one matmul, so its weight is needed as the [KH*KW*Cb, Cout]
matrix whose row t*Cb + c holds weight[:, c, kh, kw] for tap t = kh*KW + kw (zero rows
where c is stick padding). That is a permutation, a zero padding and a reshape of the
parameter: done here, once, with torch, because op selection sees no weight data. A
grouped convolution gets the dense weight with zeros between its groups, so it is an
ordinary convolution on the device (docs/design.md, note 27, has the trade-off).

A depthwise convolution (groups = input channels; output channel o reads input channel
o // M for a channel multiplier M) never mixes channels, so it is not one matmul: its
weight is the [KH*KW, Cout] matrix whose row t holds weight[:, 0, kh, kw], one
per-channel row per tap (`ConvWeights.operands` names them
tap0, tap1, ...), which op selection multiplies into one window of the image per tap and
sums (docs/design.md, note 84): the weight moves once, the flops are those of the
source program, and a NaN stays in its channel.

A batch norm in eval mode (`_native_batch_norm_legit_no_training`) whose input is a
convolution's only use folds into it: with s = gamma / sqrt(var + eps),

    bn(conv(x, W, b)) = conv(x, W * s[:, None, None, None], (b - mean) * s + beta)

computed in fp32 and rounded once to the weight's dtype. Both are input-independent (see
`fold.py`), so the device never sees the batch norm.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from spyrec.dialects.spyre import window_block_cols

CONV = "aten.convolution.default"
BATCH_NORM = "aten._native_batch_norm_legit_no_training.default"
_ELEMENT = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}


@dataclass
class ConvWeights:
    """The device-form weight and bias of one convolution node."""

    weight: torch.Tensor  # [KH*KW*Cb, Cout]; [KH*KW, Cout] when depthwise
    bias: torch.Tensor | None
    kernel: tuple[int, int]
    batch_norm: torch.fx.Node | None = None
    depthwise: bool = False

    def operands(self) -> list[tuple[str, torch.Tensor]]:
        """The convolution's constant operands by name: `weight` (or, depthwise, one
        per-channel row `tap<t>` per tap) and `bias` if it has one."""
        weights = [(f"tap{t}", row.contiguous()) for t, row in enumerate(self.weight)] \
            if self.depthwise else [("weight", self.weight)]
        return weights + ([("bias", self.bias)] if self.bias is not None else [])


@dataclass
class ConvPlan:
    convs: dict[torch.fx.Node, ConvWeights] = field(default_factory=dict)
    folded_norms: dict[torch.fx.Node, torch.fx.Node] = field(default_factory=dict)
    """batch norm node -> the convolution it is folded into"""


def _name(target: object) -> str:
    return str(target).removeprefix("torch.ops.")


def _arg(node: torch.fx.Node, index: int, name: str, default: object) -> object:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def plan_convolutions(graph: torch.fx.Graph,
                      constant: Callable[[torch.fx.Node], torch.Tensor | None]) -> ConvPlan:
    """Device-form weights of every 1-D and 2-D forward convolution (any groups), and of
    every transposed one whose stride is its kernel, whose weight (and bias) are constants
    (a 1-D one's [Cout, Cin, K] weight as [Cout, Cin, 1, K]); `constant(node)` is a node's
    value if it depends on no user input."""
    plan = ConvPlan()
    for node in graph.nodes:
        if node.op != "call_function" or _name(node.target) != CONV:
            continue
        weight = constant(node.args[1]) if isinstance(node.args[1], torch.fx.Node) else None
        bias_node = _arg(node, 2, "bias", None)
        bias = constant(bias_node) if isinstance(bias_node, torch.fx.Node) else None
        if weight is None or weight.dim() not in (3, 4) or (
                bias_node is not None and bias is None):
            continue  # op selection reports it
        groups = int(_arg(node, 8, "groups", 1))  # type: ignore[call-overload]
        x = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
        if x is None or x.dtype not in _ELEMENT:
            continue
        if _arg(node, 6, "transposed", False):
            if _is_upsampling(node, weight, groups):
                plan.convs[node] = _upsampling_weights(weight, bias, _ELEMENT[x.dtype])
            continue
        w = weight.detach().float()
        if w.dim() == 3:  # a 1-D convolution is the 2-D one with a 1 x K window
            w = w[:, :, None, :]
        b = bias.detach().float() if bias is not None else None
        norm = _folded_norm(node, constant)
        if norm is not None:
            gamma, beta, mean, var, eps = norm[1]
            scale = gamma / torch.sqrt(var + eps)
            w = w * scale[:, None, None, None]
            b = ((b if b is not None else torch.zeros_like(mean)) - mean) * scale + beta
            plan.folded_norms[norm[0]] = node
        kernel = (w.shape[2], w.shape[3])
        if groups > 1 and w.shape[1] == 1:
            # depthwise (any channel multiplier): one row of per-output-channel weights
            # per tap, no zeros, no mixing
            plan.convs[node] = ConvWeights(
                w[:, 0].permute(1, 2, 0).reshape(-1, w.shape[0]).to(weight.dtype).contiguous(),
                None if b is None else b.to(weight.dtype), kernel,
                norm[0] if norm is not None else None, depthwise=True)
            continue
        if groups != 1:  # grouped: the dense weight with zeros between the groups
            per = w.shape[0] // groups
            dense = torch.zeros(w.shape[0], w.shape[1] * groups, *w.shape[2:])
            for g in range(groups):
                dense[g * per:(g + 1) * per, g * w.shape[1]:(g + 1) * w.shape[1]] = \
                    w[g * per:(g + 1) * per]
            w = dense
        cout, cin, kh, kw = w.shape
        block = window_block_cols(cin, kh * kw, _ELEMENT[x.dtype])
        taps = torch.zeros(kh, kw, block, cout)
        taps[:, :, :cin, :] = w.permute(2, 3, 1, 0)
        plan.convs[node] = ConvWeights(
            taps.reshape(kh * kw * block, cout).to(weight.dtype).contiguous(),
            None if b is None else b.to(weight.dtype),
            kernel, norm[0] if norm is not None else None)
    return plan


def _is_upsampling(node: torch.fx.Node, weight: torch.Tensor, groups: int) -> bool:
    """Is `node` a 2-D transposed convolution whose stride is its kernel (no padding, no
    output padding, no dilation, one group): every input pixel makes its own KH x KW block
    of output pixels, nothing overlaps."""
    kernel = list(weight.shape[2:])
    return (weight.dim() == 4 and groups == 1
            and list(_arg(node, 3, "stride", [1, 1])) == kernel  # type: ignore[call-overload]
            and not any(_arg(node, 4, "padding", [0]))  # type: ignore[call-overload]
            and all(d == 1 for d in _arg(node, 5, "dilation", [1]))  # type: ignore[attr-defined]
            and not any(_arg(node, 7, "output_padding", [0])))  # type: ignore[call-overload]


def _upsampling_weights(weight: torch.Tensor, bias: torch.Tensor | None,
                        element: str) -> ConvWeights:
    """A transposed convolution with stride = kernel (`_is_upsampling`) as one matmul of
    each pixel's channels by [Cin, KH*KW*Cb]: column t*Cb + o holds weight[:, o, kh, kw]
    for tap t = kh*KW + kw, Cb the output channels padded to whole sticks (zero columns),
    so the product splits into its taps for free; the bias repeats per tap."""
    cin, cout, kh, kw = weight.shape
    block = window_block_cols(cout, 2, element)  # whole sticks
    taps = torch.zeros(cin, kh, kw, block)
    taps[..., :cout] = weight.detach().float().permute(0, 2, 3, 1)
    tiled = None
    if bias is not None:
        tiled = torch.zeros(kh, kw, block)
        tiled[..., :cout] = bias.detach().float()
        tiled = tiled.reshape(-1).to(weight.dtype)
    return ConvWeights(taps.reshape(cin, kh * kw * block).to(weight.dtype).contiguous(), tiled,
                       (kh, kw))


def _folded_norm(conv: torch.fx.Node, constant: Callable[[torch.fx.Node], torch.Tensor | None]
                 ) -> tuple[torch.fx.Node, tuple[torch.Tensor, ...]] | None:
    """The eval-mode batch norm that is the only user of `conv`, with its constants, if
    its statistics outputs are unused."""
    if len(conv.users) != 1:
        return None
    norm = next(iter(conv.users))
    if norm.op != "call_function" or _name(norm.target) != BATCH_NORM or norm.args[0] is not conv:
        return None
    if any(u.op != "call_function" or u.args[1] != 0 for u in norm.users):
        return None  # the saved mean / invstd are read
    values = []
    channels = conv.meta["val"].shape[1]
    for index in (1, 2, 3, 4):
        arg = norm.args[index]
        if arg is None:
            values.append(torch.ones(channels) if index == 1 else torch.zeros(channels))
            continue
        value = constant(arg) if isinstance(arg, torch.fx.Node) else None
        if value is None:
            return None
        values.append(value.detach().float())
    eps = float(_arg(norm, 6, "eps", 1e-5))  # type: ignore[arg-type]
    return norm, (*values, torch.tensor(eps))
