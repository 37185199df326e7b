"""The `spyre` graph dialect: whole-tensor ops as the Spyre back end implements them.

The frontend imports a torch.export graph as `spyre.aten` ops (one per FX node, carrying the
ATen target, its non-tensor arguments, the FX node name and the torch source line);
`spyre-legalize` selects a Spyre op for each (`spyre.matmul`, `spyre.relu`, `spyre.add`, ...),
`spyre-fuse` groups them into `spyre.kernel` regions, and `convert-spyre-to-ktir` replaces
each kernel by a KTIR function and a `spyre.launch` of it.

Every op derived from an FX node keeps `fx_node` and `source` attributes so any later
diagnostic can name the node and the line of the model it came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from spyrec.dialects import spyre_plan as plan
from spyrec.target.layout import STICK_BYTES


def _provenance(op: Operation, source_op: Operation | None) -> None:
    """Copy the FX node name and source line of `source_op` onto `op`."""
    if source_op is None:
        return
    for key in ("fx_node", "source"):
        if key in source_op.attributes:
            op.attributes[key] = source_op.attributes[key]


def describe(op: Operation) -> str:
    """`model.py:42: aten.addmm.default (node addmm_1)` style name of an op for diagnostics."""
    source = op.attributes.get("source")
    node = op.attributes.get("fx_node")
    target = op.properties.get("target")
    what = target.data if isinstance(target, StringAttr) else op.name
    text = what
    if isinstance(node, StringAttr):
        text += f" (node {node.data})"
    if isinstance(source, StringAttr) and source.data:
        text = f"{source.data}: {text}"
    return text


@irdl_op_definition
class ParamOp(IRDLOperation):
    """A parameter, buffer or constant of the exported program, by name.

    The data lives beside the IR (the driver's weight table, stored in the .spyre). An
    optional `permutation` says the value is the stored tensor with its dims permuted, so
    op selection can fold a transpose of a weight into the weight itself. A constant the
    compiler makes itself (a column-selection matrix) carries its data in `value`.

        %w = spyre.param {param_name = "fc1.weight", permutation = array<i64: 1, 0>}
               : tensor<256x100xf16>
        %s = spyre.param {param_name = "cat.columns", value = dense<...> : tensor<64x64xf32>}
               : tensor<64x64xf32>
    """

    name = "spyre.param"
    param_name = prop_def(StringAttr)
    permutation = opt_prop_def(DenseArrayBase)
    value = opt_prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self, param_name: str, result_type: TensorType,
        permutation: Sequence[int] | None = None,
        value: DenseIntOrFPElementsAttr | None = None,
    ):
        props: dict[str, Attribute] = {"param_name": StringAttr(param_name)}
        if permutation is not None:
            props["permutation"] = DenseArrayBase.from_list(i64, list(permutation))
        if value is not None:
            props["value"] = value
        super().__init__(properties=props, result_types=[result_type])

    def verify_(self) -> None:
        if self.value is not None and self.value.type != self.result.type:
            raise VerifyException(f"value of type {self.value.type} for a result of type "
                                  f"{self.result.type}")

    @property
    def perm(self) -> tuple[int, ...] | None:
        return None if self.permutation is None else tuple(int_values(self.permutation))


@irdl_op_definition
class AtenOp(IRDLOperation):
    """An imported ATen op, before op selection.

    `target` is the ATen overload, `args` its non-tensor arguments by schema name, and
    `operand_names` the schema name of each tensor operand.

        %y = spyre.aten "aten.relu.default"(%x) {args = {}, operand_names = ["self"]}
               : (tensor<64x256xf16>) -> tensor<64x256xf16>
    """

    name = "spyre.aten"
    target = prop_def(StringAttr)
    args = prop_def(DictionaryAttr)
    operand_names = prop_def(Attribute)
    inputs = var_operand_def()
    outputs = var_result_def()
    assembly_format = "$target `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)"
    irdl_options = (ParsePropInAttrDict(),)


class _OneInputOp(IRDLOperation):
    """Base of ops with one tensor operand and one tensor result, printed the same way."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute, source_op: Operation | None = None):
        super().__init__(operands=[input], result_types=[result_type])
        _provenance(self, source_op)


class _UnaryOp(_OneInputOp):
    """Base of elementwise ops with one tensor operand."""

    def verify_(self) -> None:
        _check_same_shape(self, self.input.type, self.result.type)


class _BinaryOp(IRDLOperation):
    """Base of elementwise ops with two tensor operands, broadcast numpy-style."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def __init__(
        self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute,
        source_op: Operation | None = None,
    ):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])
        _provenance(self, source_op)

    def verify_(self) -> None:
        out = self.result.type
        assert isinstance(out, TensorType)
        for operand in (self.lhs, self.rhs):
            shape = operand.type.get_shape()  # type: ignore[attr-defined]
            full = out.get_shape()
            if len(shape) > len(full) or any(
                s not in (1, f) for s, f in zip(reversed(shape), reversed(full))
            ):
                raise VerifyException(
                    f"{self.name}: operand shape {list(shape)} does not broadcast to the "
                    f"result shape {list(full)}"
                )


_Base = TypeVar("_Base", bound=IRDLOperation)


def _op_class(base: type[_Base], op_name: str, doc: str) -> type[_Base]:
    """A concrete op class named `op_name` over a shared base (one per SFU function)."""
    class_name = op_name.split(".")[1].title().replace("_", "") + "Op"
    op = irdl_op_definition(type(class_name, (base,), {"name": op_name, "__doc__": doc}))
    assert issubclass(op, base)
    return op


def _check_same_shape(op: Operation, a: Attribute, b: Attribute) -> None:
    assert isinstance(a, TensorType) and isinstance(b, TensorType)
    if a.get_shape() != b.get_shape():
        raise VerifyException(
            f"{op.name}: result shape {list(b.get_shape())} differs from the operand shape "
            f"{list(a.get_shape())}"
        )


UNARY_OPS: dict[str, type[_UnaryOp]] = {
    name: _op_class(_UnaryOp, f"spyre.{name}", f"Elementwise {name} on the SFU.")
    for name in ("relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "neg", "sqrt",
                 "rsqrt", "reciprocal", "abs", "log", "erf", "sin", "cos")
}
class _ScalarOp(IRDLOperation):
    """Base of elementwise ops between a tensor and a constant (`reverse`: constant first)."""

    input = operand_def(TensorType)
    value = prop_def(FloatAttr)
    reverse = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, value: float, result_type: Attribute,
                 reverse: bool = False, source_op: Operation | None = None):
        props: dict[str, Attribute] = {"value": FloatAttr(value, f64)}
        if reverse:
            props["reverse"] = UnitAttr()
        super().__init__(operands=[input], result_types=[result_type], properties=props)
        _provenance(self, source_op)

    def verify_(self) -> None:
        _check_same_shape(self, self.input.type, self.result.type)


class _ReduceOp(_OneInputOp):
    """Base of reductions over the innermost (stick) dimension; the result keeps it as 1."""

    def verify_(self) -> None:
        src = list(self.input.type.get_shape())  # type: ignore[attr-defined]
        out = list(self.result.type.get_shape())
        if not src or out != [*src[:-1], 1]:
            raise VerifyException(
                f"{self.name}: result shape {out} must be the operand shape {src} with the "
                "last dimension reduced to 1")


SCALAR_OPS: dict[str, type[_ScalarOp]] = {
    name: _op_class(_ScalarOp, f"spyre.{name}_scalar",
                  f"Elementwise {name} of a tensor and the constant `value` on the SFU.")
    for name in ("add", "sub", "mul", "div", "maximum", "minimum", "keep")
}
REDUCE_OPS: dict[str, type[_ReduceOp]] = {
    name: _op_class(_ReduceOp, f"spyre.reduce_{name}", f"Row-wise {name} over the last dimension.")
    for name in ("sum", "max", "min")
}


@irdl_op_definition
class CastOp(_OneInputOp):
    """Converts the element type (fp16 / bf16 / fp32); rounding happens where data is stored.

        %y = spyre.cast %x : tensor<64x128xf16> -> tensor<64x128xf32>
    """

    name = "spyre.cast"

    def verify_(self) -> None:
        _check_same_shape(self, self.input.type, self.result.type)


@irdl_op_definition
class ReshapeOp(_OneInputOp):
    """A view with other leading dimensions and the same innermost one: no data moves.

    In the row-sticked layout a tensor is rows x sticks; regrouping the rows changes nothing
    in memory, so the result aliases its operand.

        %y = spyre.reshape %x : tensor<2x16x64xf16> -> tensor<32x64xf16>
    """

    name = "spyre.reshape"

    def verify_(self) -> None:
        src = list(self.input.type.get_shape())  # type: ignore[attr-defined]
        out = list(self.result.type.get_shape())
        element = self.input.type.element_type  # type: ignore[attr-defined]
        if element != self.result.type.element_type:
            raise VerifyException("spyre.reshape: element types differ; use spyre.cast")
        if _prod(src) != _prod(out) or not is_free_reshape(src, out, element):
            raise VerifyException(
                f"spyre.reshape: {src} -> {out} must keep the element count and either the "
                "innermost dimension or whole 128-byte sticks in it (other reshapes move data)")


def _prod(shape: Sequence[int]) -> int:
    out = 1
    for d in shape:
        out *= d
    return out


ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i32": 4, "i64": 4}  # device bytes: i64 is int32


def is_free_reshape(src: Sequence[int], out: Sequence[int], element: Attribute) -> bool:
    """Whether reshaping `src` to `out` keeps every byte of the row-sticked layout in place.

    True when the innermost dimension is kept (only the rows regroup), or when both innermost
    dimensions are whole sticks: then neither layout has padding and both are the plain
    row-major order, as when [B, S, H*D] splits into heads [B, S, H, D] with D*size % 128 == 0.
    """
    if (list(src[-1:]) or [1]) == (list(out[-1:]) or [1]):
        return True
    size = ELEMENT_BYTES.get(str(element))
    return size is not None and all(
        shape and shape[-1] * size % STICK_BYTES == 0 for shape in (src, out))


def int_values(attr: DenseArrayBase) -> list[int]:
    """The values of an integer array attribute (`array<i64: ...>`)."""
    return [int(a.value.data) for a in attr.get_attrs()]


@irdl_op_definition
class PermuteRowsOp(IRDLOperation):
    """Permutes the leading dimensions; the innermost (stick) dimension stays last.

    In the row-sticked layout this moves whole rows, never elements inside a row: result
    dim i is operand dim `permutation[i]`, and `permutation` ends with the last dim.

        %y = spyre.permute_rows %x {permutation = array<i64: 0, 2, 1, 3>}
               : tensor<2x16x4x64xf16> -> tensor<2x4x16x64xf16>
    """

    name = "spyre.permute_rows"
    input = operand_def(TensorType)
    permutation = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, permutation: Sequence[int], result_type: Attribute,
                 source_op: Operation | None = None):
        super().__init__(operands=[input], result_types=[result_type],
                         properties={"permutation":
                                     DenseArrayBase.from_list(i64, list(permutation))})
        _provenance(self, source_op)

    @property
    def perm(self) -> list[int]:
        return int_values(self.permutation)

    def verify_(self) -> None:
        src = list(self.input.type.get_shape())  # type: ignore[attr-defined]
        out = list(self.result.type.get_shape())
        perm = self.perm
        if sorted(perm) != list(range(len(src))) or not perm or perm[-1] != len(src) - 1:
            raise VerifyException(
                f"spyre.permute_rows: permutation {perm} must permute the {len(src)} dims and "
                "keep the last (stick) dim last")
        if out != [src[p] for p in perm]:
            raise VerifyException(
                f"spyre.permute_rows: result shape {out} is not {src} permuted by {perm}")


@irdl_op_definition
class ExpandRowsOp(_OneInputOp):
    """Broadcasts leading dimensions of size 1 (torch `expand`): every result row is a copy
    of one operand row; the innermost (stick) dimension is unchanged.

        %y = spyre.expand_rows %x : tensor<2x2x1x16x64xf16> -> tensor<2x2x2x16x64xf16>
    """

    name = "spyre.expand_rows"

    def verify_(self) -> None:
        src = list(self.input.type.get_shape())  # type: ignore[attr-defined]
        out = list(self.result.type.get_shape())
        if (len(src) != len(out) or src[-1:] != out[-1:]
                or any(s not in (1, o) for s, o in zip(src, out))):
            raise VerifyException(
                f"spyre.expand_rows: {src} -> {out} must keep the rank and the innermost dim "
                "and only broadcast leading dims of size 1")


@irdl_op_definition
class SliceRowsOp(IRDLOperation):
    """A strided range of one leading dimension (torch slice / select on a non-innermost dim):
    result index i along `dim` is operand index `start + i * step`; every other dim, and the
    innermost (stick) dimension, is unchanged. Whole rows move, never elements in a row.

        %y = spyre.slice_rows %x {dim = 1 : i64, start = 15 : i64, step = 1 : i64}
               : tensor<2x16x64xf16> -> tensor<2x1x64xf16>
    """

    name = "spyre.slice_rows"
    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    start = prop_def(IntegerAttr)
    step = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, dim: int, start: int, step: int, result_type: Attribute,
                 source_op: Operation | None = None):
        super().__init__(operands=[input], result_types=[result_type], properties={
            "dim": IntegerAttr(dim, i64), "start": IntegerAttr(start, i64),
            "step": IntegerAttr(step, i64)})
        _provenance(self, source_op)

    @property
    def bounds(self) -> tuple[int, int, int]:
        """(dim, start, step) as Python ints."""
        return self.dim.value.data, self.start.value.data, self.step.value.data

    def verify_(self) -> None:
        src = list(self.input.type.get_shape())  # type: ignore[attr-defined]
        out = list(self.result.type.get_shape())
        dim, start, step = self.bounds
        if len(src) != len(out) or not 0 <= dim < len(src) - 1:
            raise VerifyException(
                f"spyre.slice_rows: dim {dim} must be a leading dim of the {len(src)}-D operand "
                "and the rank must be kept")
        if any(s != o for i, (s, o) in enumerate(zip(src, out)) if i != dim):
            raise VerifyException(
                f"spyre.slice_rows: {src} -> {out} changes a dim other than {dim}")
        if step < 1 or start < 0 or out[dim] < 1 or start + (out[dim] - 1) * step >= src[dim]:
            raise VerifyException(
                f"spyre.slice_rows: {out[dim]} rows from {start} by {step} leave dim {dim} of "
                f"size {src[dim]}")


# the row moves that run as data-movement kernels of their own (DMA only)
DATA_MOVES = (PermuteRowsOp, ExpandRowsOp, SliceRowsOp)


@irdl_op_definition
class AttentionOp(IRDLOperation):
    """Scaled dot-product attention, per batch and head: softmax(q k^T * scale + mask) v.

    q is [..., H, L, E], k [..., Hkv, S, E], v [..., Hkv, S, Ev] and the result
    [..., H, L, Ev]; query head h reads key/value head h / (H / Hkv) (grouped-query attention
    when Hkv < H). `causal` masks key s > query l (top-left aligned, as torch's is_causal);
    the optional `mask` is an additive tensor broadcast to the scores [..., H, L, S] (an
    [L, S] one is shared by every batch and head; a [B, 1, 1, S] one is a padding mask).
    `zero_unseen`: a query whose scores are all -inf (its mask row is -inf throughout) gets
    zeros, as F.scaled_dot_product_attention gives; without it NaN, as softmax gives.

        %o = spyre.attention %q, %k, %v {scale = 0.125 : f64, causal}
               : tensor<2x4x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>
               -> tensor<2x4x16x64xf16>
    """

    name = "spyre.attention"
    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    scale = prop_def(FloatAttr)
    causal = opt_prop_def(UnitAttr)
    zero_unseen = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$query `,` $key `,` $value (`mask` $mask^)? attr-dict `:` type($query) `,` type($key) "
        "`,` type($value) (`,` type($mask)^)? `->` type($result)"
    )

    def __init__(self, query: SSAValue, key: SSAValue, value: SSAValue, mask: SSAValue | None,
                 scale: float, causal: bool, result_type: Attribute,
                 source_op: Operation | None = None, zero_unseen: bool = False):
        props: dict[str, Attribute] = {"scale": FloatAttr(scale, f64)}
        if causal:
            props["causal"] = UnitAttr()
        if zero_unseen:
            props["zero_unseen"] = UnitAttr()
        super().__init__(operands=[query, key, value, [mask] if mask is not None else []],
                         result_types=[result_type], properties=props)
        _provenance(self, source_op)

    @staticmethod
    def heads(shape: Sequence[int]) -> int:
        """The head count of a [..., H, L, E] operand (1 for a 2-D one)."""
        return shape[-3] if len(shape) >= 3 else 1

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        q = self.query.type.get_shape()  # type: ignore[attr-defined]
        k = self.key.type.get_shape()  # type: ignore[attr-defined]
        return self.heads(q) // self.heads(k)

    def verify_(self) -> None:
        q, k, v, out = (list(x.type.get_shape())  # type: ignore[attr-defined]
                        for x in (self.query, self.key, self.value, self.result))
        if not len(q) == len(k) == len(v) == len(out) >= 2:
            raise VerifyException(
                f"spyre.attention: q {q}, k {k}, v {v} and the result {out} must have one "
                "rank of at least 2")
        if q[:-3] != k[:-3] or k[:-1] != v[:-1] or q[-1] != k[-1]:
            raise VerifyException(
                f"spyre.attention: q {q}, k {k} and v {v} disagree (batch dims, key/value "
                "rows, or the q/k head dim)")
        hq, hk = self.heads(q), self.heads(k)
        if hq % hk:
            raise VerifyException(
                f"spyre.attention: {hq} query heads are not a multiple of {hk} key/value heads")
        if out != q[:-1] + v[-1:]:
            raise VerifyException(
                f"spyre.attention: result shape {out} is not {q[:-1] + v[-1:]}")
        if self.mask is not None:
            m = list(self.mask.type.get_shape())  # type: ignore[attr-defined]
            if not self.mask_broadcasts(m, q, k[-2]):
                raise VerifyException(
                    f"spyre.attention: mask shape {m} does not broadcast to "
                    f"{q[:-1] + k[-2:-1]}")

    @staticmethod
    def mask_broadcasts(mask: Sequence[int], q: Sequence[int], keys: int) -> bool:
        """Does a mask of shape `mask` broadcast to the scores [..., H, L, S] of queries `q`
        and `keys` keys: S columns, and each other dim (aligned from the right, no more
        than the scores have) 1 or the scores' own?"""
        scores = [*q[:-1], keys]
        return len(mask) <= len(scores) and mask[-1:] == [keys] and all(
            m in (1, s) for m, s in zip(mask[::-1], scores[::-1]))


@irdl_op_definition
class BatchMatmulOp(IRDLOperation):
    """A matmul per batch of two activations: out[b] = lhs[b] @ rhs[b], or lhs[b] @ rhs[b]^T
    with `transpose_rhs` (rhs given as [..., N, K], as stored: the PT reads it row by row).

    lhs is [..., M, K], rhs [..., K, N] (or [..., N, K]) with the same leading dims, the
    result [..., M, N]. It runs as a kernel of the attention family: per batch the rhs stays
    in LX while the core walks its row tiles of lhs. A device transpose of the innermost dim
    is `identity @ x^T` in this form (design note 37).

        %s = spyre.batch_matmul %q, %k {transpose_rhs}
               : tensor<4x16x64xf16>, tensor<4x32x64xf16> -> tensor<4x16x32xf16>
    """

    name = "spyre.batch_matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    transpose_rhs = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, transpose_rhs: bool,
                 result_type: Attribute, source_op: Operation | None = None):
        props: dict[str, Attribute] = {"transpose_rhs": UnitAttr()} if transpose_rhs else {}
        super().__init__(operands=[lhs, rhs], result_types=[result_type], properties=props)
        _provenance(self, source_op)

    # the attention kernel's names for its operands: lhs rows are its query rows, rhs is
    # read whole per batch as its key (transposed) or value (as stored)
    @property
    def query(self) -> SSAValue:
        return self.lhs

    @property
    def key(self) -> SSAValue:
        return self.rhs

    @property
    def group(self) -> int:
        return 1

    def verify_(self) -> None:
        a, b, out = (list(x.type.get_shape())  # type: ignore[attr-defined]
                     for x in (self.lhs, self.rhs, self.result))
        if not len(a) == len(b) == len(out) >= 2 or a[:-2] != b[:-2]:
            raise VerifyException(
                f"spyre.batch_matmul: lhs {a}, rhs {b} and the result {out} must have one rank "
                "of at least 2 and the same leading dims")
        n, k = (b[-2], b[-1]) if self.transpose_rhs is not None else (b[-1], b[-2])
        if a[-1] != k:
            raise VerifyException(
                f"spyre.batch_matmul: lhs has K = {a[-1]} columns but rhs {b} has K = {k}")
        if out != [*a[:-1], n]:
            raise VerifyException(
                f"spyre.batch_matmul: result shape {out} is not {[*a[:-1], n]}")


@irdl_op_definition
class GatherOp(IRDLOperation):
    """Rows of a 2-D table picked by integer indices (torch `embedding`): the result is
    `table[indices]`, of shape indices.shape + [D]. On the device the indices are int32 and
    every one is checked against [0, V) when the gather runs (`dma.gather`).

        %e = spyre.gather %table, %ids : tensor<256x64xf32>, tensor<2x16xi64>
               -> tensor<2x16x64xf32>
    """

    name = "spyre.gather"
    table = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = ("$table `,` $indices attr-dict `:` type($table) `,` type($indices) `->` "
                       "type($result)")

    def __init__(self, table: SSAValue, indices: SSAValue, result_type: Attribute,
                 source_op: Operation | None = None):
        super().__init__(operands=[table, indices], result_types=[result_type])
        _provenance(self, source_op)

    def verify_(self) -> None:
        table = list(self.table.type.get_shape())  # type: ignore[attr-defined]
        ids = list(self.indices.type.get_shape())  # type: ignore[attr-defined]
        out = list(self.result.type.get_shape())
        if len(table) != 2:
            raise VerifyException(f"spyre.gather: the table must be 2-D, got {table}")
        if str(self.indices.type.element_type) not in ("i32", "i64"):  # type: ignore[attr-defined]
            raise VerifyException("spyre.gather: indices must be i32 or i64, got "
                                  f"{self.indices.type.element_type}")  # type: ignore[attr-defined]
        if out != ids + table[1:]:
            raise VerifyException(f"spyre.gather: result shape {out} is not the indices' "
                                  f"{ids} followed by the table's row width {table[1]}")
        if self.result.type.element_type != self.table.type.element_type:  # type: ignore[attr-defined]
            raise VerifyException("spyre.gather: the result has the table's element type")


@irdl_op_definition
class ScatterOp(IRDLOperation):
    """Rows written into a table at integer positions along its row dim (torch `index_put`
    with `[None, ..., positions]`, `index_copy` along dim -2): the result is `table` with
    `table[..., indices[j], :] = values[..., j, :]`. The back end updates the table's storage
    in place (a decode step's KV-cache append), so the table may have no other reader.

        %c = spyre.scatter %cache, %pos, %k : tensor<1x2x256x64xf32>, tensor<1xi64>,
               tensor<1x2x1x64xf32> -> tensor<1x2x256x64xf32>
    """

    name = "spyre.scatter"
    table = operand_def(TensorType)
    indices = operand_def(TensorType)
    values = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = ("$table `,` $indices `,` $values attr-dict `:` type($table) `,` "
                       "type($indices) `,` type($values) `->` type($result)")

    def __init__(self, table: SSAValue, indices: SSAValue, values: SSAValue,
                 source_op: Operation | None = None):
        super().__init__(operands=[table, indices, values], result_types=[table.type])
        _provenance(self, source_op)

    def verify_(self) -> None:
        table = list(self.table.type.get_shape())  # type: ignore[attr-defined]
        ids = list(self.indices.type.get_shape())  # type: ignore[attr-defined]
        values = list(self.values.type.get_shape())  # type: ignore[attr-defined]
        if len(table) < 2 or len(ids) != 1:
            raise VerifyException(f"spyre.scatter: a table of rank >= 2 ({table}) and 1-D "
                                  f"indices ({ids})")
        if str(self.indices.type.element_type) not in ("i32", "i64"):  # type: ignore[attr-defined]
            raise VerifyException("spyre.scatter: indices must be i32 or i64")
        if values != table[:-2] + ids + table[-1:]:
            raise VerifyException(f"spyre.scatter: values {values} are not "
                                  f"{table[:-2] + ids + table[-1:]} (the table's leading dims, "
                                  "one row per index, the row width)")
        if self.result.type != self.table.type or \
                self.values.type.element_type != self.table.type.element_type:  # type: ignore[attr-defined]
            raise VerifyException("spyre.scatter: the result and the values have the table's "
                                  "type")


BINARY_OPS: dict[str, type[_BinaryOp]] = {
    name: _op_class(_BinaryOp, f"spyre.{name}", f"Elementwise {name} with broadcasting on the SFU.")
    for name in ("add", "sub", "mul", "div", "maximum", "minimum", "keep")
}


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """C = A @ B (+ bias) on the PT arrays; A is MxK, B is KxN, bias broadcasts over rows.

        %c = spyre.matmul %a, %b bias %bias : tensor<64x256xf16>, tensor<256x100xf16>,
               tensor<100xf16> -> tensor<64x100xf16>
    """

    name = "spyre.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$lhs `,` $rhs (`bias` $bias^)? attr-dict `:` type($lhs) `,` type($rhs) "
        "(`,` type($bias)^)? `->` type($result)"
    )

    def __init__(
        self, lhs: SSAValue, rhs: SSAValue, bias: SSAValue | None, result_type: Attribute,
        source_op: Operation | None = None,
    ):
        super().__init__(
            operands=[lhs, rhs, [bias] if bias is not None else []], result_types=[result_type]
        )
        _provenance(self, source_op)

    def verify_(self) -> None:
        a = self.lhs.type.get_shape()  # type: ignore[attr-defined]
        b = self.rhs.type.get_shape()  # type: ignore[attr-defined]
        c = self.result.type.get_shape()
        if len(a) != 2 or len(b) != 2:
            raise VerifyException(
                f"spyre.matmul: operands must be 2-D, got {list(a)} and {list(b)}")
        if a[1] != b[0]:
            raise VerifyException(
                f"spyre.matmul: lhs has K = {a[1]} columns but rhs has {b[0]} rows"
            )
        if tuple(c) != (a[0], b[1]):
            raise VerifyException(
                f"spyre.matmul: result shape {list(c)} is not [{a[0]}, {b[1]}]"
            )
        if self.bias is not None:
            shape = self.bias.type.get_shape()  # type: ignore[attr-defined]
            if tuple(shape) not in ((b[1],), (1, b[1])):
                raise VerifyException(
                    f"spyre.matmul: bias shape {list(shape)} does not match N = {b[1]}"
                )


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A group of spyre ops compiled into one device kernel; intermediates stay in LX.

    Block arguments stand for the operands; `spyre.yield` returns the kernel's results.
    Its planning attributes are declared with their constraints (`dialects/spyre_plan.py`:
    decisions, then ledgers); passes read and write them through `spyre_plan`'s typed
    accessors, which these fields' raw attributes back.
    """

    name = "spyre.kernel"
    sym_name = prop_def(StringAttr)
    inputs = var_operand_def()
    outputs = var_result_def()
    body = region_def("single_block")
    grid = opt_attr_def(plan.GRID.constraint, attr_name=plan.GRID.key)
    tile = opt_attr_def(plan.TILE.constraint, attr_name=plan.TILE.key)
    resident = opt_attr_def(plan.RESIDENT.constraint, attr_name=plan.RESIDENT.key)
    share = opt_attr_def(plan.SHARE.constraint, attr_name=plan.SHARE.key)
    tail = opt_attr_def(plan.TAIL.constraint, attr_name=plan.TAIL.key)
    store_pieces = opt_attr_def(plan.STORE_PIECES.constraint, attr_name=plan.STORE_PIECES.key)
    lx_results = opt_attr_def(plan.LX_RESULTS.constraint, attr_name=plan.LX_RESULTS.key)
    inplace = opt_attr_def(plan.INPLACE.constraint, attr_name=plan.INPLACE.key)
    layout = opt_attr_def(plan.LAYOUT.constraint, attr_name=plan.LAYOUT.key)
    fused = opt_attr_def(plan.FUSED.constraint, attr_name=plan.FUSED.key)
    reason = opt_attr_def(plan.REASON.constraint, attr_name=plan.REASON.key)
    fusion_ledger = opt_attr_def(plan.FUSION.constraint, attr_name=plan.FUSION.key)
    partition_ledger = opt_attr_def(plan.PARTITION.constraint, attr_name=plan.PARTITION.key)
    tiling_ledger = opt_attr_def(plan.TILING.constraint, attr_name=plan.TILING.key)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$sym_name `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs) $body"
    )

    def __init__(self, sym_name: str, inputs: Sequence[SSAValue], result_types: Sequence[Attribute],
                 body: Region):
        super().__init__(
            operands=[inputs], result_types=[result_types], regions=[body],
            properties={"sym_name": StringAttr(sym_name)},
        )

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise VerifyException(
                f"spyre.kernel @{self.sym_name.data}: {len(block.args)} block arguments for "
                f"{len(self.inputs)} inputs"
            )
        term = block.last_op
        if not isinstance(term, YieldOp) or len(term.values) != len(self.outputs):
            raise VerifyException(
                f"spyre.kernel @{self.sym_name.data}: must end in spyre.yield of "
                f"{len(self.outputs)} values"
            )


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Returns the results of a spyre.kernel."""

    name = "spyre.yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Runs the KTIR kernel `callee` on tensors: the host-side view of one ComputeOnDevice.

        %y = spyre.launch @k0(%x, %w) : (tensor<64x256xf16>, tensor<256x256xf16>)
               -> tensor<64x256xf16>
    """

    name = "spyre.launch"
    callee = prop_def(SymbolRefAttr)
    inputs = var_operand_def()
    outputs = var_result_def()
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$callee `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)"

    def __init__(self, callee: str, inputs: Sequence[SSAValue], result_types: Sequence[Attribute]):
        super().__init__(
            operands=[inputs], result_types=[result_types],
            properties={"callee": SymbolRefAttr(callee)},
        )



# ---- channels-last windows (convolution, pooling) ---------------------------------------------


def window_out_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output extent of a window op along one spatial dim (floor mode, as torch's default)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def window_block_cols(channels: int, taps: int, element: str) -> int:
    """Columns of one tap's block in `spyre.window_rows`: the channels for a single tap,
    the channels padded to whole sticks for several (so every block starts on a stick)."""
    if taps == 1:
        return channels
    per_stick = STICK_BYTES // ELEMENT_BYTES[element]
    return -(-channels // per_stick) * per_stick


@irdl_op_definition
class WindowRowsOp(IRDLOperation):
    """Gathers the window rows of a channels-last image: im2col done by DMA.

    The input is [N, H, W, C] (rows n, h, w; channels in the stick). For each output pixel
    (n, ho, wo) and each tap (kh, kw) of `taps`, the result row holds input row
    (n, ho * sh + kh * dh - ph, wo * sw + kw * dw - pw) in the tap's column block, or the
    first row of `pad` where that pixel is outside the image (zero padding for a
    convolution, a very negative value for max pooling). A block is C columns for a single
    tap and C padded to whole sticks for several, so every block starts on a stick and a
    convolution is this op followed by one matmul with K = taps x block.

        %cols = spyre.window_rows %x, %pad {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>,
                  padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
                  taps = array<i64: 0, 0, 0, 1, ...>}
                  : (tensor<2x32x32x3xf16>, tensor<32x3xf16>) -> tensor<2x32x32x576xf16>
    """

    name = "spyre.window_rows"
    input = operand_def(TensorType)
    pad = operand_def(TensorType)
    kernel = prop_def(DenseArrayBase)
    stride = prop_def(DenseArrayBase)
    padding = prop_def(DenseArrayBase)
    dilation = prop_def(DenseArrayBase)
    taps = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = ("$input `,` $pad attr-dict `:` `(` type($input) `,` type($pad) `)` "
                       "`->` type($result)")

    def __init__(self, input: SSAValue, pad: SSAValue, kernel: Sequence[int],
                 stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                 taps: Sequence[tuple[int, int]], result_type: Attribute,
                 source_op: Operation | None = None):
        flat = [i for tap in taps for i in tap]
        super().__init__(operands=[input, pad], result_types=[result_type], properties={
            "kernel": DenseArrayBase.from_list(i64, list(kernel)),
            "stride": DenseArrayBase.from_list(i64, list(stride)),
            "padding": DenseArrayBase.from_list(i64, list(padding)),
            "dilation": DenseArrayBase.from_list(i64, list(dilation)),
            "taps": DenseArrayBase.from_list(i64, flat)})
        _provenance(self, source_op)

    def pair(self, name: str) -> tuple[int, int]:
        values = self.properties[name].get_values()  # type: ignore[attr-defined]
        return int(values[0]), int(values[1])

    @property
    def tap_list(self) -> list[tuple[int, int]]:
        flat = int_values(self.taps)
        return list(zip(flat[::2], flat[1::2]))

    def out_hw(self) -> tuple[int, int]:
        _, h, w, _ = self.input.type.get_shape()  # type: ignore[attr-defined]
        return tuple(window_out_size(size, *args) for size, args in zip(  # type: ignore[return-value]
            (h, w), zip(self.pair("kernel"), self.pair("stride"), self.pair("padding"),
                        self.pair("dilation"))))

    def block_cols(self) -> int:
        """Columns of one tap's block: C, or C padded to whole sticks for several taps."""
        ttype = self.input.type
        assert isinstance(ttype, TensorType)
        return window_block_cols(ttype.get_shape()[-1], len(self.tap_list),
                                 str(ttype.element_type))

    def verify_(self) -> None:
        src = list(self.input.type.get_shape())  # type: ignore[attr-defined]
        out = list(self.result.type.get_shape())
        pad = list(self.pad.type.get_shape())  # type: ignore[attr-defined]
        if len(src) != 4:
            raise VerifyException(f"spyre.window_rows: input of rank {len(src)}, expected "
                                  "[N, H, W, C]")
        taps = self.tap_list
        kh, kw = self.pair("kernel")
        if not taps or any(not (0 <= a < kh and 0 <= b < kw) for a, b in taps):
            raise VerifyException(f"spyre.window_rows: taps {taps} outside the {kh}x{kw} "
                                  "kernel")
        ho, wo = self.out_hw()
        want = [src[0], ho, wo, len(taps) * self.block_cols()]
        if out != want:
            raise VerifyException(f"spyre.window_rows: result shape {out}, expected {want}")
        rows = wo if self.pair("padding") != (0, 0) else 1
        if len(pad) != 2 or pad[1] != src[3] or pad[0] < rows:
            raise VerifyException(f"spyre.window_rows: pad rows of shape {pad}, expected "
                                  f"[{rows}, {src[3]}] or more rows (an output row of pad "
                                  "values where the windows leave the image)")


Spyre = Dialect(
    "spyre",
    [ParamOp, AtenOp, MatmulOp, KernelOp, YieldOp, LaunchOp, CastOp, ReshapeOp, PermuteRowsOp,
     ExpandRowsOp, SliceRowsOp, AttentionOp, BatchMatmulOp, WindowRowsOp, GatherOp, ScatterOp,
     *UNARY_OPS.values(), *BINARY_OPS.values(), *SCALAR_OPS.values(), *REDUCE_OPS.values()],
    [],
)
