"""spyre-stickify: choose the device layout of every tensor.

Expects: legalized `spyre` ops. Guarantees: every tensor value has a layout — on its
producing op as the `spyre.layout` attribute, on function arguments in `arg_attrs` — giving
the stick dimension, the shape padded to whole 128-byte sticks, the device element type and
whether the padding is known to hold zeros.

The row-sticked layout puts the innermost dimension in the stick; a (64, 100) f16 tensor is
stored as 64 rows of 128 elements (two sticks, the last holding 36 zeros). Zero padding is
a dataflow fact: a matmul contracts over whole sticks, so its lhs must have zero padding in
K; ops with f(0) = 0 (relu, gelu, add of zero-padded tensors, matmul) keep it, others (exp,
sigmoid, division) lose it, and a matmul that would read such padding is rejected with a
message naming the op. Row moves (reshape, permute_rows, expand_rows) keep their operand's
padding; attention's output padding is P @ V's, zero when V's is (its Q K^T contracts over
the valid head dim only, so q and k need none).

    %y = spyre.relu %x : tensor<64x100xf16> -> tensor<64x100xf16>
    // after: {spyre.layout = {device_dtype = "dl16", pad = "zero", padded_shape = array<i64: 64, 128>, stick_dim = 1 : i64}}
"""

from __future__ import annotations

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
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from spyrec.diagnostics import CompileError
from spyrec.dialects.spyre import (
    DATA_MOVES,
    ELEMENT_BYTES,
    STICK_BYTES,
    BINARY_OPS,
    SCALAR_OPS,
    UNARY_OPS,
    AttentionOp,
    BatchMatmulOp,
    CastOp,
    GatherOp,
    MatmulOp,
    ScatterOp,
    ParamOp,
    WindowRowsOp,
    ReshapeOp,
    describe,
)
from spyrec.target import DEFAULT_TARGET, SpyreTarget, round_up

_SCALAR_CLASSES = tuple(SCALAR_OPS.values())

# unary functions with f(0) == 0: they keep zero padding zero
ZERO_PRESERVING_UNARY = {"relu", "gelu", "gelu_tanh", "silu", "tanh", "neg", "sqrt", "abs", "erf",
                         "sin"}
# binary functions with f(0, 0) == 0
ZERO_PRESERVING_BINARY = {"add", "sub", "mul", "maximum", "minimum", "keep"}

DEVICE_DTYPE = {"f16": "dl16", "bf16": "dl16", "f32": "f32", "i32": "i32", "i64": "i32"}
DEVICE_ITEMSIZE = {"dl16": 2, "f32": 4, "i32": 4}


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
    def from_attr(attr: Attribute) -> Layout:
        assert isinstance(attr, DictionaryAttr)
        d = attr.data
        padded = d["padded_shape"]
        assert isinstance(padded, DenseArrayBase)
        return Layout(
            stick_dim=d["stick_dim"].value.data,  # type: ignore[attr-defined]
            padded_shape=tuple(padded.get_values()),  # type: ignore[arg-type]
            device_dtype=d["device_dtype"].data,  # type: ignore[attr-defined]
            zero_padded=d["pad"].data == "zero",  # type: ignore[attr-defined]
        )


def row_sticked(ttype: TensorType, zero_padded: bool, target: SpyreTarget) -> Layout:
    """The default layout: innermost dim in the stick, padded to whole sticks."""
    element = str(ttype.element_type)
    if element not in DEVICE_DTYPE:
        raise CompileError(f"element type {element} has no Spyre device format")
    device = DEVICE_DTYPE[element]
    shape = list(ttype.get_shape()) or [1]
    per_stick = target.elems_per_stick(DEVICE_ITEMSIZE[device])
    shape[-1] = round_up(shape[-1], per_stick)
    return Layout(len(shape) - 1, tuple(shape), device, zero_padded)


def layout_of(value: SSAValue) -> Layout:
    """The layout stickify chose for `value`."""
    owner = value.owner
    if isinstance(owner, Operation):
        attr = owner.attributes.get("spyre.layout")
        if isinstance(attr, ArrayAttr):  # one layout per result of a multi-result op
            attr = attr.data[value.index]
    else:
        fn = owner.parent_op()
        assert isinstance(fn, func.FuncOp) and fn.arg_attrs is not None
        attr = fn.arg_attrs.data[value.index].data.get("spyre.layout")  # type: ignore[attr-defined]
    if attr is None:
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
    rhs.attributes["spyre.layout"] = Layout(rl.stick_dim, padded, rl.device_dtype, True).to_attr()


def _exact_contraction(matmul: MatmulOp) -> BatchMatmulOp:
    """A matmul whose lhs padding is not zero (a device transpose to a width that is not
    whole sticks) as a one-batch `spyre.batch_matmul`: its kernel loads the lhs K columns
    exactly and the PT contracts over those alone, so the padding is never read."""
    new = BatchMatmulOp(matmul.lhs, matmul.rhs, False, matmul.result.type, source_op=matmul)
    Rewriter().replace_op(matmul, new)
    return new


@dataclass(frozen=True)
class SpyreStickify(ModulePass):
    """Assign row-sticked device layouts and check the zero-padding invariant."""

    name = "spyre-stickify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = DEFAULT_TARGET
        for fn in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            if fn.body.blocks.first is None or "grid" in fn.attributes:
                continue  # declarations and KTIR kernels have no graph tensors
            zero: dict[SSAValue, bool] = {}
            arg_layouts = []
            for arg in fn.args:
                assert isinstance(arg.type, TensorType)
                # host data is padded with zeros when copied in
                zero[arg] = True
                arg_layouts.append(DictionaryAttr(
                    {"spyre.layout": row_sticked(arg.type, True, target).to_attr()}))
            fn.arg_attrs = ArrayAttr(arg_layouts)
            for inner in list(fn.walk()):
                if not inner.results or not isinstance(inner.results[0].type, TensorType):
                    continue
                if isinstance(inner, MatmulOp) and not zero.get(inner.lhs, False) \
                        and inner.bias is None:
                    inner = _exact_contraction(inner)
                padded_zero = self._zero_after(inner, zero)
                for r in inner.results:
                    zero[r] = padded_zero
                layout = row_sticked(inner.results[0].type, padded_zero, target)  # type: ignore[arg-type]
                inner.attributes["spyre.layout"] = layout.to_attr()
            for matmul in [o for o in fn.walk() if isinstance(o, MatmulOp)]:
                _pad_contraction(matmul, target)

    @staticmethod
    def _zero_after(op: Operation, zero: dict[SSAValue, bool]) -> bool:
        if isinstance(op, ParamOp):
            return True  # weights are padded with zeros when written into the binary
        if isinstance(op, MatmulOp):
            if not zero.get(op.lhs, False):
                raise CompileError(
                    f"{describe(op)}: the matmul reads K = {op.lhs.type.get_shape()[-1]} "  # type: ignore[attr-defined]
                    "columns padded to whole sticks, but its lhs is produced by an op that "
                    "does not keep the padding zero; pad K to a multiple of the stick "
                    "(64 fp16 / 32 fp32 elements) in the model"
                )
            bias_zero = op.bias is None or zero.get(op.bias, False)
            return zero.get(op.rhs, False) and bias_zero
        if isinstance(op, (ReshapeOp, CastOp, *DATA_MOVES, WindowRowsOp, GatherOp)):
            return zero.get(op.operands[0], False)  # rows move, each keeps its padding
        if isinstance(op, ScatterOp):  # rows of the values replace rows of the table
            return zero.get(op.table, False) and zero.get(op.values, False)
        if isinstance(op, BatchMatmulOp):
            if op.transpose_rhs is None:  # lhs @ rhs over rhs's whole padded width
                return zero.get(op.rhs, False)
            # the product has rhs-rows columns; past them the LX tile is not written
            cols = op.result.type.get_shape()[-1]  # type: ignore[attr-defined]
            size = ELEMENT_BYTES[str(op.result.type.element_type)]  # type: ignore[attr-defined]
            return cols * size % STICK_BYTES == 0
        if isinstance(op, AttentionOp):
            # the output is P @ V over V's whole padded width: zero where V's padding is
            return zero.get(op.value, False)
        short = op.name.removeprefix("spyre.")
        if op.name.startswith("spyre.reduce_"):
            return True  # a reduction writes its value and zeros the rest of the stick
        if short in UNARY_OPS:
            return short in ZERO_PRESERVING_UNARY and zero.get(op.operands[0], False)
        if isinstance(op, _SCALAR_CLASSES):
            value = op.value.value.data  # type: ignore[attr-defined]
            kind = short.removesuffix("_scalar")
            keeps = (kind in ("mul",) or (kind == "div" and op.reverse is None)  # type: ignore[attr-defined]
                     or (kind in ("add", "sub") and value == 0.0))
            return keeps and zero.get(op.operands[0], False)
        if short in BINARY_OPS:
            out_cols = op.results[0].type.get_shape()[-1]  # type: ignore[attr-defined]
            # an operand broadcast along the stick puts its value into the padding
            pads = [zero.get(v, False) and tuple(v.type.get_shape())[-1:] == (out_cols,)  # type: ignore[attr-defined]
                    for v in op.operands]
            if short == "mul":
                return any(pads)
            if short == "div":
                return pads[0]
            return short in ZERO_PRESERVING_BINARY and all(pads)
        return False
