"""Channels-last op selection for convolution, batch norm, group norm and pooling (part of
spyre-legalize).

Images enter as NCHW, but on Spyre the channels belong in the stick: a convolution is a
contraction over channels, and the row-sticked layout contracts over its innermost dim. So
every 4-D value that a convolution, batch norm, group norm or pooling op touches is
selected as [N, H, W, C] (rows n, h, w; channels along the 128-byte stick), and every 3-D
[N, C, L] signal of a 1-D convolution as [N, L, C]:

- `aten.convolution` (2-D, any kernel, stride, padding, dilation and groups): the frontend
  stores its weight as the [KH*KW*Cb, Cout] matrix of its taps (a batch norm that follows
  it folded in, see `spyrec/frontend/conv_weights.py`), so the convolution is
  `spyre.window_rows` (the window rows of every tap, one stick-aligned column block each;
  im2col by DMA with zero padding) and one `spyre.matmul` with the bias; a 1x1 stride-1
  convolution is the matmul alone; a grouped one has the dense weight with zeros between
  its groups (the frontend expands it); a depthwise one (groups = input channels) is no
  matmul but one `spyre.window_rows` per tap times the tap's per-channel weight row,
  summed (`_depthwise`, docs/design.md note 84). A 1-D convolution is the 2-D one on
  [N, 1, L, C] with a 1 x K window; a transposed one whose stride is its kernel is one
  matmul and a row permutation (`_upsample`);
- batch norm in eval mode not folded into a convolution: (x - mean) * rsqrt(var + eps) *
  weight + bias with per-channel rows, which broadcast along the stick;
- group norm: fp32 statistics over the channels moved back into rows
  (`_select_group_norm`, `normalization.group_normalize`);
- `max_pool2d`: the elementwise maximum of one `spyre.window_rows` per tap, padded with the
  lowest finite value (torch pads with -inf; each window holds at least one real pixel);
- `avg_pool2d`, `_adaptive_avg_pool2d` with uniform windows and the mean over H and W
  (global pooling): `spyre.window_rows` and a matmul by a constant [KH*KW*Cb, C] matrix of
  1/(KH*KW) blocks (times a constant per-pixel 1 / count where torch's counts differ:
  count_include_pad=False, the partial windows of ceil_mode);
- ceil_mode pooling: the windows past the padded image read an extra border below and to
  the right (`_Pool`, `_Selection.padded_image`; docs/design.md, note 98);
- elementwise ops (relu, GELU, the residual add, ...) on channels-last values are
  re-created on the channels-last values and selected as usual; a per-channel operand
  ([C, 1]) becomes a row.

Program inputs read only by such ops become channels-last inputs and 4-D outputs
channels-last outputs: the host permutes them when it copies them in and out (the graph's
`spyre.host_perms`), as it pads sticks and rounds to DL16. Views of rows already stored
channels-last move nothing: a flatten after a 1x1 pooling, a vision transformer's patch
tokens (`conv(x).flatten(2).transpose(1, 2)`), tokens into an image or a signal and a
signal's channels as tokens (`_Selection.stored_channels_last`). Any other use of a value
in the other order is a device restickify (an `aten.permute` for op selection to lower),
into the stick for a region op's operand, out of it for a reader outside the region
(docs/design.md, note 75).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from spyrec.dialects.spyre import (
    BINARY_OPS,
    ELEMENT_BYTES,
    SCALAR_OPS,
    STICK_BYTES,
    UNARY_OPS,
    AtenOp,
    CastOp,
    MatmulOp,
    ParamOp,
    PermuteRowsOp,
    ReshapeOp,
    WindowRowsOp,
    describe,
    window_block_cols,
    window_out_size,
)
from spyrec.passes.graph.graph_build import constant, emit, exact_move
from spyrec.passes.graph.graph_build import element as _element
from spyrec.passes.graph.graph_build import fx_name as _fx_name
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.legalize.base import LegalizeRewriter
from spyrec.passes.graph.legalize.movement import permute
from spyrec.passes.graph.legalize.normalization import group_normalize

NHWC = (0, 2, 3, 1)  # device dim i is host dim NHWC[i]
NLC = (0, 2, 1)  # a 1-D convolution's [N, C, L] signal as [N, L, C]
CHANNELS_LAST = {4: NHWC, 3: NLC}

CONV = "aten.convolution.default"
BATCH_NORM = "aten._native_batch_norm_legit_no_training.default"
GROUP_NORM = "aten.native_group_norm.default"
MAX_POOL = ("aten.max_pool2d_with_indices.default", "aten.max_pool2d.default")
AVG_POOL = "aten.avg_pool2d.default"
ADAPTIVE_AVG_POOL = "aten._adaptive_avg_pool2d.default"
MEAN = "aten.mean.dim"
FLOATS = ("f16", "bf16", "f32")
# what max pooling pads with, per element type: below every value the device holds, yet
# finite in the host type and in DL16 (whose largest finite magnitude is about 8.6e9)
LOWEST = {"f16": -65504.0, "bf16": -(2.0**32), "f32": -3.4028234663852886e38}
# elementwise ATen ops whose result keeps zero stick padding when their operands have it
ZERO_KEEPING = {"aten.relu.default", "aten.neg.default", "aten.abs.default",
                "aten.clone.default", "aten.dropout.default", "aten.tanh.default",
                "aten.gelu.default", "aten.silu.default", "aten.mul.Scalar", "aten.div.Scalar"}
ZERO_KEEPING_TENSOR = {"aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor",
                       "aten.maximum.default", "aten.minimum.default"}
FREE_USERS = ("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
              "aten.flatten.using_ints", "aten.squeeze.dim", "aten.squeeze.dims")


class Unsupported(Exception):
    """One op cannot be selected channels-last; the message says why and what to do."""


def _nhwc_type(value: SSAValue) -> TensorType:
    """The channels-last type of an [N, C, H, W] image or an [N, C, L] signal."""
    shape = _shape(value)
    assert isinstance(value.type, TensorType)
    return TensorType(value.type.element_type, [shape[d] for d in CHANNELS_LAST[len(shape)]])


def _ints(op: AtenOp, name: str, default: list[int] | None = None) -> list[int]:
    attr = op.args.data.get(name)
    if attr is None:
        return list(default or [])
    if isinstance(attr, IntegerAttr):
        return [attr.value.data]
    assert isinstance(attr, ArrayAttr)
    return [a.value.data for a in attr.data]


def _pair(values: list[int], default: int) -> tuple[int, int]:
    if not values:
        return default, default
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


def _flag(op: AtenOp, name: str, default: bool = False) -> bool:
    attr = op.args.data.get(name)
    if isinstance(attr, IntegerAttr):
        return bool(attr.value.data)
    return default


def _operand(op: AtenOp, name: str) -> SSAValue | None:
    names = [n.data for n in op.operand_names.data]  # type: ignore[attr-defined]
    return op.operands[names.index(name)] if name in names else None


@dataclass
class _Selection:
    """The channels-last values of one function and the ops they replace."""

    fn: func.FuncOp
    rewriter: LegalizeRewriter
    nhwc: dict[SSAValue, SSAValue] = field(default_factory=dict)
    tainted: set[SSAValue] = field(default_factory=set)  # downstream of a reported failure
    skip: set[AtenOp] = field(default_factory=set)
    padded: dict[tuple[SSAValue, tuple[int, int], float, tuple[int, int]], SSAValue] = \
        field(default_factory=dict)
    inside_pads: dict[tuple[SSAValue, float], SSAValue] = field(default_factory=dict)
    pads: int = 0
    replaced: list[AtenOp] = field(default_factory=list)
    inputs: dict[BlockArgument, BlockArgument] = field(default_factory=dict)
    bypassed: list[AtenOp] = field(default_factory=list)  # views read as stored rows
    restickified: set[SSAValue] = field(default_factory=set)  # channels moved into sticks

    def emit(self, at: AtenOp, new: Operation) -> SSAValue:
        return emit(self.rewriter, at, new)

    def constant(self, at: AtenOp, name: str, values: np.ndarray, like: SSAValue) -> SSAValue:
        """`values` as a constant with the element type of `like`."""
        return constant(at, self.rewriter, name, values,
                        like.type.element_type)  # type: ignore[attr-defined]

    def channels_last(self, value: SSAValue, user: AtenOp) -> SSAValue:
        """The [N, H, W, C] form of an NCHW operand of `user`."""
        if value in self.nhwc:
            return self.nhwc[value]
        if len(_shape(value)) not in CHANNELS_LAST:
            raise Unsupported(f"an operand of shape {_shape(value)} (an [N, C, H, W] image or "
                              "an [N, C, L] signal is expected)")
        if isinstance(value, BlockArgument):
            block = value.block
            new = block.insert_arg(_nhwc_type(value), value.index)
            new.name_hint = value.name_hint
            self.inputs[value] = new
            self.nhwc[value] = new
            return new
        stored = self.stored_channels_last(value)
        if stored is None:  # moving the channels into the stick: a device restickify
            stored = self.restickify(user, value, CHANNELS_LAST[len(_shape(value))])
            self.restickified.add(stored)
        self.nhwc[value] = stored
        return stored

    def restickify(self, at: Operation, value: SSAValue, dims: tuple[int, ...]) -> SSAValue:
        """`value.permute(dims)` as an `aten.permute` before `at`, which op selection then
        lowers like any other (device transposes: `movement.permute`)."""
        shape = _shape(value)
        return self.aten(at, "aten.permute.default", value, {"dims": list(dims)},
                         [shape[d] for d in dims])

    def channel_row(self, at: Operation, value: SSAValue) -> SSAValue:
        """A per-channel operand of an NCHW / NCL elementwise op ([C, 1], [1, C, 1, 1], ...:
        a convolution's bias added by hand) as the [1, C] row that broadcasts along the
        stick: a view as the [C, 1] column and its transpose (folded into a weight)."""
        c = max(_shape(value))
        if _shape(value) != [c, 1]:
            value = self.aten(at, "aten.view.default", value, {"size": [c, 1]}, [c, 1])
        row = self.restickify(at, value, (1, 0))
        if isinstance(value.owner, ParamOp):
            return row  # a weight's transpose is folded: its padding is zero
        # a device transpose leaves the padding undefined: keep(row, ones) zeroes it
        ones = constant(at, self.rewriter, f"{_fx_name(at)}.ones", np.ones(c),
                        value.type.element_type)  # type: ignore[attr-defined]
        return emit(self.rewriter, at, BINARY_OPS["keep"](row, ones, row.type))

    def aten(self, at: Operation, target: str, value: SSAValue,
             ints: dict[str, int | list[int]], shape: list[int]) -> SSAValue:
        """`target(value, **ints)` of result `shape` as a `spyre.aten` before `at`, for op
        selection to lower like any other."""
        ttype = TensorType(value.type.element_type, shape)  # type: ignore[attr-defined]
        args: dict[str, Attribute] = {
            name: IntegerAttr(v, i64) if isinstance(v, int)
            else ArrayAttr([IntegerAttr(d, i64) for d in v]) for name, v in ints.items()}
        attributes = {k: at.attributes[k] for k in ("fx_node", "source") if k in at.attributes}
        new = AtenOp.create(operands=[value], result_types=[ttype], attributes=attributes,
                            properties={"target": StringAttr(target),
                                        "args": DictionaryAttr(args),
                                        "operand_names": ArrayAttr([StringAttr("self")])})
        self.rewriter.insert_op(new, InsertPoint.before(at))
        return new.results[0]

    def stored_channels_last(self, value: SSAValue) -> SSAValue | None:
        """The channels-last form of `value` when it is a view of rows already stored
        channels-last, so no data moves: `t.transpose(1, 2)` of a [N, L, C] `t` (an
        audio encoder's tokens into a 1-D convolution), `t.permute(0, 3, 1, 2)` of an
        [N, H, W, C] `t`, and `t.transpose(1, 2).view(N, C, H, W)` of an [N, H*W, C] `t`
        (a vision transformer's tokens back into an image). The views bypassed are
        erased when nothing else reads them."""
        producer = value.owner
        if not isinstance(producer, AtenOp) or value in self.nhwc:
            return None
        shape = _shape(value)
        source = producer.operands[0] if producer.operands else None
        if source is None or source in self.nhwc:
            return None
        if _swaps_last_two(producer) and len(shape) == 3:
            self.bypassed.append(producer)
            return source
        if producer.target.data == "aten.permute.default" and len(shape) == 4 \
                and [d % 4 for d in _ints(producer, "dims")] == [0, 3, 1, 2]:
            self.bypassed.append(producer)
            return source
        if producer.target.data in FREE_USERS and len(shape) == 4 \
                and isinstance(source.owner, AtenOp) and _swaps_last_two(source.owner):
            tokens = source.owner.operands[0]
            n, c, h, w = shape
            if _shape(tokens) == [n, h * w, c] and tokens not in self.nhwc:
                self.bypassed.extend((producer, source.owner))
                return self.emit(producer, ReshapeOp(tokens, _nhwc_type(value)))
        return None

    def pad_rows(self, at: AtenOp, x: SSAValue, wo: int, value: float) -> SSAValue:
        """A constant [Wo, C] of `value`: what window rows outside the image read."""
        c = _shape(x)[-1]
        self.pads += 1
        return self.constant(at, f"{_fx_name(at)}.pad{self.pads - 1 or ''}",
                             np.full((max(wo, 1), c), value), x)

    def windows(self, at: AtenOp, x: SSAValue, kernel: tuple[int, int],
                stride: tuple[int, int], padding: tuple[int, int], dilation: tuple[int, int],
                taps: list[tuple[int, int]], pad_value: float,
                extra: tuple[int, int] = (0, 0)) -> SSAValue:
        """The window rows of `taps`; `extra` pads the bottom and right edges further (the
        partial windows of ceil_mode pooling)."""
        n, h, w, c = _shape(x)
        ho, wo = (window_out_size(s + e, k, st, p, d) for s, e, k, st, p, d in
                  zip((h, w), extra, kernel, stride, padding, dilation))
        if ho <= 0 or wo <= 0:
            raise Unsupported(f"a {kernel[0]}x{kernel[1]} window on a {h}x{w} image has no "
                              "output pixels")
        if padding != (0, 0) or extra != (0, 0):
            # pad once, then gather windows that never leave the (padded) image: those
            # split over the cores by output rows, with the same DMAs on every core
            x = self.padded_image(at, x, padding, pad_value, extra)
            padding = (0, 0)
        if (x, pad_value) not in self.inside_pads:  # never read: the windows stay inside
            self.inside_pads[(x, pad_value)] = self.pad_rows(at, x, 1, pad_value)
        pad = self.inside_pads[(x, pad_value)]
        cols = len(taps) * window_block_cols(c, len(taps), _element(x))
        ttype = TensorType(x.type.element_type, [n, ho, wo, cols])  # type: ignore[attr-defined]
        return self.emit(at, WindowRowsOp(x, pad, kernel, stride, padding, dilation, taps,
                                          ttype))

    def padded_image(self, at: AtenOp, x: SSAValue, padding: tuple[int, int],
                     value: float, extra: tuple[int, int] = (0, 0)) -> SSAValue:
        """[N, H + 2ph + eh, W + 2pw + ew, C]: `x` inside a border of `value`, `extra` more
        of it below and to the right, made once per image, padding and value. A border
        of p on both sides is a 1x1 window with padding p; an uneven one (p before, p + e
        after) is the single tap (e, e) of an (e+1)x(e+1) window with padding p + e: output
        row o reads input row o + e - (p + e) = o - p, and there are H + 2p + e of them."""
        key = (x, padding, value, extra)
        if key not in self.padded:
            n, h, w, c = _shape(x)
            wp = w + 2 * padding[1] + extra[1]
            ttype = TensorType(x.type.element_type, [n, h + 2 * padding[0] + extra[0], wp, c])  # type: ignore[attr-defined]
            pad = self.pad_rows(at, x, wp, value)
            kernel = (extra[0] + 1, extra[1] + 1)
            border = (padding[0] + extra[0], padding[1] + extra[1])
            self.padded[key] = self.emit(at, WindowRowsOp(
                x, pad, kernel, (1, 1), border, (1, 1), [extra], ttype))
        return self.padded[key]

    def zero_padded(self, at: AtenOp, xs: SSAValue) -> SSAValue:
        """`xs`, with its stick padding made zero if the elementwise op that produced it
        may not keep it so (a scalar add, exp, ...; a restickify): the matmul after the
        windows contracts over whole sticks, so the padding must be zero (docs/design.md,
        note 4). A multiply by a zero-padded row of ones does it (a `keep` after a
        restickify, whose padding may hold anything), fused into the producer's kernel."""
        producer = xs.owner
        while isinstance(producer, AtenOp) and producer.target.data in FREE_USERS:
            producer = producer.operands[0].owner  # a view keeps its source's padding
        if xs not in self.restickified:  # a device transpose leaves its padding undefined
            if not isinstance(producer, AtenOp) or producer.target.data in ZERO_KEEPING:
                return xs
            if len(producer.operands) == 2 and producer.target.data in ZERO_KEEPING_TENSOR \
                    and all(len(_shape(v)) == 4 for v in producer.operands):
                return xs
        ones = self.constant(at, f"{_fx_name(at)}.ones", np.ones(_shape(xs)[-1]), xs)
        # keep(x, ones) is x with -0.0 in the padding whatever it held (even NaN)
        kind = "keep" if xs in self.restickified else "mul"
        return self.emit(at, BINARY_OPS[kind](xs, ones, xs.type))

    def rows_matmul(self, at: AtenOp, lhs: SSAValue, rhs: SSAValue, bias: SSAValue | None,
                    out_c: int) -> SSAValue:
        """[N, Ho, Wo, K] @ [K, out_c] (+ bias) as [N, Ho, Wo, out_c]: rows are pixels."""
        n, ho, wo, k = _shape(lhs)
        element = lhs.type.element_type  # type: ignore[attr-defined]
        flat = self.emit(at, ReshapeOp(lhs, TensorType(element, [n * ho * wo, k])))
        y = self.emit(at, MatmulOp(flat, rhs, bias, TensorType(element, [n * ho * wo, out_c])))
        return self.emit(at, ReshapeOp(y, TensorType(element, [n, ho, wo, out_c])))


def _require_float(op: AtenOp) -> None:
    for v in [*op.operands, *op.results]:
        if _element(v) not in FLOATS:
            raise Unsupported(f"element type {_element(v)} (only f16, bf16, f32 so far)")


def _all_taps(kernel: tuple[int, int]) -> list[tuple[int, int]]:
    return [(a, b) for a in range(kernel[0]) for b in range(kernel[1])]


def _select_conv(op: AtenOp, sel: _Selection) -> SSAValue:
    _require_float(op)
    x, weight, bias = (_operand(op, n) for n in ("input", "weight", "bias"))
    assert x is not None
    if len(_shape(x)) not in CHANNELS_LAST:
        raise Unsupported(f"a {len(_shape(x)) - 2}-D convolution (only 1-D and 2-D "
                          "convolutions, on [N, C, L] signals and [N, C, H, W] images, are "
                          "lowered)")
    if _flag(op, "transposed"):
        if "kernel_size" not in op.args.data or weight is None or len(_shape(x)) != 4:
            raise Unsupported(
                "a transposed convolution other than a 2-D one whose stride is its kernel "
                "(with no padding, output padding, dilation or groups, and a constant "
                "weight) is not lowered")
        return _upsample(op, sel, sel.zero_padded(op, sel.channels_last(x, op)), weight, bias)
    taps = _depthwise_taps(op)
    if "kernel_size" not in op.args.data or (weight is None and not taps):
        raise Unsupported(
            "its weight is not a constant: the frontend stores a convolution's weight as the "
            "matrix of its taps, which needs the weight's data; make it a parameter or buffer")
    kernel = _pair(_ints(op, "kernel_size"), 1)  # the frontend's (1, K) for a 1-D one
    xs = sel.zero_padded(op, sel.channels_last(x, op))
    if len(_shape(x)) == 3:
        xs, (kernel, stride, padding, dilation) = _signal_image(op, sel, xs, kernel[1],
                                                                bool(taps))
    else:
        stride = _pair(_ints(op, "stride"), 1)
        padding = _pair(_ints(op, "padding"), 0)
        dilation = _pair(_ints(op, "dilation"), 1)
    out_c = _shape(op.results[0])[1]
    if weight is None:  # depthwise: the per-tap weight rows (`_depthwise_taps`)
        y = _depthwise(op, sel, xs, taps, bias, (kernel, stride, padding, dilation))
    elif kernel == (1, 1) and stride == (1, 1) and padding == (0, 0):
        y = sel.rows_matmul(op, xs, weight, bias, out_c)  # the pixels are the rows
    else:
        cols = sel.windows(op, xs, kernel, stride, padding, dilation, _all_taps(kernel), 0.0)
        if _shape(weight)[0] != _shape(cols)[-1]:
            raise Unsupported(f"a weight of {_shape(weight)[0]} rows for {_shape(cols)[-1]} "
                              "window columns (the frontend's weight matrix does not match "
                              "the taps)")
        y = sel.rows_matmul(op, cols, weight, bias, out_c)
    if len(_shape(x)) == 3:  # [N, 1, Lo, Cout] or [N, Lo, 1, Cout] is [N, Lo, Cout]
        y = sel.emit(op, ReshapeOp(y, _nhwc_type(op.results[0])))
    return y


def _signal_image(op: AtenOp, sel: _Selection, xs: SSAValue, k: int, depthwise: bool
                  ) -> tuple[SSAValue, tuple[tuple[int, int], ...]]:
    """A 1-D convolution's [N, L, C] signal as an image (the same rows, a free reshape) and
    the 2-D window of its K taps. The image is [N, 1, L, C] with a 1 x K window along W
    when one image row, the whole signal, fits the window kernels' LX: a window kernel
    holds one output row (per tap block) and the border image one padded row three times
    (`kernel_analysis.WindowInfo.shape`), each double-buffered. Otherwise (a Mamba-2 or
    gated-delta mixer's conv over thousands of channels) it is [N, L, 1, C], a row per
    position, with a K x 1 window along H (docs/design.md, note 91). A depthwise
    convolution's window kernels take one tap each, a dense one's all K."""
    n, length, c = _shape(xs)
    s, p, d = (_ints(op, name, [default])[0] for name, default in
               (("stride", 1), ("padding", 0), ("dilation", 1)))
    element, taps = _element(xs), 1 if depthwise else k
    per_tap = window_block_cols(c, taps, element)
    unit = max(3 * (length + 2 * p), window_out_size(length, k, s, p, d) * taps)
    row = unit * -(-per_tap * ELEMENT_BYTES[element] // STICK_BYTES) * STICK_BYTES
    if 2 * row <= sel.rewriter.target.lx_usable_bytes:
        image, window = [n, 1, length, c], ((1, k), (1, s), (0, p), (1, d))
    else:
        image, window = [n, length, 1, c], ((k, 1), (s, 1), (p, 0), (d, 1))
    return sel.emit(op, ReshapeOp(xs, TensorType(xs.type.element_type,  # type: ignore[attr-defined]
                                                 image))), window


def _depthwise_taps(op: AtenOp) -> list[SSAValue]:
    """The per-channel weight rows `tap0`, `tap1`, ... of a depthwise convolution, one per
    tap (`conv_weights`), or [] for any other convolution."""
    names = [n.data for n in op.operand_names.data]  # type: ignore[attr-defined]
    return [op.operands[names.index(f"tap{t}")] for t in range(len(names))
            if f"tap{t}" in names]


def _depthwise(op: AtenOp, sel: _Selection, xs: SSAValue, rows: list[SSAValue],
               bias: SSAValue | None, window: tuple[tuple[int, int], ...]) -> SSAValue:
    """A depthwise convolution: one `spyre.window_rows` per tap (zero padding), each times
    its tap's [Cout] weight row (broadcast along the stick), summed in tap order, plus the
    bias; spyre-fuse makes the chain one kernel. Channel c of the result reads only
    channel c of the image, so nothing crosses channels (a NaN stays in its own), and the
    weight moves once (docs/design.md, note 84). With a channel multiplier M the image's
    channels are first repeated M times each, a column map exact for NaN and infinities
    (`exact_move`)."""
    kernel, stride, padding, dilation = window
    c, out_c = _shape(xs)[-1], _shape(rows[0])[0]
    if out_c != c:  # channel multiplier M: input channel o // M into output channel o
        repeat = np.repeat(np.eye(c), out_c // c, axis=1)
        copies = sel.constant(op, f"{_fx_name(op)}.repeat", repeat, xs)
        xs = exact_move(op, sel.rewriter, xs,
                        lambda value: sel.rows_matmul(op, value, copies, None, out_c), repeat)
    views = [sel.windows(op, xs, kernel, stride, padding, dilation, [tap], 0.0)
             for tap in _all_taps(kernel)]
    if len(views) != len(rows):
        raise Unsupported(f"{len(rows)} weight rows for a {kernel[0]}x{kernel[1]} window (the "
                          "frontend's depthwise weight does not match the taps)")
    y = sel.emit(op, BINARY_OPS["mul"](views[0], rows[0], views[0].type))
    for view, row in zip(views[1:], rows[1:]):
        term = sel.emit(op, BINARY_OPS["mul"](view, row, view.type))
        y = sel.emit(op, BINARY_OPS["add"](y, term, view.type))
    if bias is not None:
        y = sel.emit(op, BINARY_OPS["add"](y, bias, y.type))
    return y


def _upsample(op: AtenOp, sel: _Selection, xs: SSAValue, weight: SSAValue,
              bias: SSAValue | None) -> SSAValue:
    """A transposed convolution with stride = kernel: each pixel's channels times the
    frontend's [Cin, KH*KW*Cb] matrix give its KH x KW block of output pixels, one
    stick-aligned block per tap (a free split), rows moved to [N, H, KH, W, KW] (a row
    permutation) and merged into [N, H*KH, W*KW]; the stick padding blocks dropped by a
    slice of the innermost dim when Cout is not whole sticks."""
    n, h, w, _ = _shape(xs)
    kh, kw = _pair(_ints(op, "kernel_size"), 1)
    cols = _shape(weight)[1]
    block = cols // (kh * kw)
    y = sel.rows_matmul(op, xs, weight, bias, cols)
    element = xs.type.element_type  # type: ignore[attr-defined]
    y = sel.emit(op, ReshapeOp(y, TensorType(element, [n, h, w, kh, kw, block])))
    y = sel.emit(op, PermuteRowsOp(y, [0, 1, 3, 2, 4, 5],
                                   TensorType(element, [n, h, kh, w, kw, block])))
    y = sel.emit(op, ReshapeOp(y, TensorType(element, [n, h * kh, w * kw, block])))
    out = _nhwc_type(op.results[0])
    if block == out.get_shape()[-1]:
        return y
    return sel.aten(op, "aten.slice.Tensor", y, {"dim": 3, "start": 0, "end": out.get_shape()[-1]},
                    list(out.get_shape()))


def _select_batch_norm(op: AtenOp, sel: _Selection) -> SSAValue:
    _require_float(op)
    if any(r.uses for r in op.results[1:]):
        raise Unsupported("its saved mean or invstd outputs are used (training-mode batch "
                          "norm is not lowered; export the model in eval mode)")
    x = _operand(op, "input")
    mean, var = _operand(op, "running_mean"), _operand(op, "running_var")
    assert x is not None and mean is not None and var is not None
    xs = sel.channels_last(x, op)
    eps = op.args.data.get("eps")
    eps_value = float(eps.value.data) if eps is not None else 1e-5  # type: ignore[attr-defined]
    shifted = sel.emit(op, SCALAR_OPS["add"](var, eps_value, var.type))
    scale = sel.emit(op, UNARY_OPS["rsqrt"](shifted, shifted.type))
    weight, bias = _operand(op, "weight"), _operand(op, "bias")
    if weight is not None:
        scale = sel.emit(op, BINARY_OPS["mul"](scale, weight, scale.type))
    y = sel.emit(op, BINARY_OPS["sub"](xs, mean, xs.type))
    y = sel.emit(op, BINARY_OPS["mul"](y, scale, xs.type))
    if bias is not None:
        y = sel.emit(op, BINARY_OPS["add"](y, bias, xs.type))
    return y


def _select_group_norm(op: AtenOp, sel: _Selection) -> SSAValue:
    """Group norm on a channels-last image or signal: its channels move back into rows
    (one device transpose of [N, S, C], S the pixels), `group_normalize` makes the fp32
    statistics per row group, the channels return to the stick, and the per-channel
    weight and bias broadcast along it as batch norm's do; rounded once to the output
    type, as torch does."""
    _require_float(op)
    if any(r.uses for r in op.results[1:]):
        raise Unsupported("its mean or rstd outputs are used (only the normalized output is "
                          "lowered)")
    x = _operand(op, "input")
    assert x is not None
    groups = _ints(op, "group")[0]
    eps = op.args.data.get("eps")
    eps_value = float(eps.value.data) if eps is not None else 1e-5  # type: ignore[attr-defined]
    xs = sel.channels_last(x, op)
    n, c = _shape(x)[:2]
    size = _shape(xs)[1] * (_shape(xs)[2] if len(_shape(xs)) == 4 else 1)
    rows = sel.emit(op, ReshapeOp(xs, TensorType(xs.type.element_type,  # type: ignore[attr-defined]
                                                 [n, size, c])))
    if _element(rows) != "f32":
        rows = sel.emit(op, CastOp(rows, TensorType(f32, [n, size, c])))
    y = group_normalize(op, sel.rewriter, permute(op, sel.rewriter, rows, [0, 2, 1]), groups,
                        eps_value)
    y = permute(op, sel.rewriter, y, [0, 2, 1])
    # the transposes leave the stick padding undefined: keep(y, ones) zeroes it
    ones = sel.constant(op, f"{_fx_name(op)}.ones", np.ones(c), y)
    y = sel.emit(op, BINARY_OPS["keep"](y, ones, y.type))
    for name, kind in (("weight", "mul"), ("bias", "add")):
        param = _operand(op, name)
        if param is not None:
            if _element(param) != "f32":
                param = sel.emit(op, CastOp(param, TensorType(f32, [c])))
            y = sel.emit(op, BINARY_OPS[kind](y, param, y.type))
    out = _nhwc_type(op.results[0])
    if _element(y) != _element(xs):
        y = sel.emit(op, CastOp(y, TensorType(out.element_type, [n, size, c])))
    return sel.emit(op, ReshapeOp(y, out))


@dataclass(frozen=True)
class _Pool:
    """A pooling op's windows: kernel, stride and padding per spatial dim, the extra pad
    below and to the right that ceil_mode's partial windows at the edge read, and the
    output size."""

    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    extra: tuple[int, int]
    out: tuple[int, int]

    def counts(self, sizes: tuple[int, int], include_pad: bool) -> list[list[int]]:
        """Per dim, the pixels torch's divisor counts in each window: those inside the
        padded image [-p, size + p) (count_include_pad) or inside the image [0, size);
        a ceil_mode window at the edge is cut at that bound."""
        result = []
        for size, k, st, p, out in zip(sizes, self.kernel, self.stride, self.padding,
                                       self.out):
            bound = p if include_pad else 0
            result.append([min(o * st - p + k, size + bound) - max(o * st - p, -bound)
                           for o in range(out)])
        return result


def _pool_args(op: AtenOp, dilation: tuple[int, int] = (1, 1)) -> _Pool:
    kernel = _pair(_ints(op, "kernel_size"), 1)
    stride = _pair(_ints(op, "stride"), 0)
    if stride == (0, 0):
        stride = kernel  # torch: an empty stride is the kernel size
    padding = _pair(_ints(op, "padding"), 0)
    sizes = _shape(op.operands[0])[-2:]
    if not _flag(op, "ceil_mode"):
        out = tuple(window_out_size(s, k, st, p, d) for s, k, st, p, d in
                    zip(sizes, kernel, stride, padding, dilation))
        return _Pool(kernel, stride, padding, (0, 0), out)  # type: ignore[arg-type]
    # ceil_mode: torch rounds the output size up, but drops a last window that would
    # start in the right padding; the windows past the padded image read extra padding
    out, extra, clipped = [], [], []
    for s, k, st, p, d in zip(sizes, kernel, stride, padding, dilation):
        span = d * (k - 1) + 1
        o = -(-(s + 2 * p - span) // st) + 1
        if (o - 1) * st >= s + p:
            o -= 1
        reach = (o - 1) * st + span
        # one window larger than the padded image (EfficientNet's final pooling): the same
        # window cut to the image's size reads the same pixels
        cut = o == 1 and d == 1 and reach > s + 2 * p
        out.append(o)
        extra.append(0 if cut else max(0, reach - (s + 2 * p)))
        clipped.append(s + 2 * p if cut else k)
    return _Pool(_pair(clipped, 1), stride, padding, _pair(extra, 0), _pair(out, 1))


def _select_max_pool(op: AtenOp, sel: _Selection) -> SSAValue:
    for v in (op.operands[0], op.results[0]):  # the indices output (i64) is checked below
        if _element(v) not in FLOATS:
            raise Unsupported(f"element type {_element(v)} (only f16, bf16, f32 so far)")
    if len(op.results) > 1 and op.results[1].uses:
        raise Unsupported("its indices output is used (only the pooled values are lowered)")
    x = op.operands[0]
    dilation = _pair(_ints(op, "dilation"), 1)
    pool = _pool_args(op, dilation)
    xs = sel.channels_last(x, op)
    lowest = LOWEST[_element(xs)]
    # all windows first, then the maximum chain: spyre-fuse makes the chain one kernel.
    # Every window, a partial one of ceil_mode too, holds at least one pixel of the image
    views = [sel.windows(op, xs, pool.kernel, pool.stride, pool.padding, dilation, [tap],
                         lowest, pool.extra)
             for tap in _all_taps(pool.kernel)]
    result = views[0]
    for view in views[1:]:
        result = sel.emit(op, BINARY_OPS["maximum"](result, view, view.type))
    return result


def _average(op: AtenOp, sel: _Selection, xs: SSAValue, pool: _Pool, divisor: int
             ) -> SSAValue:
    """The windows of every tap, then a matmul by blocks of identity / divisor."""
    xs = sel.zero_padded(op, xs)
    c = _shape(xs)[-1]
    taps = _all_taps(pool.kernel)
    cols = sel.windows(op, xs, pool.kernel, pool.stride, pool.padding, (1, 1), taps, 0.0,
                       pool.extra)
    block = window_block_cols(c, len(taps), _element(xs))
    matrix = np.zeros((len(taps) * block, c))
    for t in range(len(taps)):
        matrix[t * block + np.arange(c), np.arange(c)] = 1.0 / divisor
    average = sel.constant(op, f"{_fx_name(op)}.average", matrix, xs)
    return exact_move(op, sel.rewriter, cols,
                      lambda value: sel.rows_matmul(op, value, average, None, c), matrix)


def _uniform(kernel: tuple[int, int], stride: tuple[int, int]) -> _Pool:
    return _Pool(kernel, stride, (0, 0), (0, 0), (0, 0))


def _select_avg_pool(op: AtenOp, sel: _Selection) -> SSAValue:
    _require_float(op)
    pool = _pool_args(op)
    divisor = _ints(op, "divisor_override")
    xs = sel.channels_last(op.operands[0], op)
    sizes = (_shape(xs)[1], _shape(xs)[2])
    counts = pool.counts(sizes, _flag(op, "count_include_pad", True))
    if divisor or all(n == k for ns, k in zip(counts, pool.kernel) for n in ns):
        return _average(op, sel, xs, pool, divisor[0] if divisor else
                        pool.kernel[0] * pool.kernel[1])
    # windows of different counts (count_include_pad=False as PoolFormer, partial windows
    # of ceil_mode): the window sums times 1 / the pixels torch counts in each window, a
    # constant [N, Ho, Wo, 1] column
    total = _average(op, sel, xs, pool, 1)
    scale = np.broadcast_to(1.0 / np.outer(counts[0], counts[1])[None, :, :, None],
                            [*_shape(total)[:3], 1])
    factor = sel.constant(op, f"{_fx_name(op)}.divisor", scale, xs)
    return sel.emit(op, BINARY_OPS["mul"](total, factor, total.type))


def _select_adaptive_avg_pool(op: AtenOp, sel: _Selection) -> SSAValue:
    _require_float(op)
    x = op.operands[0]
    _, _, h, w = _shape(x)
    oh, ow = _shape(op.results[0])[-2:]
    if h % oh or w % ow:
        raise Unsupported(
            f"output size {oh}x{ow} of a {h}x{w} image (windows of different sizes are not "
            "lowered; choose an output size that divides the input)")
    if (oh, ow) == (1, 1):
        return _global_average(op, sel, sel.channels_last(x, op))
    kernel = (h // oh, w // ow)
    return _average(op, sel, sel.channels_last(x, op), _uniform(kernel, kernel),
                    kernel[0] * kernel[1])


def _is_spatial_mean(op: AtenOp) -> bool:
    if op.target.data != MEAN or len(_shape(op.operands[0])) != 4:
        return False
    dims = sorted(d % 4 for d in _ints(op, "dim"))
    return dims == [2, 3]


def _global_average(op: AtenOp, sel: _Selection, xs: SSAValue) -> SSAValue:
    """The mean over H and W as [N, 1, 1, C]. When the N*H*W pixels are whole sticks it is
    one matmul, a constant [N, N*H*W] averaging matrix times the image's rows (no window
    kernel); otherwise the windows and a block matrix (`_average`)."""
    n, h, w, c = _shape(xs)
    element = xs.type.element_type  # type: ignore[attr-defined]
    per_stick = STICK_BYTES // ELEMENT_BYTES[_element(xs)]
    if (n * h * w) % per_stick:  # the image would be the matmul's rhs: its K rows unpadded
        return _average(op, sel, xs, _uniform((h, w), (h, w)), h * w)
    matrix = np.kron(np.eye(n), np.full((1, h * w), 1.0 / (h * w)))
    rows = sel.emit(op, ReshapeOp(xs, TensorType(element, [n * h * w, c])))
    average = sel.constant(op, f"{_fx_name(op)}.average", matrix, xs)
    mean = exact_move(op, sel.rewriter, rows, lambda value: sel.emit(
        op, MatmulOp(average, value, None, TensorType(element, [n, c]))), matrix)
    return sel.emit(op, ReshapeOp(mean, TensorType(element, [n, 1, 1, c])))


def _select_mean(op: AtenOp, sel: _Selection) -> SSAValue:
    _require_float(op)
    return _global_average(op, sel, sel.channels_last(op.operands[0], op))


SELECTORS = {
    CONV: _select_conv,
    GROUP_NORM: _select_group_norm,
    BATCH_NORM: _select_batch_norm,
    **dict.fromkeys(MAX_POOL, _select_max_pool),
    AVG_POOL: _select_avg_pool,
    ADAPTIVE_AVG_POOL: _select_adaptive_avg_pool,
    MEAN: _select_mean,
}


def _is_anchor(op: AtenOp) -> bool:
    target = op.target.data
    return target in SELECTORS and (target != MEAN or _is_spatial_mean(op))


def _elementwise_in_region(op: AtenOp, sel: _Selection, elementwise: set[str],
                           images: set[SSAValue]) -> bool:
    if op.target.data not in elementwise or len(op.results) != 1:
        return False
    rank = len(_shape(op.results[0]))
    return (rank == 4 and any(v in images for v in op.operands)) or (
        rank in CHANNELS_LAST and any(v in sel.nhwc for v in op.operands))


def _image_inputs(fn: func.FuncOp, elementwise: set[str]) -> set[SSAValue]:
    """4-D program inputs read only by convolution, batch norm, pooling and elementwise
    ops: an input normalisation (x - mean) / std in front of the first convolution then
    runs channels-last too, instead of leaving the image in NCHW order."""
    out: set[SSAValue] = set()
    for arg in fn.body.block.args:
        if len(_shape(arg)) != 4 or not arg.uses:
            continue
        users = [u.operation for u in arg.uses]
        if all(isinstance(u, AtenOp) and (_is_anchor(u) or u.target.data in elementwise)
               for u in users):
            out.add(arg)
    return out


def _recreate(op: AtenOp, sel: _Selection) -> SSAValue:
    """The elementwise op on the channels-last forms of its operands."""
    operands = []
    out = _shape(op.results[0])
    for v in op.operands:
        shape = _shape(v)
        full = [1] * (len(out) - len(shape)) + shape  # numpy broadcasting's leading ones
        if len(shape) == len(out) and (v in sel.nhwc or isinstance(v, BlockArgument)):
            operands.append(sel.channels_last(v, op))
        elif all(d == 1 for d in shape):
            operands.append(v)  # a one-element tensor broadcasts in any layout
        elif full[1] == out[1] and all(d == 1 for i, d in enumerate(full) if i != 1):
            operands.append(sel.channel_row(op, v))
        elif len(shape) == len(out):
            operands.append(sel.channels_last(v, op))
        else:
            raise Unsupported(f"an operand of shape {shape} broadcast against an NCHW image or "
                              "NCL signal (only operands of the same rank, per-channel ones "
                              "and one-element tensors are lowered channels-last)")
    new = AtenOp.create(operands=operands, result_types=[_nhwc_type(op.results[0])],
                        properties=dict(op.properties), attributes=dict(op.attributes))
    return sel.emit(op, new)


def select_channels_last(module: ModuleOp, rewriter: LegalizeRewriter, elementwise: set[str],
                         failures: list[str]) -> set[AtenOp]:
    """Select every convolution, batch norm and pooling op channels-last (see the module
    docstring); elementwise ops (`elementwise`: ATen targets) between them follow. Failures
    are appended to `failures`, one per op, naming the node; the ops returned are left for
    the error (a failed op and the region ops after it) and must not be selected again."""
    skip: set[AtenOp] = set()
    for fn in [o for o in module.walk() if isinstance(o, func.FuncOp)]:
        if fn.body.blocks.first is None:
            continue
        atens = [o for o in fn.body.block.ops if isinstance(o, AtenOp)]
        if not any(_is_anchor(a) for a in atens):
            continue
        sel = _Selection(fn, rewriter)
        images = _image_inputs(fn, elementwise)
        for aten in atens:
            if any(v in sel.tainted for v in aten.operands):
                sel.tainted.update(aten.results)
                if _is_anchor(aten) or aten.target.data in elementwise:
                    sel.skip.add(aten)  # the failure upstream is what to fix
                continue
            if aten.target.data == MEAN and aten.operands[0] not in sel.nhwc \
                    and aten.operands[0] not in images:
                continue  # a mean of an NCHW value: op selection's reductions take it
            try:
                if _is_anchor(aten):
                    sel.nhwc[aten.results[0]] = SELECTORS[aten.target.data](aten, sel)
                elif _elementwise_in_region(aten, sel, elementwise, images):
                    sel.nhwc[aten.results[0]] = _recreate(aten, sel)
                else:
                    continue
            except Unsupported as exc:
                failures.append(f"{describe(aten)}: {exc}")
                sel.skip.add(aten)
                sel.tainted.update(aten.results)
                continue
            sel.replaced.append(aten)
        _leave_region(sel)
        skip |= sel.skip
    return skip


def _leave_region(sel: _Selection) -> None:
    """Give the uses outside the region their values: a free reshape for a flatten after a
    1x1 pooling, a channels-last program output otherwise; erase the replaced ops."""
    replaced = set(sel.replaced)
    fn = sel.fn
    block = fn.body.block
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    names_attr = fn.attributes.get("spyre.output_names")
    names = [n.data for n in names_attr.data] if isinstance(names_attr, ArrayAttr) else []
    perms: dict[str, Attribute] = {}
    old_perms = fn.attributes.get("spyre.host_perms")
    if isinstance(old_perms, DictionaryAttr):
        perms.update(old_perms.data)
    nchw: dict[SSAValue, SSAValue] = {}  # values read in NCHW order outside the region
    host_perm = {rank: DenseArrayBase.from_list(i64, list(perm))
                 for rank, perm in CHANNELS_LAST.items()}
    for old, new in list(sel.nhwc.items()):
        if old.owner not in replaced:
            continue  # an input, a view read as stored or a restickified NCHW value: kept
        if isinstance(old.owner, AtenOp) and _is_anchor(old.owner) \
                and old.owner.target.data == MEAN \
                and len(_shape(old)) == 2:
            # mean over H and W without keepdim: [N, 1, 1, C] is [N, C]
            flat = sel.emit(old.owner, ReshapeOp(new, old.type))
            old.replace_all_uses_with(flat)
            continue
        for use in list(old.uses):
            user = use.operation
            if user in replaced:
                continue
            if isinstance(user, func.ReturnOp):
                user.operands[use.index] = new
                if use.index < len(names):
                    perms[names[use.index]] = host_perm[len(_shape(new))]
                continue
            if isinstance(user, AtenOp) and len(_shape(old)) == 3 and _swaps_last_two(user):
                # [N, C, L] -> [N, L, C]: the channels-last rows as they are stored
                user.results[0].replace_all_uses_with(new)
                replaced.add(user)
                sel.replaced.append(user)
                continue
            if isinstance(user, AtenOp) and len(_shape(new)) == 4 and _free_flatten(user, new):
                flat = sel.emit(user, ReshapeOp(new, user.results[0].type))
                user.results[0].replace_all_uses_with(flat)
                replaced.add(user)
                sel.replaced.append(user)
                continue
            tokens = _patch_tokens(user, new) if isinstance(user, AtenOp) \
                and len(_shape(new)) == 4 else None
            if tokens is not None:  # flatten(2).transpose(1, 2): the pixels as tokens
                assert isinstance(user, AtenOp)
                rows = sel.emit(tokens, ReshapeOp(new, tokens.results[0].type))
                tokens.results[0].replace_all_uses_with(rows)
                replaced.update((user, tokens))
                sel.replaced.extend((user, tokens))
                continue
            # any other reader takes the NCHW order back: a device restickify, made once
            if old not in nchw:
                perm = CHANNELS_LAST[len(_shape(new))]
                nchw[old] = sel.restickify(old.owner, new,  # type: ignore[arg-type]
                                           tuple(perm.index(d) for d in range(len(perm))))
            user.operands[use.index] = nchw[old]
    for aten in reversed(sel.replaced):
        if any(r.uses for r in aten.results):
            sel.skip.add(aten)  # a use of it was reported above; it stays for the listing
            continue
        aten.detach()
        aten.erase()
    for view in reversed(sel.bypassed):
        if not any(r.uses for r in view.results):
            view.detach()
            view.erase()
    for old, new in sel.inputs.items():
        if old.uses:  # read in NCHW order too: the channels-last input, restickified
            first = block.first_op
            assert first is not None
            perm = CHANNELS_LAST[len(_shape(new))]
            old.replace_all_uses_with(sel.restickify(
                first, new, tuple(perm.index(d) for d in range(len(perm)))))
        perms[new.name_hint or f"input{new.index}"] = host_perm[len(_shape(new))]
        block.erase_arg(old)
    if perms:
        fn.attributes["spyre.host_perms"] = DictionaryAttr(perms)
    fn.function_type = FunctionType.from_lists([a.type for a in block.args],
                                               [v.type for v in ret.operands])


def _swaps_last_two(op: AtenOp) -> bool:
    """Is `op` a transpose of the last two dims of a 3-D value?"""
    if len(_shape(op.results[0])) != 3:
        return False
    if op.target.data == "aten.transpose.int":
        return sorted(d % 3 for d in (*_ints(op, "dim0"), *_ints(op, "dim1"))) == [1, 2]
    return op.target.data == "aten.permute.default" and \
        [d % 3 for d in _ints(op, "dims")] == [0, 2, 1]


def _patch_tokens(user: AtenOp, value: SSAValue) -> AtenOp | None:
    """The transpose after `user` if `user` flattens an [N, C, H, W] image to
    [N, C, H*W] and its only user swaps the last two dims (a vision transformer's patch
    embedding: `conv(x).flatten(2).transpose(1, 2)`): [N, H*W, C] is the channels-last
    image's rows as they are stored."""
    if user.target.data not in FREE_USERS or len(list(user.results[0].uses)) != 1:
        return None
    n, h, w, c = _shape(value)
    if _shape(user.results[0]) != [n, c, h * w]:
        return None
    swap = next(iter(user.results[0].uses)).operation
    if not isinstance(swap, AtenOp) or _shape(swap.results[0]) != [n, h * w, c]:
        return None
    return swap if _swaps_last_two(swap) else None


def _free_flatten(user: AtenOp, value: SSAValue) -> bool:
    """Is `user` a reshape of an [N, C, 1, 1] image to [N, C] (or [N, C, 1])? Then the
    channels-last [N, 1, 1, C] is the same rows."""
    if user.target.data not in FREE_USERS:
        return False
    n, h, w, c = _shape(value)
    out = _shape(user.results[0])
    return h == 1 and w == 1 and out[:1] == [n] and out[-1] == c and \
        all(d == 1 for d in out[1:-1])
