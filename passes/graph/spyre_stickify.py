"""spyre-stickify: choose the device layout of every tensor.

Expects: legalized `spyre` ops. Guarantees: every tensor value has a layout — on its
producing op as the `spyre.layout` attribute, on function arguments in `arg_attrs` — giving
the stick dimension, the shape padded to whole 128-byte sticks, the device element type and
whether the padding is known to hold zeros.

The row-sticked layout puts the innermost dimension in the stick; a (64, 100) f16 tensor is
stored as 64 rows of 128 elements (two sticks, the last holding 36 zeros). Zero padding is a
dataflow fact: a matmul contracts over whole sticks, so its lhs must have zero padding in K;
ops with f(0) = 0 (relu, gelu, add of zero-padded tensors, matmul) keep it, others (exp,
sigmoid, division) lose it, and a matmul that would read such padding becomes an exact
contraction (a `spyre.batch_matmul` over the K columns alone, its bias added after it). A
product keeps a zero only against a finite value (0 * inf is NaN), so the analysis tracks
whether padding may hold an infinity or NaN (a reciprocal or rsqrt of zero padding, a
product by the immediate inf). Row moves (reshape, permute_rows, expand_rows) keep their
operand's padding; attention's output padding is P @ V's, zero when V's is (its Q K^T
contracts over the valid head dim only, so q and k need none).

    %y = spyre.relu %x : tensor<64x100xf16> -> tensor<64x100xf16>
    // after: {spyre.layout = {device_dtype = "dl16", pad = "zero",
    //                        padded_shape = array<i64: 64, 128>, stick_dim = 1 : i64}}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from spyrec.diagnostics import CompileError
from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.spyre import (
    BINARY_OPS,
    DATA_MOVES,
    ELEMENT_BYTES,
    SCALAR_OPS,
    STICK_BYTES,
    UNARY_OPS,
    AttentionOp,
    BatchMatmulOp,
    CastOp,
    GatherOp,
    MatmulOp,
    ParamOp,
    ReshapeOp,
    ScatterOp,
    WindowRowsOp,
    describe,
)
from spyrec.target import SpyreTarget, round_up
from spyrec.target.isa import DType
from spyrec.target.layout import ELEMENT_DEVICE_DTYPE

_SCALAR_CLASSES = tuple(SCALAR_OPS.values())

# unary functions with f(0) == 0: they keep zero padding zero
ZERO_PRESERVING_UNARY = {"relu", "gelu", "gelu_tanh", "silu", "tanh", "neg", "sqrt", "abs", "erf",
                         "sin"}
# binary functions with f(0, 0) == 0
ZERO_PRESERVING_BINARY = {"add", "sub", "mul", "maximum", "minimum", "keep"}

# the device storage of each element type, by name as the layout attribute spells it
DEVICE_DTYPE = {element: d.name.lower() for element, d in ELEMENT_DEVICE_DTYPE.items()}
DEVICE_ITEMSIZE = {d.name.lower(): d.itemsize for d in DType}


@dataclass(frozen=True)
class Layout:
    """A decoded `spyre.layout` attribute."""

    stick_dim: int
    padded_shape: tuple[int, ...]
    device_dtype: str
    zero_padded: bool

    def to_attr(self) -> DictionaryAttr:
        return DictionaryAttr({
            "stick_dim": IntegerAttr(self.stick_dim, i64),
            "padded_shape": DenseArrayBase.from_list(i64, list(self.padded_shape)),
            "device_dtype": StringAttr(self.device_dtype),
            "pad": StringAttr("zero" if self.zero_padded else "undef"),
        })

    @staticmethod
    def from_attr(attr: DictionaryAttr) -> Layout:
        """The layout of one `spyre.layout` dictionary (checked by `spyre_plan.LAYOUT`)."""
        d = attr.data
        stick_dim, padded, dtype, pad = (d[k] for k in plan.LAYOUT_FIELDS)
        assert isinstance(stick_dim, IntegerAttr) and isinstance(padded, DenseArrayBase)
        assert isinstance(dtype, StringAttr) and isinstance(pad, StringAttr)
        return Layout(stick_dim=stick_dim.value.data,
                      padded_shape=tuple(int(v) for v in padded.get_values()),
                      device_dtype=dtype.data, zero_padded=pad.data == "zero")


def row_sticked(ttype: TensorType, zero_padded: bool, target: SpyreTarget,
                of: Operation | None = None) -> Layout:
    """The default layout: innermost dim in the stick, padded to whole sticks. A value
    without a device format is refused naming `of`, the op that makes it (its node and
    source line)."""
    element = str(ttype.element_type)
    if element not in DEVICE_DTYPE:
        where = "an input of the program"
        if of is not None:
            node, source = (of.attributes.get(k) for k in ("fx_node", "source"))
            where = (f"{getattr(source, 'data', '<unknown>')}: {of.name} (node "
                     f"{getattr(node, 'data', '?')})")
        raise CompileError(
            f"{where}: its result is a {element} tensor, which has no Spyre device format "
            "(booleans live on the device as 0/1 predicates of the ops that compute them); "
            "this is a gap of spyrec's op selection: please report it with this node")
    device = DEVICE_DTYPE[element]
    shape = list(ttype.get_shape()) or [1]
    per_stick = target.elems_per_stick(DEVICE_ITEMSIZE[device])
    shape[-1] = round_up(shape[-1], per_stick)
    return Layout(len(shape) - 1, tuple(shape), device, zero_padded)


def layout_of(value: SSAValue) -> Layout:
    """The layout stickify chose for `value`."""
    if isinstance(value, OpResult):
        layouts = plan.LAYOUT.get(value.owner)  # one per result of a multi-result op
        attr = None if layouts is None else layouts[value.index if len(layouts) > 1 else 0]
    else:
        assert isinstance(value, BlockArgument)
        fn = value.owner.parent_op()
        assert isinstance(fn, func.FuncOp) and fn.arg_attrs is not None
        attr = fn.arg_attrs.data[value.index].data.get(plan.LAYOUT.key)
    if not isinstance(attr, DictionaryAttr):
        raise CompileError(f"value %{value.name_hint} has no layout; run spyre-stickify first")
    return Layout.from_attr(attr)


def _pad_contraction(matmul: MatmulOp, target: SpyreTarget) -> None:
    """Pad the rhs rows (K) to whole lhs sticks: the PT contracts over whole sticks."""
    rhs = matmul.rhs.owner
    k = matmul.lhs.type.get_shape()[1]  # type: ignore[attr-defined]
    layout = layout_of(matmul.lhs)
    k_padded = layout.padded_shape[-1]
    if k_padded == k:
        return
    if not isinstance(rhs, ParamOp):
        raise CompileError(
            f"{describe(matmul)}: K = {k} is not a multiple of the stick ({k_padded - k} "
            "elements short) and the rhs is an activation, whose rows cannot be zero-padded "
            "yet; pad K in the model"
        )
    rl = layout_of(matmul.rhs)
    padded = (k_padded, *rl.padded_shape[1:])
    plan.LAYOUT.set(rhs, (Layout(rl.stick_dim, padded, rl.device_dtype, True).to_attr(),))


def _exact_contraction(matmul: MatmulOp) -> list[Operation]:
    """A matmul whose lhs padding is not zero (a device transpose to a width that is not
    whole sticks, an activation such as a sigmoid gate before a 1x1 convolution) as a
    one-batch `spyre.batch_matmul`: its kernel loads the lhs K columns exactly and the PT
    contracts over those alone, so the padding is never read. A bias becomes a `spyre.add`
    of the bias row after it (the batch matmul has none). Returns the new ops in order."""
    new: list[Operation] = [BatchMatmulOp(matmul.lhs, matmul.rhs, False, matmul.result.type,
                                          source_op=matmul)]
    if matmul.bias is not None:
        new.append(BINARY_OPS["add"](new[0].results[0], matmul.bias, matmul.result.type,
                                     source_op=matmul))
    Rewriter().replace_op(matmul, new)
    return new


@dataclass(frozen=True)
class SpyreStickify(ModulePass):
    """Assign row-sticked device layouts and check the zero-padding invariant."""

    name = "spyre-stickify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = plan.target_of(op)
        for fn in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            if fn.body.blocks.first is None or plan.is_kernel(fn):
                continue  # declarations and KTIR kernels have no graph tensors
            pads: dict[SSAValue, int] = {}
            arg_layouts = []
            for arg in fn.args:
                assert isinstance(arg.type, TensorType)
                # host data is padded with zeros when copied in
                pads[arg] = ZERO
                arg_layouts.append(DictionaryAttr(
                    {plan.LAYOUT.key: row_sticked(arg.type, True, target).to_attr()}))
            fn.arg_attrs = ArrayAttr(arg_layouts)
            for walked in list(fn.walk()):
                if not walked.results or not isinstance(walked.results[0].type, TensorType):
                    continue
                placed = [walked]
                if isinstance(walked, MatmulOp) and pads.get(walked.lhs, ANY) != ZERO:
                    placed = _exact_contraction(walked)
                for inner in placed:
                    pad = _pad_after(inner, pads)
                    for r in inner.results:
                        pads[r] = pad
                    layout = row_sticked(inner.results[0].type, pad == ZERO, target, inner)  # type: ignore[arg-type]
                    plan.LAYOUT.set(inner, (layout.to_attr(),))
            for matmul in [o for o in fn.walk() if isinstance(o, MatmulOp)]:
                _pad_contraction(matmul, target)


# what a tensor's stick padding holds: zeros, finite values, or possibly an infinity or NaN
ZERO, FINITE, ANY = 0, 1, 2
# unary functions that map finite values to finite values (exp: the padding's values are
# what f(0) chains make, far from overflow)
FINITE_UNARY = (ZERO_PRESERVING_UNARY - {"sqrt"}) | {"sigmoid", "exp", "cos"}


def _pad_after(op: Operation, pads: dict[SSAValue, int]) -> int:
    """What the padding of `op`'s results holds, from its operands' (`pads`)."""

    def of(value: SSAValue) -> int:
        return pads.get(value, ANY)

    def worst(values: Sequence[SSAValue]) -> int:
        return max((of(v) for v in values), default=ZERO)

    if isinstance(op, ParamOp):
        return ZERO  # weights are padded with zeros when written into the binary
    if isinstance(op, MatmulOp):
        # SpyreStickify makes a matmul over non-zero padding an exact contraction first
        assert of(op.lhs) == ZERO, describe(op)
        bias = ZERO if op.bias is None else of(op.bias)
        return ZERO if of(op.rhs) == ZERO and bias == ZERO else max(FINITE, of(op.rhs), bias)
    if isinstance(op, (ReshapeOp, CastOp, *DATA_MOVES, WindowRowsOp, GatherOp)):
        return of(op.operands[0])  # rows move, each keeps its padding
    if isinstance(op, ScatterOp):  # rows of the values replace rows of the table
        return max(of(op.table), of(op.values))
    if isinstance(op, BatchMatmulOp):
        if op.transpose_rhs is None:  # lhs @ rhs over rhs's whole padded width
            return ZERO if of(op.rhs) == ZERO else max(FINITE, worst(op.operands))
        # the product has rhs-rows columns; past them the LX tile is not written
        cols = op.result.type.get_shape()[-1]
        size = ELEMENT_BYTES[str(op.result.type.element_type)]
        return ZERO if cols * size % STICK_BYTES == 0 else ANY
    if isinstance(op, AttentionOp):
        # the output is P @ V over V's whole padded width: zero where V's padding is
        return ZERO if of(op.value) == ZERO else ANY
    short = op.name.removeprefix("spyre.")
    if op.name.startswith("spyre.reduce_"):
        return ZERO  # a reduction writes its value and zeros the rest of the stick
    if short in UNARY_OPS:
        before = of(op.operands[0])
        if before == ZERO and short in ZERO_PRESERVING_UNARY:
            return ZERO
        return FINITE if before != ANY and short in FINITE_UNARY else ANY
    if isinstance(op, _SCALAR_CLASSES):
        return _scalar_pad(op, short.removesuffix("_scalar"), of(op.operands[0]))
    if short in BINARY_OPS:
        return _binary_pad(op, short, of)
    return ANY


def _scalar_pad(op: Operation, kind: str, before: int) -> int:
    """The padding of `x op c` (`c op x` when reversed) from x's padding."""
    value = op.value.value.data  # type: ignore[attr-defined]
    reverse = op.reverse is not None  # type: ignore[attr-defined]
    finite = math.isfinite(value)
    if kind == "keep" and reverse:  # keep(c, x): c where x is nonzero, else -0.0
        return ZERO if before == ZERO else FINITE if finite else ANY
    if kind == "keep":  # keep(x, c): x, or -0.0 throughout when c is 0
        return ZERO if value == 0.0 else before
    if before == ANY or not finite:
        return ANY  # NaN or inf in, or 0 * inf, inf - inf, ...
    if kind == "div" and (reverse or value == 0.0):
        return ANY  # c / 0 or x / 0
    if before == ZERO and ((kind == "mul") or (kind == "div")
                           or (kind in ("add", "sub", "maximum", "minimum") and value == 0.0)):
        return ZERO
    return FINITE


def _binary_pad(op: Operation, kind: str, of: Callable[[SSAValue], int]) -> int:
    """The padding of an elementwise binary op. An operand broadcast along the stick (a
    column) puts its values into the padding; they count as finite (a row whose value is
    an infinity is non-finite in its real columns too)."""
    def cols(value: SSAValue) -> int:  # a 0-d tensor is one column
        return (list(value.type.get_shape()) or [1])[-1]  # type: ignore[attr-defined]

    states = []
    for v in op.operands:
        full = cols(v) == cols(op.results[0])
        states.append(of(v) if full else FINITE)  # a column's value, not its padding
    if kind == "keep":  # keep(x, p): x where p is nonzero, else -0.0
        return ZERO if states[1] == ZERO else states[0]
    if kind == "mul" and ZERO in states and ANY not in states:
        return ZERO  # 0 * finite
    if kind == "div":
        return ANY if states[1] == ZERO or ANY in states else (
            ZERO if states[0] == ZERO else FINITE)
    if kind in ZERO_PRESERVING_BINARY and all(s == ZERO for s in states):
        return ZERO
    return ANY if ANY in states else FINITE
