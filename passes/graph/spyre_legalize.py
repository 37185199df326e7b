"""spyre-legalize: op selection from imported ATen ops to Spyre ops.

Expects: a module from the frontend (`spyre.aten` and `spyre.param` ops in `func.func`s).
Guarantees: no `spyre.aten` op remains; every op is one the back end lowers. Transposes of
weights are folded into the weight (`spyre.param` with a `permutation`), so no data movement
kernel is spent on them. Permutations of an activation's leading dims become
`spyre.permute_rows` (a reshape when only size-1 dims move), `expand` of size-1 leading dims
`spyre.expand_rows`, and reshapes that keep the stick dim, or split / merge it in whole
sticks (heads of a multiple of 64 fp16 elements), `spyre.reshape`. Scaled dot-product
attention becomes `spyre.attention` (scale, causal, an additive [L, S] mask; grouped-query
attention by the operand shapes), and so does eager attention written out as bmm, scale,
mask add, softmax and bmm (matched strictly by `eager_attention`, before anything else is
selected). Slices and concatenations along the innermost dim (the
half rotation of rotary embeddings: `cat(-x[..., d/2:], x[..., :d/2])`) are linear maps of
the columns: each chain of slices and negations that feeds a concatenation folds into one
constant 0/+-1 matrix per source, so a concatenation is one matmul per distinct source (see
`_column_map`). Gathers of table rows by index (`embedding`, `index_select` along rows)
become `spyre.gather`, and row writes into a buffer at run-time positions (`index_put` with
`[None, .., pos]`, `index_copy` along dim -2: a KV-cache append) `spyre.scatter`, done in
place. Comparisons of integers become f32 0/1 predicates (`spyre.predicate`), which `where`,
`and`/`or`/`not` and boolean SDPA masks consume; cumsum over the last dim is a matmul by a
constant triangle; argmax / argmin a row reduction (design note 28). If any op has no
lowering, the pass fails once, listing every such op with its FX node, source line and the
reason (never just the first).

    %y = spyre.aten "aten.linear.default"(%x, %w, %b) ...        // before
    %wt = spyre.param {param_name = "fc.weight", permutation = array<i64: 1, 0>} ...
    %y = spyre.matmul %x, %wt bias %b ...                         // after

    %t = spyre.aten "aten.permute.default"(%q) {args = {dims = [0, 2, 1, 3]}} ...  // before
    %t = spyre.permute_rows %q {permutation = array<i64: 0, 2, 1, 3>} ...        // after
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    FunctionType,
    Float32Type,
    UnitAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyrec.diagnostics import UnsupportedOpsError
from spyrec.passes.graph.conv import select_channels_last
from spyrec.passes.graph.graph_build import constant as _constant
from spyrec.passes.graph.graph_build import element as _element_name
from spyrec.passes.graph.graph_build import emit as _emit
from spyrec.passes.graph.graph_build import binary_op as _binary_op
from spyrec.passes.graph.graph_build import exact_move, nonfinite, through
from spyrec.passes.graph.graph_build import scalar_op as _scalar_op
from spyrec.passes.graph.graph_build import fx_name as _fx_name
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.move_reduced_dim import move_reduced_dims_last
from spyrec.passes.graph.eager_attention import EagerAttention, match_eager_attention
from spyrec.dialects.spyre import (
    BINARY_OPS,
    REDUCE_OPS,
    SCALAR_OPS,
    UNARY_OPS,
    AtenOp,
    AttentionOp,
    BatchMatmulOp,
    CastOp,
    ExpandRowsOp,
    GatherOp,
    MatmulOp,
    ScatterOp,
    ParamOp,
    PermuteRowsOp,
    ReshapeOp,
    SliceRowsOp,
    ELEMENT_BYTES,
    STICK_BYTES,
    describe,
    is_free_reshape,
)
from spyrec.target import DEFAULT_TARGET

FLOAT_ELEMENTS = ("f16", "bf16", "f32")

# ATen overload -> spyre unary op name
_UNARY = {
    "aten.relu.default": "relu",
    "aten.silu.default": "silu",
    "aten.sigmoid.default": "sigmoid",
    "aten.tanh.default": "tanh",
    "aten.exp.default": "exp",
    "aten.neg.default": "neg",
    "aten.sqrt.default": "sqrt",
    "aten.rsqrt.default": "rsqrt",
    "aten.reciprocal.default": "reciprocal",
    "aten.abs.default": "abs",
    "aten.log.default": "log",
    "aten.erf.default": "erf",
}
_BINARY = {
    "aten.add.Tensor": "add",
    "aten.sub.Tensor": "sub",
    "aten.mul.Tensor": "mul",
    "aten.div.Tensor": "div",
    "aten.add.Scalar": "add",
    "aten.sub.Scalar": "sub",
    "aten.mul.Scalar": "mul",
    "aten.div.Scalar": "div",
    "aten.rsub.Scalar": "sub",
    "aten.maximum.default": "maximum",
    "aten.minimum.default": "minimum",
}


class LegalizeRewriter(Rewriter):
    """The rewriter of one spyre-legalize run, and what that run remembers between the
    ops it selects; made afresh by each `SpyreLegalize.apply`, so two runs (or two modules)
    never share it."""

    def __init__(self) -> None:
        # the transposed copies made of each weight op, for reuse by its other readers
        self.transposed: dict[ParamOp, list[ParamOp]] = {}
        # device transposes (`_device_transpose`) by their result op: the value they transpose
        self.device_transposes: dict[Operation, SSAValue] = {}
        # additive masks made from predicates, by (predicate, query element type)
        self.additive_masks: dict[tuple[SSAValue, str], SSAValue] = {}


class _Unsupported(Exception):
    """One op cannot be selected; the message says why."""


def _arg(op: AtenOp, name: str, default: object = None) -> object:
    attr = op.args.data.get(name)
    if attr is None:
        return default
    if isinstance(attr, IntegerAttr):
        if attr.type == IntegerType(1):
            return bool(attr.value.data)
        return attr.value.data
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    return attr


def _operand(op: AtenOp, name: str) -> SSAValue | None:
    names = [n.data for n in op.operand_names.data]  # type: ignore[attr-defined]
    return op.operands[names.index(name)] if name in names else None


def _require_float(op: AtenOp) -> None:
    for v in [*op.operands, *op.results]:
        if _element_name(v) not in FLOAT_ELEMENTS:
            raise _Unsupported(f"element type {_element_name(v)} (only f16, bf16, f32 so far)")


def _transposed_weight(op: AtenOp, value: SSAValue, rewriter: LegalizeRewriter) -> SSAValue:
    """The 2-D weight `value` transposed, folded into a new spyre.param."""
    owner = value.owner
    if not isinstance(owner, ParamOp):
        raise _Unsupported("the transposed operand is not a constant weight (activation "
                           "transposes are not lowered yet)")
    ttype = value.type
    assert isinstance(ttype, TensorType)
    shape = list(ttype.get_shape())
    if len(shape) != 2:
        raise _Unsupported(f"transpose of a {len(shape)}-D weight")
    base = owner.perm or (0, 1)
    new_type = TensorType(ttype.element_type, shape[::-1])
    perm = (base[1], base[0])
    # one transposed weight per weight, however many ops read it that way (a weight shared
    # by every layer is stored and placed once), reused where it is defined before the op
    block = op.parent_block()
    for earlier in rewriter.transposed.get(owner, ()):
        if (earlier.parent_block() is block and block is not None and earlier.perm == perm
                and earlier.result.type == new_type and earlier.is_before_in_block(op)):
            return earlier.result
    new = ParamOp(owner.param_name.data, new_type, permutation=list(perm))
    new.result.name_hint = f"{value.name_hint or 'w'}_t"
    rewriter.insert_op(new, _before(op))
    rewriter.transposed.setdefault(owner, []).append(new)
    return new.result


def _before(op: Operation) -> InsertPoint:
    return InsertPoint.before(op)


def _with_shape(value: SSAValue, shape: list[int]) -> TensorType:
    assert isinstance(value.type, TensorType)
    return TensorType(value.type.element_type, shape)


def _last_dim_only(op: AtenOp, dims: object, rank: int) -> None:
    """Reductions and softmax are lowered over the innermost (stick) dimension only."""
    if isinstance(dims, ArrayAttr):
        values = [d.value.data for d in dims.data]  # type: ignore[attr-defined]
    else:
        values = [dims]
    if [v % rank for v in values if isinstance(v, int)] != [rank - 1]:
        raise _Unsupported(f"over dims {values} (only the last dimension is lowered so far)")


def _reduce_last(op: AtenOp, rewriter: LegalizeRewriter, kind: str, x: SSAValue) -> SSAValue:
    shape = _shape(x)
    if shape[-1] == 1:  # the sum, max or min of one column is that column
        return x
    return _emit(rewriter, op, REDUCE_OPS[kind](x, _with_shape(x, shape[:-1] + [1])))


def _numel(value: SSAValue) -> int:
    out = 1
    for d in _shape(value):
        out *= d
    return out


def _normalize(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, centered: bool,
               eps: float) -> SSAValue:
    """(x - mean) * rsqrt(var + eps) for layer norm, x * rsqrt(mean(x^2) + eps) for RMS norm."""
    n = _shape(x)[-1]
    if centered:
        mean = _scalar_op(op, rewriter, "mul", _reduce_last(op, rewriter, "sum", x), 1.0 / n)
        x = _binary_op(op, rewriter, "sub", x, mean)
    square = _binary_op(op, rewriter, "mul", x, x)
    var = _scalar_op(op, rewriter, "mul", _reduce_last(op, rewriter, "sum", square), 1.0 / n)
    shifted = _scalar_op(op, rewriter, "add", var, eps)
    scale = _emit(rewriter, op, UNARY_OPS["rsqrt"](shifted, shifted.type))
    return _binary_op(op, rewriter, "mul", x, scale)


def _check_normalized_shape(op: AtenOp, x: SSAValue) -> None:
    shape = _arg(op, "normalized_shape")
    dims = [d.value.data for d in shape.data] if isinstance(shape, ArrayAttr) else []  # type: ignore[attr-defined]
    if dims != _shape(x)[-1:]:
        raise _Unsupported(f"normalized_shape {dims} (only the last dimension is lowered so far)")


def _affine(op: AtenOp, rewriter: LegalizeRewriter, y: SSAValue, weight: SSAValue | None,
            bias: SSAValue | None) -> SSAValue:
    if weight is not None:
        y = _binary_op(op, rewriter, "mul", y, weight)
    if bias is not None:
        y = _binary_op(op, rewriter, "add", y, bias)
    return y


def _cast_to(op: AtenOp, rewriter: LegalizeRewriter, value: SSAValue, like: SSAValue) -> SSAValue:
    """`value` in the element type of `like`, its shape kept."""
    if _element_name(value) == _element_name(like):
        return value
    return _emit(rewriter, op, CastOp(value, _with_shape(like, _shape(value))))


def _select_layer_norm(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    _require_float(op)
    x = _operand(op, "input")
    assert x is not None
    _check_normalized_shape(op, x)
    if op.target.data == "aten.native_layer_norm.default" and any(
            r.uses for r in op.results[1:]):
        raise _Unsupported("the mean and rstd outputs are used (only the normalized output is)")
    eps = float(_arg(op, "eps", 1e-5))  # type: ignore[arg-type]
    y = _normalize(op, rewriter, x, centered=True, eps=eps)
    y = _affine(op, rewriter, y, _operand(op, "weight"), _operand(op, "bias"))
    return _cast_to(op, rewriter, y, op.results[0])


def _select_rms_norm(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    _require_float(op)
    x = _operand(op, "input")
    assert x is not None
    _check_normalized_shape(op, x)
    eps = _arg(op, "eps")
    if eps is None:  # torch uses the machine epsilon of the type it computes in: fp32
        eps = 2.0**-23  # for fp16 and bf16 too (their opmath type)
    y = _normalize(op, rewriter, x, centered=False, eps=float(eps))  # type: ignore[arg-type]
    y = _affine(op, rewriter, y, _operand(op, "weight"), None)
    return _cast_to(op, rewriter, y, op.results[0])


def _select_softmax(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    _require_float(op)
    x = op.operands[0]
    _last_dim_only(op, _arg(op, "dim"), len(_shape(x)))
    x = _cast_to(op, rewriter, x, op.results[0])
    shifted = _binary_op(op, rewriter, "sub", x, _reduce_last(op, rewriter, "max", x))
    e = _emit(rewriter, op, UNARY_OPS["exp"](shifted, shifted.type))
    total = _reduce_last(op, rewriter, "sum", e)
    return _binary_op(op, rewriter, "div", e, total)


_RESHAPE_TARGETS = ("aten.unsqueeze.default", "aten.view.default", "aten.reshape.default",
                    "aten._unsafe_view.default")


def _dim_restorers(op: AtenOp) -> list[AtenOp] | None:
    """For a last-dim reduction with keepdim=False: its users, if every one of them puts the
    reduced dim back as size 1 (`x - x.mean(-1)[..., None]`); None otherwise."""
    kept = _shape(op.operands[0])[:-1] + [1]
    users = [use.operation for use in op.results[0].uses]
    if all(isinstance(u, AtenOp) and u.target.data in _RESHAPE_TARGETS
           and _shape(u.results[0]) == kept for u in users):
        return users  # type: ignore[return-value]
    return None


def _kept_dim(op: AtenOp, rewriter: LegalizeRewriter, y: SSAValue) -> SSAValue:
    """The keepdim result `y` of a last-dim reduction: with keepdim=False it replaces the
    users that put the dim back (`_dim_restorers`), which are erased, or else moves from its
    column into a row (`_column_to_row`); a scalar result (a 1-D input reduced whole) is a
    free reshape of it."""
    if not _shape(op.results[0]):
        return _emit(rewriter, op, ReshapeOp(y, op.results[0].type))
    if not _arg(op, "keepdim", False):
        users = _dim_restorers(op)
        if users is None:
            return _column_to_row(op, rewriter, y, op.results[0])
        for user in users:
            user.results[0].replace_all_uses_with(y)
            user.detach()
            user.erase()
    return y


def _column_to_row(op: AtenOp, rewriter: LegalizeRewriter, y: SSAValue, like: SSAValue) -> SSAValue:
    """A reduction's [..., R, 1] column as the [..., R] row of `like`'s shape: a device
    transpose to [..., 1, R] and a free reshape."""
    row = _device_transpose(op, rewriter, y)
    return _emit(rewriter, op, ReshapeOp(row, _with_shape(row, _shape(like))))


def _reduced_dims(op: AtenOp, rank: int) -> list[int]:
    """The dims a reduction's `dim` argument names, normalised (none given: all of them)."""
    dims = _arg(op, "dim")
    if dims is None or (isinstance(dims, ArrayAttr) and not dims.data):
        return list(range(rank))
    values = ([d.value.data for d in dims.data] if isinstance(dims, ArrayAttr)  # type: ignore[attr-defined]
              else [dims])
    return sorted({v % max(rank, 1) for v in values})  # type: ignore[operator]


MEANS = ("aten.mean.dim", "aten.mean.default")
# the largest constant summation matrix a leading-dim reduction may store (elements)
MAX_ROW_MATRIX = 1 << 22


def _reduce_rows(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, dims: list[int],
                 mean: bool) -> SSAValue:
    """sum / mean over leading dims: P @ x with x viewed as [R_in, N] (a free reshape) and P
    the [R_out, R_in] 0/1 matrix of which input rows each output row sums (1/count for a
    mean). x is the rhs, so R_in must be whole sticks: an activation's rows past the tensor
    cannot be zero-padded for the contraction."""
    shape = _shape(x)
    lead = shape[:-1]
    kept = [d for d in range(len(lead)) if d not in dims]
    r_in = math.prod(lead)
    r_out = math.prod(lead[d] for d in kept)
    if r_in == r_out:  # every summed dim has size 1: the rows stay, a free reshape
        result = _shape(op.results[0])
        return x if shape == result else _emit(rewriter, op, ReshapeOp(x, _with_shape(x, result)))
    per_stick = 128 // {"f32": 4}.get(_element_name(x), 2)
    if r_in % per_stick:
        raise _Unsupported(f"over leading dims {dims}: the {r_in} rows summed are not a "
                           f"multiple of {per_stick} (a whole stick), as a matmul by a "
                           "summation matrix needs")
    if r_in * r_out > MAX_ROW_MATRIX:
        raise _Unsupported(f"over leading dims {dims}: a {r_out} x {r_in} summation matrix "
                           "is too large")
    index = np.indices(lead).reshape(len(lead), -1)
    out_row = np.zeros(r_in, dtype=np.int64)
    for d in kept:
        out_row = out_row * lead[d] + index[d]
    matrix = np.zeros((r_out, r_in))
    matrix[out_row, np.arange(r_in)] = 1.0 / (r_in // r_out) if mean else 1.0
    flat = x if len(shape) == 2 else _emit(rewriter, op, ReshapeOp(x, _with_shape(x, [r_in, shape[-1]])))
    rows = _constant(op, rewriter, f"{_fx_name(op)}.rows", matrix, x.type.element_type)  # type: ignore[attr-defined]
    y = exact_move(op, rewriter, flat, lambda value: _emit(
        rewriter, op, MatmulOp(rows, value, None, _with_shape(x, [r_out, shape[-1]]))), matrix)
    if _shape(y) == _shape(op.results[0]):
        return y
    return _emit(rewriter, op, ReshapeOp(y, _with_shape(x, _shape(op.results[0]))))


def _select_reduce(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    _require_float(op)
    x = op.operands[0]
    rank = len(_shape(x))
    dims = _reduced_dims(op, rank)
    target = op.target.data
    mean = target in MEANS
    if target in ("aten.sum.dim_IntList", "aten.sum.default", *MEANS) and rank > 1 \
            and dims != [rank - 1]:
        x = _cast_to(op, rewriter, x, op.results[0])
        leading = [d for d in dims if d < rank - 1]
        if rank - 1 not in dims:
            return _reduce_rows(op, rewriter, x, leading, mean)
        # the stick dim first (a row reduction), then the leading dims (a matmul)
        out = _shape(op.results[0])
        if out and out[-1] != 1:
            raise _Unsupported(f"over dims {dims} to a {out} result (the sums would have to "
                               "move from a column into a row; keep the last dim)")
        y = _reduce_last(op, rewriter, "sum", x)
        if mean:
            y = _scalar_op(op, rewriter, "mul", y, 1.0 / _shape(x)[-1])
        return _reduce_rows(op, rewriter, y, leading, mean)
    if dims != [rank - 1]:
        raise _Unsupported(f"over dims {dims} (the last dim, or sums and means over leading "
                           "dims, are lowered)")
    if not _arg(op, "keepdim", False) and _shape(op.results[0]):
        _dim_restorers(op)
    target = op.target.data
    kind = {"aten.amax.default": "max", "aten.amin.default": "min"}.get(target, "sum")
    y = _reduce_last(op, rewriter, kind, _cast_to(op, rewriter, x, op.results[0]) if
                     _element_name(x) != _element_name(op.results[0]) else x)
    if mean:
        y = _scalar_op(op, rewriter, "mul", y, 1.0 / _shape(x)[-1])
    return _kept_dim(op, rewriter, y)


def _select_pow(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    _require_float(op)
    x = op.operands[0]
    exponent = _arg(op, "exponent")
    if exponent == 1:
        return x
    if exponent == 2:
        return _binary_op(op, rewriter, "mul", x, x)
    if exponent == 3:  # the tanh GELU of GPT-2 (`gelu_new`) cubes its input
        return _binary_op(op, rewriter, "mul", _binary_op(op, rewriter, "mul", x, x), x)
    unary = {0.5: "sqrt", -0.5: "rsqrt", -1: "reciprocal"}.get(exponent)  # type: ignore[arg-type]
    if unary is None:
        return _select_pow_general(op, rewriter)
    return _emit(rewriter, op, UNARY_OPS[unary](x, x.type))


def _select_reshape(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    x = op.operands[0]
    src, out = _shape(x), _shape(op.results[0])
    element = x.type.element_type  # type: ignore[attr-defined]
    if not is_free_reshape(src, out, element):
        return _restickify_reshape(op, rewriter, x, out)
    if src == out:
        return x
    # the operand's element type: a boolean is an f32 predicate on the device
    return _emit(rewriter, op, ReshapeOp(x, _with_shape(x, out)))


def _restickify_reshape(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue,
                        out: list[int]) -> SSAValue:
    """A reshape that splits the innermost dim ([..., A*B] -> [..., A, B]: heads narrower
    than a stick, `position_ids[..., None]`) or merges it with the dim before ([..., A, B]
    -> [..., A*B]), through device transposes: the innermost dim goes to the rows, regroups
    there for free and comes back (design note 37)."""
    src = _shape(x)

    def view(value: SSAValue, shape: list[int]) -> SSAValue:
        if _shape(value) == shape:
            return value
        return _emit(rewriter, op, ReshapeOp(value, _with_shape(value, shape)))

    if len(out) >= 2 and math.prod(out[-2:]) == src[-1]:  # a split of the innermost dim
        rows, (a, b) = math.prod(src[:-1]), out[-2:]
        if b == 1:  # [R, 1, N] -> [R, N, 1]: one transpose per row
            return view(_device_transpose(op, rewriter, view(x, [rows, 1, a])), out)
        t = view(_device_transpose(op, rewriter, view(x, [rows, a * b])), [a, b, rows])
        t = _device_transpose(op, rewriter, t)  # [A, R, B]
        return view(_permute_rows(op, rewriter, t, [1, 0, 2]), out)
    if len(src) >= 2 and math.prod(src[-2:]) == out[-1]:  # a merge into the innermost dim
        rows, (a, b) = math.prod(src[:-2]), src[-2:]
        if b == 1:  # [R, N, 1] -> [R, 1, N]
            return view(_device_transpose(op, rewriter, view(x, [rows, a, 1])), out)
        t = _permute_rows(op, rewriter, view(x, [rows, a, b]), [1, 0, 2])  # [A, R, B]
        t = view(_device_transpose(op, rewriter, t), [a * b, rows])
        return view(_device_transpose(op, rewriter, t), out)
    raise _Unsupported(
        f"{src} -> {out} changes the innermost dimension other than by splitting it or "
        "merging it with the dim before (a general restickify, not lowered yet)")


def _select_identity(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    return op.operands[0]


def _select_cast(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    x = op.operands[0]
    if _element_name(op.results[0]) not in FLOAT_ELEMENTS or _element_name(x) not in FLOAT_ELEMENTS:
        raise _Unsupported(f"cast {_element_name(x)} -> {_element_name(op.results[0])} "
                           "(float casts only so far)")
    return _cast_to(op, rewriter, x, op.results[0])


def _select_linear(op: AtenOp, rewriter: LegalizeRewriter) -> Operation | SSAValue:
    _require_float(op)
    x, w, b = _operand(op, "input"), _operand(op, "weight"), _operand(op, "bias")
    assert x is not None and w is not None
    wt = _transposed_weight(op, w, rewriter)
    shape = _shape(x)
    if len(shape) == 2:
        return MatmulOp(x, wt, b, op.results[0].type, source_op=op)
    # [..., K] @ [K, N]: the leading dims are rows of the row-sticked layout, so flattening
    # them (and restoring them after) moves no data
    rows = _numel(x) // shape[-1]
    flat = _emit(rewriter, op, ReshapeOp(x, _with_shape(x, [rows, shape[-1]])))
    out = _shape(op.results[0])
    y = _emit(rewriter, op, MatmulOp(flat, wt, b, _with_shape(op.results[0], [rows, out[-1]])))
    return _emit(rewriter, op, ReshapeOp(y, op.results[0].type))


def _select_addmm(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    _require_float(op)
    if _arg(op, "beta", 1) != 1 or _arg(op, "alpha", 1) != 1:
        raise _Unsupported("addmm with beta or alpha other than 1")
    bias, a, b = _operand(op, "self"), _operand(op, "mat1"), _operand(op, "mat2")
    assert bias is not None and a is not None and b is not None
    return MatmulOp(a, b, bias, op.results[0].type, source_op=op)


def _select_mm(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    _require_float(op)
    a, b = _operand(op, "self"), _operand(op, "mat2")
    assert a is not None and b is not None
    source = _transpose_source(rewriter, b)
    if source is not None:  # a @ x^T of an activation x: the PT reads x as stored
        _check_resident_rhs(source, "a matmul by a transposed activation")
        return BatchMatmulOp(a, source, True, op.results[0].type, source_op=op)
    return MatmulOp(a, b, None, op.results[0].type, source_op=op)


def _select_bmm(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    """bmm of activations (eager attention is matched before): spyre.batch_matmul, with the
    rhs read as stored when it is the device transpose of an activation (q @ k^T)."""
    _require_float(op)
    a, b = _operand(op, "self"), _operand(op, "mat2")
    assert a is not None and b is not None
    source = _transpose_source(rewriter, b)
    if source is not None:
        _check_resident_rhs(source, "a bmm by a transposed activation")
        return BatchMatmulOp(a, source, True, op.results[0].type, source_op=op)
    _check_resident_rhs(b, "a bmm")
    return BatchMatmulOp(a, b, False, op.results[0].type, source_op=op)


def _device_transpose(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue) -> SSAValue:
    """x [..., M, N] -> [..., N, M]: identity_N @ x^T per batch, a batch matmul whose rhs the
    PT reads as stored (pt.matmul_nt), so the transpose restickifies through the PT (design
    note 37). Exact: each output element is one product by 1 accumulated in fp32."""
    shape = _shape(x)
    if _element_name(x) in INT_ELEMENTS:  # through f32: exact below 2^24 (note 28c)
        as_float = _emit(rewriter, op, CastOp(x, TensorType(Float32Type(), shape)))
        y = _device_transpose(op, rewriter, as_float)
        return _emit(rewriter, op, CastOp(y, _with_shape(x, _shape(y))))
    if _element_name(x) not in FLOAT_ELEMENTS:
        raise _Unsupported(f"a transpose of the innermost dim of a {_element_name(x)} tensor "
                           "(float and integer tensors are transposed on the device)")
    n, m = shape[-1], shape[-2]
    per_stick = STICK_BYTES // ELEMENT_BYTES[_element_name(x)]
    chunk = 2 * per_stick
    if m > chunk and m % chunk == 0:
        # long columns: transpose row blocks of two output sticks as batches of their own,
        # so the work splits over cores by blocks rather than every core reading all of x;
        # the blocks' rows interleave back for free ([.., N, M/c, c] is [.., N, M])
        lead = shape[:-2]
        blocks = _emit(rewriter, op, ReshapeOp(x, _with_shape(x, lead + [m // chunk, chunk, n])))
        t = _device_transpose(op, rewriter, blocks)  # [.., M/c, N, c]
        rank = len(lead) + 3
        swap = list(range(rank - 3)) + [rank - 2, rank - 3, rank - 1]
        t = _permute_rows(op, rewriter, t, swap)
        y = _emit(rewriter, op, ReshapeOp(t, _with_shape(t, lead + [n, m])))
        rewriter.device_transposes[y.owner] = x  # type: ignore[index]
        return y
    lead = shape[:-2]
    _check_resident_rhs(x, "a transpose of the innermost dim")
    eye = _constant(op, rewriter, f"{_fx_name(op)}.identity", np.eye(n), x.type.element_type)  # type: ignore[attr-defined]
    if lead:
        eye = _emit(rewriter, op, ReshapeOp(eye, _with_shape(eye, [1] * len(lead) + [n, n])))
    if math.prod(lead) > 1:
        eye = _emit(rewriter, op, ExpandRowsOp(eye, _with_shape(eye, lead + [n, n])))
    out = _with_shape(x, lead + [n, shape[-2]])
    y = exact_move(op, rewriter, x,
                   lambda value: _emit(rewriter, op, BatchMatmulOp(eye, value, True, out)),
                   np.eye(min(n, 2)))  # zeros off the diagonal when n > 1
    rewriter.device_transposes[y.owner] = x  # type: ignore[index]
    return y


def _check_resident_rhs(rhs: SSAValue, what: str) -> None:
    """A batch matmul keeps one batch of its rhs in LX while it walks the lhs rows; refuse
    one whose block takes more than three quarters of a core's usable LX."""
    shape = _shape(rhs)
    size = ELEMENT_BYTES[_element_name(rhs)]
    block = shape[-2] * -(-shape[-1] * size // STICK_BYTES) * STICK_BYTES
    budget = DEFAULT_TARGET.lx_usable_bytes * 3 // 4
    if block > budget:
        raise _Unsupported(
            f"{what} of a {shape} tensor: its [{shape[-2]}, {shape[-1]}] block ({block} B with "
            f"its rows padded to sticks) stays in LX per batch, more than {budget} B "
            "(a transpose tiled along both dims is not lowered yet)")


def _transpose_source(rewriter: LegalizeRewriter, value: SSAValue) -> SSAValue | None:
    """x when `value` is the device transpose of x, used only here, possibly regrouped in
    its leading dims by reshapes (`q @ k.transpose(-1, -2)` reaches bmm as a view of the
    transpose); the transpose and reshapes are erased and x is regrouped the same way."""
    chain: list[Operation] = []
    while isinstance(value.owner, ReshapeOp) and value.has_one_use() \
            and _shape(value)[-2:] == _shape(value.owner.input)[-2:]:
        chain.append(value.owner)
        value = value.owner.input
    owner = value.owner
    if not isinstance(owner, Operation) or owner not in rewriter.device_transposes \
            or not value.has_one_use():
        return None
    source = rewriter.device_transposes[owner]
    target = _shape(chain[0].result) if chain else _shape(value)
    shape = target[:-2] + target[-1:] + target[-2:-1]
    if _shape(source) != shape:
        regroup = ReshapeOp(source, _with_shape(source, shape))
        rewriter.insert_op(regroup, InsertPoint.after(source.owner) if isinstance(
            source.owner, Operation) else InsertPoint.at_start(source.owner))  # type: ignore[arg-type]
        source = regroup.result
    return source  # the transpose and its reshapes are erased once unused


def _erase_dead_moves(module: ModuleOp) -> None:
    """Erase the device transposes a matmul read as stored (`_transpose_source`) and the
    identities, reshapes and broadcasts that fed only them, with the SFU ops that carried
    its special values (`exact_move`), users first (and the cast of a 16-bit constant held
    in f32 that attention reads in f32, `_wide_constant`)."""
    dead_kinds = (BatchMatmulOp, ReshapeOp, ExpandRowsOp, PermuteRowsOp, CastOp,
                  *BINARY_OPS.values(), *SCALAR_OPS.values())
    for op in reversed(list(module.walk())):
        if isinstance(op, dead_kinds) and not op.results[0].uses and op.parent is not None:
            op.detach()
            op.erase()


def _permutation(op: AtenOp, rank: int) -> list[int]:
    """The full dim permutation of a permute / transpose / t node (result dim i = operand
    dim perm[i])."""
    if op.target.data == "aten.permute.default":
        dims = _arg(op, "dims")
        return [d.value.data % rank for d in dims.data]  # type: ignore[union-attr]
    perm = list(range(rank))
    if op.target.data == "aten.transpose.int" and rank:
        d0, d1 = _arg(op, "dim0") % rank, _arg(op, "dim1") % rank  # type: ignore[operator]
        perm[d0], perm[d1] = perm[d1], perm[d0]
    elif rank == 2:  # aten.t
        perm = [1, 0]
    return perm


def _select_transpose(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """Weights: folded into the weight. Activations: a row permutation when the innermost
    dim stays last; a reshape when only size-1 dims move (no byte changes place)."""
    src = op.operands[0]
    shape = _shape(src)
    perm = _permutation(op, len(shape))
    if perm == list(range(len(shape))):
        return src
    if isinstance(src.owner, ParamOp):
        if len(shape) != 2:
            raise _Unsupported(f"permute {perm} of a {len(shape)}-D weight (only 2-D weight "
                               "transposes are folded)")
        return _transposed_weight(op, src, rewriter)
    if perm[-1] == len(shape) - 1:
        return _permute_rows(op, rewriter, src, perm)
    # the innermost dim moves: bring the dim that becomes innermost next to it (rows), swap
    # the two on the device, then put the leading dims in their final order (rows)
    rank = len(shape)
    last, inner = rank - 1, perm[-1]
    first = [d for d in range(rank - 1) if d != inner] + [inner, last]
    x = _permute_rows(op, rewriter, src, first)
    if _shape(x)[-2:] != [1, 1]:  # two size-1 dims swap without moving a byte
        x = _device_transpose(op, rewriter, x)
    order = first[:-2] + [last, inner]  # source dims in the order they now stand
    return _permute_rows(op, rewriter, x, [order.index(p) for p in perm])


def _permute_rows(op: AtenOp, rewriter: LegalizeRewriter, src: SSAValue, perm: list[int]) -> SSAValue:
    """A permutation that keeps the innermost dim last: a reshape when only size-1 dims move
    (no byte changes place), otherwise spyre.permute_rows."""
    shape = _shape(src)
    if perm == list(range(len(shape))):
        return src
    out = _with_shape(src, [shape[p] for p in perm])
    if _nontrivial(perm, shape) == sorted(_nontrivial(perm, shape)):
        return _emit(rewriter, op, ReshapeOp(src, out))
    return _emit(rewriter, op, PermuteRowsOp(src, perm, out))


def _nontrivial(perm: list[int], shape: list[int]) -> list[int]:
    """The permutation restricted to the dims of extent > 1: if it is sorted, the permute
    only moves size-1 dims and every byte keeps its place."""
    return [p for p in perm if shape[p] != 1]


def _select_expand(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """expand: a broadcast of size-1 leading dims becomes spyre.expand_rows; a broadcast of
    a size-1 stick dim a matmul by a row of ones. New leading dims are first added as size-1
    dims (a reshape)."""
    x = op.operands[0]
    src, out = _shape(x), _shape(op.results[0])
    padded = [1] * (len(out) - len(src)) + src
    if padded[-1:] != out[-1:]:
        # a column repeated along the stick: x @ ones[1, N] (the column-map matmul)
        _require_float(op)
        x = _column_matmul(op, rewriter, x, np.ones((1, out[-1])), f"{_fx_name(op)}.columns")
        src = _shape(x)
        padded = [1] * (len(out) - len(src)) + src
    if padded != src:
        x = _emit(rewriter, op, ReshapeOp(x, _with_shape(x, padded)))
    if padded == out:
        return x
    return _emit(rewriter, op, ExpandRowsOp(x, _with_shape(x, out)))


def _select_attention(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """aten.scaled_dot_product_attention -> spyre.attention (scale, causal, GQA by shapes)."""
    q, k, v = (_operand(op, n) for n in ("query", "key", "value"))
    assert q is not None and k is not None and v is not None
    for value in (q, k, v, op.results[0]):
        if _element_name(value) not in FLOAT_ELEMENTS:
            raise _Unsupported(f"element type {_element_name(value)} (only f16, bf16, f32 "
                               "so far)")
    dropout = float(_arg(op, "dropout_p", 0.0))  # type: ignore[arg-type]
    if dropout > 0:
        raise _Unsupported(f"dropout_p={dropout} (attention dropout is training-time only; "
                           "export the model in eval mode with dropout_p=0)")
    qs, ks, vs = _shape(q), _shape(k), _shape(v)
    if not len(qs) == len(ks) == len(vs) >= 2:
        raise _Unsupported(f"q {qs}, k {ks}, v {vs} (q, k and v must have one rank >= 2)")
    hq, hk = AttentionOp.heads(qs), AttentionOp.heads(ks)
    if qs[:-3] != ks[:-3] or ks[:-1] != vs[:-1] or hq % hk:
        raise _Unsupported(f"q {qs}, k {ks}, v {vs} (batch dims must agree, k and v must "
                           "have the same heads and rows, query heads a multiple of key "
                           "heads)")
    if hq != hk and not _arg(op, "enable_gqa", False):
        raise _Unsupported(f"{hq} query heads and {hk} key/value heads without enable_gqa")
    causal = bool(_arg(op, "is_causal", False))
    mask = _operand(op, "attn_mask")
    if mask is not None:
        mask = _attention_mask(op, rewriter, mask, qs[-2], ks[-2], q)
    scale = _arg(op, "scale")
    if scale is None:
        scale = 1.0 / math.sqrt(qs[-1])
    return _emit(rewriter, op, AttentionOp(q, k, v, mask, float(scale), causal,  # type: ignore[arg-type]
                                           op.results[0].type))


def _wide_constant(value: SSAValue) -> SSAValue:
    """The f32 constant behind a 16-bit constant with infinities or NaN (the frontend keeps
    those in f32 and casts them, since DL16 cannot hold them), else `value` itself."""
    owner = through(value, (ReshapeOp,)).owner  # the unsqueezes of a [L, S] mask
    if isinstance(owner, CastOp) and isinstance(owner.input.owner, ParamOp) \
            and _element_name(owner.input) == "f32":
        return owner.input
    return value


def _has_empty_rows(mask: SSAValue) -> bool:
    """Is `mask` (through reshapes) a constant with a row of -inf (the frontend marks it)?"""
    owner = through(mask, (ReshapeOp, CastOp)).owner
    return isinstance(owner, ParamOp) and "spyre.empty_rows" in owner.attributes


def _attention_mask(op: AtenOp, rewriter: LegalizeRewriter, mask: SSAValue, rows: int, cols: int,
                    q: SSAValue, sdpa: bool = True) -> SSAValue:
    """An additive [L, S] mask (leading dims of 1 dropped by a free reshape). A 16-bit mask
    with -inf entries is read in f32, where -inf is exact (the scores are f32 in the
    kernel). `sdpa`: the mask of F.scaled_dot_product_attention, which returns zeros for a
    query whose keys are all masked, where softmax (the eager chain) returns NaN."""
    shape = _shape(mask)
    if _element_name(mask) not in FLOAT_ELEMENTS:
        raise _Unsupported(
            f"a {_element_name(mask)} attn_mask (boolean masks are not lowered; pass an "
            "additive float mask: 0 where allowed, a large finite negative value such as "
            "-30000 where not, never -inf, which DL16 cannot hold)")
    if shape[-2:] != [rows, cols] or any(d != 1 for d in shape[:-2]):
        raise _Unsupported(
            f"attn_mask of shape {shape} (only an [L, S] = [{rows}, {cols}] mask shared by "
            "every batch and head is lowered, possibly with leading dims of size 1)")
    if _element_name(mask) != _element_name(q):
        raise _Unsupported(f"a {_element_name(mask)} attn_mask for {_element_name(q)} "
                           "queries (the mask must have the query element type)")
    mask = _wide_constant(mask)
    if sdpa and _has_empty_rows(mask):
        raise _Unsupported(
            "an attn_mask with rows that are -inf throughout (F.scaled_dot_product_attention "
            "returns zeros for those queries; the Spyre attention kernel would return NaN): "
            "leave at least one key unmasked in every row, or mask with a large finite "
            "negative value")
    if _shape(mask) == [rows, cols]:
        return mask
    return _emit(rewriter, op, ReshapeOp(mask, _with_shape(mask, [rows, cols])))


def _select_eager_attention(match: EagerAttention, rewriter: LegalizeRewriter) -> None:
    """A matched eager attention block -> spyre.attention, replacing its output."""
    q, k = match.query, match.key
    mask = match.mask
    if mask is not None:
        mask = _attention_mask(match.anchor, rewriter, mask, _shape(q)[-2], _shape(k)[-2], q,
                               sdpa=False)
    out = _shape(q)[:-1] + _shape(match.value)[-1:]
    y = _emit(rewriter, match.anchor, AttentionOp(q, k, match.value, mask, match.scale, False,
                                                  _with_shape(q, out)))
    if _shape(match.output) != out:
        y = _emit(rewriter, match.anchor, ReshapeOp(y, match.output.type))
    match.output.replace_all_uses_with(y)


def _select_gelu(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    _require_float(op)
    approx = _arg(op, "approximate", "none")
    name = {"none": "gelu", "tanh": "gelu_tanh"}.get(str(approx))
    if name is None:
        raise _Unsupported(f"gelu approximation '{approx}'")
    return UNARY_OPS[name](op.operands[0], op.results[0].type, source_op=op)


def _select_unary(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    _require_float(op)
    return UNARY_OPS[_UNARY[op.target.data]](op.operands[0], op.results[0].type, source_op=op)


def _promoted_operands(op: AtenOp, rewriter: LegalizeRewriter) -> list[SSAValue]:
    """The tensor operands of an elementwise op in its result's element type. torch.export
    records PyTorch's type promotion in the result type (f16 + f32 -> f32, bf16 * f16 ->
    f32, an int64 tensor + an f16 tensor -> f16); an operand of another type is cast on the
    device first (spyre.cast: a float widening is exact, an integer below 2^11 (f16), 2^8
    (bf16) or 2^24 (f32) is exact). Integer results are refused."""
    out = _element_name(op.results[0])
    if out not in FLOAT_ELEMENTS:
        raise _Unsupported(f"element type {out} (only f16, bf16, f32 so far)")
    operands = list(op.operands)
    for i, v in enumerate(operands):
        if _element_name(v) == out:
            continue
        if _element_name(v) not in (*FLOAT_ELEMENTS, *INT_ELEMENTS):
            raise _Unsupported(f"a {_element_name(v)} operand (float and int32 / int64 "
                               "operands are promoted)")
        operands[i] = _emit(rewriter, op, CastOp(v, _with_shape(op.results[0], _shape(v))))
    return operands


def _select_binary(op: AtenOp, rewriter: LegalizeRewriter) -> Operation | SSAValue:
    operands = _promoted_operands(op, rewriter)
    if _arg(op, "alpha", 1) != 1:
        raise _Unsupported("alpha other than 1")
    kind = _BINARY[op.target.data]
    if len(op.operands) == 1:
        # one side is a Python number: `x - 1` keeps it in `other`, `1 - x` in `self`
        tensor_is_self = _operand(op, "self") is not None
        scalar = _arg(op, "other" if tensor_is_self else "self")
        if not isinstance(scalar, (int, float)) or isinstance(scalar, bool):
            raise _Unsupported(f"a scalar operand of type {type(scalar).__name__}")
        x = operands[0]
        reverse = (op.target.data == "aten.rsub.Scalar") == tensor_is_self
        return _scalar_op(op, rewriter, kind, x, float(scalar), reverse=reverse)
    if len(op.operands) != 2:
        raise _Unsupported(f"{len(op.operands)} tensor operands")
    cls = BINARY_OPS[_BINARY[op.target.data]]
    a, b = (_broadcast_rows(op, rewriter, v, _shape(op.results[0])) for v in operands)
    if (a, b) == tuple(op.operands):
        return cls(a, b, op.results[0].type, source_op=op)
    return _emit(rewriter, op, cls(a, b, op.results[0].type))


def _broadcast_rows(op: AtenOp, rewriter: LegalizeRewriter, value: SSAValue,
                    out: list[int], column: bool = False) -> SSAValue:
    """An operand the kernels broadcast themselves (the full tensor, one row of it, or one
    column of it) as is; one repeated along leading dims (a [16, 64] table for [2, 16, 64]
    rows, as rotary embeddings multiply) expanded to the output's rows by
    spyre.expand_rows, a DMA-only move. `column`: `value` is one column ([..., L, 1]),
    which the kernels broadcast along its rows but not over leading dims, even with L = 1."""
    shape = _shape(value)
    padded = [1] * (len(out) - len(shape)) + shape
    rows = math.prod(padded[:-1])
    if rows == math.prod(out[:-1]) or rows == 1 and not column:
        return value
    if padded != shape:
        value = _emit(rewriter, op, ReshapeOp(value, _with_shape(value, padded)))
    return _emit(rewriter, op, ExpandRowsOp(value, _with_shape(value, out[:-1] + padded[-1:])))


INT64_MAX = 2**63 - 1


def _last_dim_slice(op: Operation) -> tuple[int, int] | None:
    """(start, end) of an `aten.slice` of the innermost dim with step 1, else None."""
    if not isinstance(op, AtenOp) or op.target.data != "aten.slice.Tensor":
        return None
    shape = _shape(op.operands[0])
    if _arg(op, "dim", 0) % len(shape) != len(shape) - 1 or _arg(op, "step", 1) != 1:  # type: ignore[operator]
        return None
    start = _arg(op, "start", 0)
    end = _arg(op, "end", INT64_MAX)
    start = 0 if start is None else start
    end = INT64_MAX if end is None else end
    start, end, _ = slice(start, end).indices(shape[-1])  # type: ignore[arg-type]
    return start, end


def _column_map(value: SSAValue) -> tuple[SSAValue, np.ndarray]:
    """`value` as `source @ matrix`: a chain of innermost-dim slices and negations of
    `source` (ATen ops not yet selected) is a [K, N] matrix of 0, 1 and -1."""
    owner = value.owner
    if isinstance(owner, AtenOp) and owner.target.data == "aten.neg.default":
        source, matrix = _column_map(owner.operands[0])
        return source, 0.0 - matrix  # +0.0 where the entry is 0, not -0.0
    bounds = _last_dim_slice(owner)  # type: ignore[arg-type]
    if bounds is not None:
        source, matrix = _column_map(owner.operands[0])  # type: ignore[union-attr]
        return source, matrix[:, bounds[0]:bounds[1]]
    return value, np.eye(_shape(value)[-1])


def _stick_pieces(matrix: np.ndarray, per_stick: int) -> tuple[int, int, np.ndarray] | None:
    """(start, step, signs) when `matrix` [K, N] moves whole sticks: output stick j is input
    stick start + j * step (step >= 1) times signs[j] (+-1), or None."""
    k, n = matrix.shape
    if k % per_stick or n % per_stick:
        return None
    sources, signs = [], []
    for j in range(n // per_stick):
        block = matrix[:, j * per_stick:(j + 1) * per_stick]
        rows = np.nonzero(block.any(axis=1))[0]
        if rows.size != per_stick or rows[0] % per_stick or rows[-1] != rows[0] + per_stick - 1:
            return None
        piece = block[rows[0]:rows[0] + per_stick]
        sign = piece[0, 0]
        if sign not in (1.0, -1.0) or not np.array_equal(piece, sign * np.eye(per_stick)):
            return None
        sources.append(int(rows[0]) // per_stick)
        signs.append(sign)
    step = sources[1] - sources[0] if len(sources) > 1 else 1
    # a decreasing order (rotate_half of a two-stick head) would need DMA runs at a negative
    # pitch, which the move kernels do not have (design note 63)
    if step < 1 or sources != [sources[0] + j * step for j in range(len(sources))]:
        return None
    return sources[0], step, np.repeat(np.array(signs), per_stick)


def _stick_move(op: AtenOp, rewriter: LegalizeRewriter, source: SSAValue,
                matrix: np.ndarray) -> SSAValue | None:
    """source @ matrix as a row move when the matrix moves whole sticks in an increasing
    arithmetic order (a stick-aligned slice or split, GPT-2's q/k/v): [..., K] is
    [..., K/e, e] in the same bytes (e elements a stick), the sticks are a strided slice of
    that leading dim, and negated sticks a product by a constant row of +-1. Exact for every
    value (no PT product by the matrix's zeros) and a DMA-only move (design note 63). None
    when the matrix is not of that form."""
    per_stick = STICK_BYTES // ELEMENT_BYTES[_element_name(source)]
    pieces = _stick_pieces(matrix, per_stick)
    if pieces is None:
        return None
    start, step, signs = pieces
    shape = _shape(source)
    k, n = matrix.shape
    sticks = _emit(rewriter, op, ReshapeOp(source, _with_shape(
        source, shape[:-1] + [k // per_stick, per_stick])))
    moved = _slice_rows(op, rewriter, sticks, len(shape) - 1, start, step, n // per_stick)
    moved = _emit(rewriter, op, ReshapeOp(moved, _with_shape(source, shape[:-1] + [n])))
    if (signs < 0).any():
        row = _constant(op, rewriter, f"{_fx_name(op)}.signs", signs,
                        source.type.element_type)  # type: ignore[attr-defined]
        moved = _binary_op(op, rewriter, "mul", moved, row)
    return moved


def _column_matmul(op: AtenOp, rewriter: LegalizeRewriter, source: SSAValue, matrix: np.ndarray,
                   name: str) -> SSAValue:
    """source @ matrix with `matrix` a constant; leading dims flattened into rows (free in
    the row-sticked layout) and restored after. A matrix that moves whole sticks is a row
    move instead (`_stick_move`)."""
    moved = _stick_move(op, rewriter, source, matrix)
    if moved is not None:
        return moved
    shape = _shape(source)
    k, n = matrix.shape
    weight = _constant(op, rewriter, name, matrix, source.type.element_type)  # type: ignore[attr-defined]
    rows = _numel(source) // k
    flat = source if len(shape) == 2 else _emit(
        rewriter, op, ReshapeOp(source, _with_shape(source, [rows, k])))

    def move(value: SSAValue) -> SSAValue:
        return _emit(rewriter, op, MatmulOp(value, weight, None, _with_shape(value, [rows, n])))

    y = exact_move(op, rewriter, flat, move, matrix)
    if len(shape) == 2:
        return y
    return _emit(rewriter, op, ReshapeOp(y, _with_shape(source, shape[:-1] + [n])))


def _leading_dim(op: AtenOp, x: SSAValue) -> int | None:
    """The op's `dim` normalised, if it is a leading (not the innermost) dim of `x`."""
    rank = len(_shape(x))
    dim = _arg(op, "dim", 0) % max(rank, 1)  # type: ignore[operator]
    return dim if dim < rank - 1 else None


def _slice_rows(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, dim: int, start: int, step: int,
                size: int) -> SSAValue:
    """Rows start, start + step, ... (`size` of them) of leading dim `dim`: a row move."""
    shape = _shape(x)
    if (start, step, size) == (0, 1, shape[dim]):
        return x
    return _emit(rewriter, op, SliceRowsOp(x, dim, start, step,
                                           _with_shape(x, shape[:dim] + [size] + shape[dim + 1:])))


def _select_slice(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """A slice of a leading dim is a row move (`spyre.slice_rows`); one of the innermost
    dim a matmul by a column-selection matrix (a strided copy that moves whole sticks is the
    better lowering once a move kernel for it exists)."""
    x = op.operands[0]
    dim = _leading_dim(op, x)
    if dim is not None:
        start, end = _arg(op, "start", 0), _arg(op, "end", INT64_MAX)
        start, end, step = slice(0 if start is None else start, INT64_MAX if end is None else end,
                                 _arg(op, "step", 1)).indices(_shape(x)[dim])  # type: ignore[arg-type]
        return _slice_rows(op, rewriter, x, dim, start, step, _shape(op.results[0])[dim])
    _require_float(op)
    if _last_dim_slice(op) is None:
        raise _Unsupported(f"dim {_arg(op, 'dim', 0)} step {_arg(op, 'step', 1)} (only "
                           "step-1 slices of the innermost dimension are lowered so far)")
    source, matrix = _column_map(op.results[0])
    if _shape(source) == _shape(op.results[0]):
        return source  # the whole dim
    return _column_matmul(op, rewriter, source, matrix, f"{_fx_name(op)}.columns")


def _select_split(op: AtenOp, rewriter: LegalizeRewriter) -> list[SSAValue | None]:
    """A split of the innermost dim (GPT-2's fused q/k/v projection): each used piece is a
    matmul by its column-selection matrix; unused pieces cost nothing."""
    x = op.operands[0]
    shape = _shape(x)
    dim = _leading_dim(op, x)
    if dim is not None:  # pieces of a leading dim are row moves
        rows: list[SSAValue | None] = []
        start = 0
        for result in op.results:
            size = _shape(result)[dim]
            rows.append(_slice_rows(op, rewriter, x, dim, start, 1, size) if result.uses else None)
            start += size
        return rows
    _require_float(op)
    pieces: list[SSAValue | None] = []
    column = 0
    for index, result in enumerate(op.results):
        width = _shape(result)[-1]
        matrix = np.eye(shape[-1])[:, column:column + width]
        column += width
        pieces.append(_column_matmul(op, rewriter, x, matrix, f"{_fx_name(op)}.columns{index}")
                      if result.uses else None)
    return pieces


def _select_select(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """x.select(dim, i) on a leading dim (x[:, 0] of BERT's pooler, the last position of a
    decoder): a one-row slice, then a free reshape that drops the dim."""
    x = op.operands[0]
    dim = _leading_dim(op, x)
    if dim is None:
        raise _Unsupported(f"along dim {_arg(op, 'dim', 0)}, the innermost (the result would "
                           "leave the stick); select along a leading dim")
    shape = _shape(x)
    index = _arg(op, "index", 0) % shape[dim]  # type: ignore[operator]
    row = _slice_rows(op, rewriter, x, dim, index, 1, 1)
    return _emit(rewriter, op, ReshapeOp(row, op.results[0].type))


def _select_cat(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """A concatenation along the innermost dim: sum over its distinct sources of
    source @ placement, where each placement matrix puts that source's slices (negated where
    they are) into their output columns. rotate_half is one matmul."""
    _require_float(op)
    out = _shape(op.results[0])
    dim = _arg(op, "dim", 0) % len(out)  # type: ignore[operator]
    if dim != len(out) - 1:
        return _cat_rows(op, rewriter, dim)
    placed: dict[SSAValue, np.ndarray] = {}
    column = 0
    for piece in op.operands:
        source, matrix = _column_map(piece)
        if _shape(source)[:-1] != out[:-1]:
            raise _Unsupported(f"a {_shape(source)} piece for a {out} result (pieces must "
                               "share the leading dims)")
        placement = placed.setdefault(source, np.zeros((matrix.shape[0], out[-1])))
        placement[:, column:column + matrix.shape[1]] = matrix
        column += matrix.shape[1]
    terms = [_column_matmul(op, rewriter, source, placement, f"{_fx_name(op)}.columns{i}")
             for i, (source, placement) in enumerate(placed.items())]
    result = terms[0]
    for term in terms[1:]:
        result = _emit(rewriter, op, BINARY_OPS["add"](result, term, op.results[0].type))
    return result


def _cat_rows(op: AtenOp, rewriter: LegalizeRewriter, dim: int) -> SSAValue:
    """A concatenation along a leading dim (a cat-style KV cache): with that dim moved next
    to the innermost one (a row move), each piece is transposed on the device, the
    transposes are concatenated along their innermost dim by column maps (note 23), and the
    result is transposed back (design note 37)."""
    out = _shape(op.results[0])
    rank = len(out)
    to_inner = [d for d in range(rank - 1) if d != dim] + [dim, rank - 1]
    total = out[dim]
    result: SSAValue | None = None
    offset = 0
    for i, piece in enumerate(op.operands):
        x = _permute_rows(op, rewriter, piece, to_inner)
        rows = _shape(x)[-2]
        placement = np.zeros((rows, total))
        placement[np.arange(rows), offset + np.arange(rows)] = 1.0
        offset += rows
        term = _column_matmul(op, rewriter, _device_transpose(op, rewriter, x), placement,
                              f"{_fx_name(op)}.rows{i}")
        result = term if result is None else _emit(
            rewriter, op, BINARY_OPS["add"](result, term, term.type))
    assert result is not None
    back = _device_transpose(op, rewriter, result)
    return _permute_rows(op, rewriter, back, [to_inner.index(d) for d in range(rank)])


Selector = Callable[[AtenOp, LegalizeRewriter], "Operation | SSAValue | list[SSAValue | None]"]

# ---- composite elementwise ops and row reductions, built from the SFU's tile ops ----------

def _unary(op: AtenOp, rewriter: LegalizeRewriter, name: str, x: SSAValue) -> SSAValue:
    return _emit(rewriter, op, UNARY_OPS[name](x, x.type))


def _number(op: AtenOp, name: str) -> float | None:
    """A scalar argument as a float (None when absent); a tensor there is refused."""
    value = _arg(op, name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Unsupported(f"`{name}` is not a Python number")
    return float(value)


def _clamp(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, low: float | None,
           high: float | None) -> SSAValue:
    if low is not None:
        x = _scalar_op(op, rewriter, "maximum", x, low)
    if high is not None:
        x = _scalar_op(op, rewriter, "minimum", x, high)
    return x


def _select_clamp(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """clamp / clamp_min / clamp_max / hardtanh (relu6): max then min with the bounds, in
    torch's order (the upper bound wins when min > max)."""
    _require_float(op)
    x = _cast_to(op, rewriter, op.operands[0], op.results[0])
    target = op.target.data
    if len(op.operands) > 1:  # tensor bounds
        if target == "aten.clamp.Tensor":
            low, high = _operand(op, "min"), _operand(op, "max")
        else:
            low, high = ((op.operands[1], None) if target == "aten.clamp_min.Tensor"
                         else (None, op.operands[1]))
        out = _shape(op.results[0])
        if low is not None:
            x = _binary_op(op, rewriter, "maximum", x, _broadcast_rows(op, rewriter, low, out))
        if high is not None:
            x = _binary_op(op, rewriter, "minimum", x, _broadcast_rows(op, rewriter, high, out))
        return x
    if target == "aten.hardtanh.default":
        low, high = _number(op, "min_val"), _number(op, "max_val")
        return _clamp(op, rewriter, x, -1.0 if low is None else low, 1.0 if high is None else high)
    if target == "aten.clamp_min.default":
        return _clamp(op, rewriter, x, _number(op, "min"), None)
    if target == "aten.clamp_max.default":
        return _clamp(op, rewriter, x, None, _number(op, "max"))
    return _clamp(op, rewriter, x, _number(op, "min"), _number(op, "max"))


def _select_leaky_relu(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """leaky_relu(x) = max(x, slope * x) for 0 <= slope <= 1, min(x, slope * x) above."""
    _require_float(op)
    x = op.operands[0]
    slope = _number(op, "negative_slope")
    slope = 0.01 if slope is None else slope
    if slope < 0:
        raise _Unsupported(f"negative_slope {slope} < 0")
    scaled = _scalar_op(op, rewriter, "mul", x, slope)
    return _binary_op(op, rewriter, "maximum" if slope <= 1 else "minimum", x, scaled)


def _select_elu(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """elu(x) = max(x, 0) + min(alpha * (exp(x) - 1), 0): the two terms are never both
    non-zero, because exp(x) - 1 has the sign of x."""
    _require_float(op)
    x = op.operands[0]
    alpha = _number(op, "alpha")
    alpha = 1.0 if alpha is None else alpha
    for name in ("scale", "input_scale"):
        if _number(op, name) not in (None, 1.0):
            raise _Unsupported(f"{name} other than 1 (selu and scaled elu are not lowered)")
    if alpha < 0:
        raise _Unsupported(f"alpha {alpha} < 0")
    expm1 = _scalar_op(op, rewriter, "add", _unary(op, rewriter, "exp", x), -1.0)
    negative = _scalar_op(op, rewriter, "minimum", _scalar_op(op, rewriter, "mul", expm1, alpha),
                          0.0)
    return _binary_op(op, rewriter, "add", _unary(op, rewriter, "relu", x), negative)


def _softplus(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue) -> SSAValue:
    """log(1 + exp(x)) as max(x, 0) + log(1 + exp(-|x|)), which never overflows."""
    tail = _unary(op, rewriter, "exp", _unary(op, rewriter, "neg", _unary(op, rewriter, "abs", x)))
    log1p = _unary(op, rewriter, "log", _scalar_op(op, rewriter, "add", tail, 1.0))
    return _binary_op(op, rewriter, "add", _unary(op, rewriter, "relu", x), log1p)


def _select_softplus(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """softplus(x) = softplus(beta x) / beta; torch's linear region above `threshold`
    differs from the smooth form by less than exp(-threshold) (2e-9 at the default 20)."""
    _require_float(op)
    x = op.operands[0]
    beta = _number(op, "beta")
    beta = 1.0 if beta is None else beta
    threshold = _number(op, "threshold")
    if beta <= 0:
        raise _Unsupported(f"beta {beta} <= 0")
    if threshold is not None and threshold < 15:
        raise _Unsupported(f"threshold {threshold} < 15 (its linear region would differ "
                           "visibly from the smooth form)")
    if beta != 1.0:
        x = _scalar_op(op, rewriter, "mul", x, beta)
    y = _softplus(op, rewriter, x)
    return y if beta == 1.0 else _scalar_op(op, rewriter, "mul", y, 1.0 / beta)


def _select_mish(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """mish(x) = x * tanh(softplus(x))."""
    _require_float(op)
    x = op.operands[0]
    return _binary_op(op, rewriter, "mul", x,
                      _unary(op, rewriter, "tanh", _softplus(op, rewriter, x)))


def _select_hard_sigmoid(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """hardsigmoid(x) = clamp(x / 6 + 1/2, 0, 1); hardswish(x) = x * hardsigmoid(x)."""
    _require_float(op)
    x = op.operands[0]
    gate = _clamp(op, rewriter, _scalar_op(op, rewriter, "add",
                                           _scalar_op(op, rewriter, "mul", x, 1.0 / 6.0), 0.5),
                  0.0, 1.0)
    if op.target.data == "aten.hardswish.default":
        return _binary_op(op, rewriter, "mul", x, gate)
    return gate


def _select_pow_general(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """x ** p for an exponent without a one-op form: small integers by repeated
    multiplication (and a reciprocal for negative ones), others as exp(p * log x), which
    is NaN for x < 0 as torch's is."""
    x = op.operands[0]
    p = _number(op, "exponent")
    assert p is not None
    if p == int(p) and 2 <= abs(p) <= 8:
        acc = x
        for _ in range(int(abs(p)) - 1):
            acc = _binary_op(op, rewriter, "mul", acc, x)
        return acc if p > 0 else _unary(op, rewriter, "reciprocal", acc)
    return _unary(op, rewriter, "exp", _scalar_op(op, rewriter, "mul",
                                                  _unary(op, rewriter, "log", x), p))


def _select_pow_scalar_base(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """b ** x for a positive number b: exp(x * log b)."""
    _require_float(op)
    base = _number(op, "self")
    if base is None or base <= 0:
        raise _Unsupported(f"base {base} (a positive number is lowered)")
    x = _cast_to(op, rewriter, op.operands[0], op.results[0])
    return _unary(op, rewriter, "exp", _scalar_op(op, rewriter, "mul", x, math.log(base)))


def _keepdim_last(op: AtenOp, x: SSAValue) -> None:
    _last_dim_only(op, _arg(op, "dim"), len(_shape(x)))
    if not _arg(op, "keepdim", False):
        _dim_restorers(op)


def _logsumexp_last(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue,
                    finite_peak: bool = False) -> tuple[SSAValue, SSAValue]:
    """(max, log(sum(exp(x - max)))) over the last dim: the stable form. `finite_peak`: an
    infinite max becomes 0, as torch.logsumexp does, so a row with +inf gives +inf and a
    row of -inf gives -inf (not inf - inf = NaN)."""
    peak = _reduce_last(op, rewriter, "max", x)
    if finite_peak:
        # 1 - nonfinite(peak) is the 0/1 "finite" predicate that keeps the peak or zeroes it
        finite = _scalar_op(op, rewriter, "sub", nonfinite(op, rewriter, peak), 1.0,
                            reverse=True)
        peak = _binary_op(op, rewriter, "keep", peak, finite)
    shifted = _binary_op(op, rewriter, "sub", x, peak)
    total = _reduce_last(op, rewriter, "sum", _unary(op, rewriter, "exp", shifted))
    return peak, _unary(op, rewriter, "log", total)


def _select_log_softmax(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """x - max - log(sum(exp(x - max))) over the last dim."""
    _require_float(op)
    x = op.operands[0]
    _last_dim_only(op, _arg(op, "dim"), len(_shape(x)))
    x = _cast_to(op, rewriter, x, op.results[0])
    peak, log_total = _logsumexp_last(op, rewriter, x)
    return _binary_op(op, rewriter, "sub", _binary_op(op, rewriter, "sub", x, peak), log_total)


def _select_logsumexp(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    _require_float(op)
    x = op.operands[0]
    _keepdim_last(op, x)
    peak, log_total = _logsumexp_last(op, rewriter, _cast_to(op, rewriter, x, op.results[0]),
                                      finite_peak=True)
    return _kept_dim(op, rewriter, _binary_op(op, rewriter, "add", peak, log_total))


def _select_variance(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """var / std over the last dim: the centred sum of squares (two passes, as torch's)
    over n - correction; std (or sqrt of a var used only there) scales the centred values
    by their largest magnitude first."""
    _require_float(op)
    x = op.operands[0]
    _keepdim_last(op, x)
    n = _shape(x)[-1]
    correction = _number(op, "correction")
    correction = 1.0 if correction is None else correction
    if n - correction <= 0:
        raise _Unsupported(f"{n} elements with correction {correction} (a division by zero)")
    x = _cast_to(op, rewriter, x, op.results[0])
    mean = _scalar_op(op, rewriter, "mul", _reduce_last(op, rewriter, "sum", x), 1.0 / n)
    centred = _binary_op(op, rewriter, "sub", x, mean)
    users = [use.operation for use in op.results[0].uses]
    root = users[0] if len(users) == 1 and isinstance(users[0], AtenOp) \
        and users[0].target.data == "aten.sqrt.default" else None
    if op.target.data != "aten.std.correction" and root is None:
        squares = _reduce_last(op, rewriter, "sum",
                               _binary_op(op, rewriter, "mul", centred, centred))
        return _kept_dim(op, rewriter, _scalar_op(op, rewriter, "mul", squares,
                                                  1.0 / (n - correction)))
    # std = s * sqrt(sum((c / s)^2) / (n - correction)) with s = max |c| (at least the
    # smallest normal f32): the squares stay in range where c^2 would overflow (a row
    # holding 1e30 has a finite std, as torch computes it); NaN and inf still propagate
    largest = _reduce_last(op, rewriter, "max", _unary(op, rewriter, "abs", centred))
    scale = _scalar_op(op, rewriter, "maximum", largest, float(np.finfo(np.float32).tiny))
    scaled = _binary_op(op, rewriter, "div", centred, scale)
    squares = _reduce_last(op, rewriter, "sum", _binary_op(op, rewriter, "mul", scaled, scaled))
    var = _scalar_op(op, rewriter, "mul", squares, 1.0 / (n - correction))
    std = _kept_dim(op, rewriter, _binary_op(op, rewriter, "mul",
                                             _unary(op, rewriter, "sqrt", var), scale))
    if root is not None:  # sqrt(var(x)), torch.std as export spells it: the sqrt is done
        root.results[0].replace_all_uses_with(std)
        root.detach()
        root.erase()
    return std


def _select_vector_norm(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """linalg.vector_norm over the last dim for ord 2, 1, inf and -inf."""
    _require_float(op)
    x = op.operands[0]
    _keepdim_last(op, x)
    if _arg(op, "dtype") is not None:
        raise _Unsupported("an explicit dtype")
    order = _number(op, "ord")
    order = 2.0 if order is None else order
    x = _cast_to(op, rewriter, x, op.results[0])
    if order == 2:
        return _kept_dim(op, rewriter, _unary(op, rewriter, "sqrt", _reduce_last(
            op, rewriter, "sum", _binary_op(op, rewriter, "mul", x, x))))
    if order not in (1, math.inf, -math.inf):
        raise _Unsupported(f"ord {order} (2, 1, inf and -inf are lowered)")
    magnitude = _unary(op, rewriter, "abs", x)
    kind = "sum" if order == 1 else "max" if order > 0 else "min"
    return _kept_dim(op, rewriter, _reduce_last(op, rewriter, kind, magnitude))


COMPOSITE_SELECTORS: dict[str, Selector] = {
    "aten.clamp.default": _select_clamp,
    "aten.clamp.Tensor": _select_clamp,
    "aten.clamp_min.default": _select_clamp,
    "aten.clamp_max.default": _select_clamp,
    "aten.clamp_min.Tensor": _select_clamp,
    "aten.clamp_max.Tensor": _select_clamp,
    "aten.hardtanh.default": _select_clamp,
    "aten.leaky_relu.default": _select_leaky_relu,
    "aten.elu.default": _select_elu,
    "aten.softplus.default": _select_softplus,
    "aten.mish.default": _select_mish,
    "aten.hardsigmoid.default": _select_hard_sigmoid,
    "aten.hardswish.default": _select_hard_sigmoid,
    "aten.pow.Scalar": _select_pow_scalar_base,
    "aten._log_softmax.default": _select_log_softmax,
    "aten.log_softmax.int": _select_log_softmax,
    "aten.logsumexp.default": _select_logsumexp,
    "aten.var.correction": _select_variance,
    "aten.std.correction": _select_variance,
    "aten.linalg_vector_norm.default": _select_vector_norm,
}


# ---- more data movement: repeat and last-dim padding ---------------------------------------

def _select_repeat(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """x.repeat(r_0, ..., r_n): along leading dims each r_i > 1 is a new size-1 dim in front
    of dim i broadcast by spyre.expand_rows, then merged into dim i (a free reshape: the
    innermost dim is kept); along the innermost dim a matmul by [I I ... I]."""
    x = op.operands[0]
    repeats = [r.value.data for r in _arg(op, "repeats").data]  # type: ignore[union-attr]
    shape = [1] * (len(repeats) - len(_shape(x))) + _shape(x)
    if shape != _shape(x):
        x = _emit(rewriter, op, ReshapeOp(x, _with_shape(x, shape)))
    if repeats[-1] != 1:
        _require_float(op)
        x = _column_matmul(op, rewriter, x, np.tile(np.eye(shape[-1]), (1, repeats[-1])),
                           f"{_fx_name(op)}.columns")
        shape = _shape(x)
    if all(r == 1 for r in repeats[:-1]):
        return x
    split = [d for r, n in zip(repeats[:-1], shape[:-1]) for d in (1, n)] + shape[-1:]
    wide = [d for r, n in zip(repeats[:-1], shape[:-1]) for d in (r, n)] + shape[-1:]
    x = _emit(rewriter, op, ReshapeOp(x, _with_shape(x, split)))
    x = _emit(rewriter, op, ExpandRowsOp(x, _with_shape(x, wide)))
    return _emit(rewriter, op, ReshapeOp(x, op.results[0].type))


def _select_pad(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """constant_pad_nd along the innermost dim: x @ P with P an identity shifted by the left
    padding (negative padding crops), plus a constant row holding `value` in the padded
    columns when it is not 0. Padding leading dims (new rows) is not lowered."""
    _require_float(op)
    x = op.operands[0]
    pad = [p.value.data for p in _arg(op, "pad").data]  # type: ignore[union-attr]
    if any(pad[2:]):
        raise _Unsupported(f"pad {pad} pads a leading dim (only the innermost dim is lowered)")
    left, right = pad[0], pad[1] if len(pad) > 1 else 0
    n = _shape(x)[-1]
    width = n + left + right
    matrix = np.zeros((n, width))
    for j in range(max(0, -left), min(n, width - left)):
        matrix[j, j + left] = 1.0
    y = _column_matmul(op, rewriter, x, matrix, f"{_fx_name(op)}.columns")
    value = float(_arg(op, "value", 0.0) or 0.0)  # type: ignore[arg-type]
    if value == 0.0:
        return y
    fill = np.zeros(width)
    fill[:max(left, 0)] = value
    fill[width - max(right, 0):] = value
    row = _constant(op, rewriter, f"{_fx_name(op)}.fill", fill, x.type.element_type)  # type: ignore[attr-defined]
    return _binary_op(op, rewriter, "add", y, row)


MOVE_SELECTORS: dict[str, Selector] = {
    "aten.repeat.default": _select_repeat,
    "aten.constant_pad_nd.default": _select_pad,
}


SELECTORS: dict[str, Selector] = {
    "aten.linear.default": _select_linear,
    "aten.addmm.default": _select_addmm,
    "aten.mm.default": _select_mm,
    "aten.bmm.default": _select_bmm,
    "aten.permute.default": _select_transpose,
    "aten.t.default": _select_transpose,
    "aten.transpose.int": _select_transpose,
    "aten.expand.default": _select_expand,
    "aten.scaled_dot_product_attention.default": _select_attention,
    "aten.gelu.default": _select_gelu,
    **{k: _select_unary for k in _UNARY},
    **{k: _select_binary for k in _BINARY},
    "aten.layer_norm.default": _select_layer_norm,
    "aten.native_layer_norm.default": _select_layer_norm,
    "aten.rms_norm.default": _select_rms_norm,
    "aten.softmax.int": _select_softmax,
    "aten._softmax.default": _select_softmax,
    "aten.sum.dim_IntList": _select_reduce,
    "aten.sum.default": _select_reduce,
    "aten.mean.dim": _select_reduce,
    "aten.mean.default": _select_reduce,
    "aten.amax.default": _select_reduce,
    "aten.amin.default": _select_reduce,
    "aten.pow.Tensor_Scalar": _select_pow,
    "aten.view.default": _select_reshape,
    "aten._unsafe_view.default": _select_reshape,
    "aten.reshape.default": _select_reshape,
    "aten.unsqueeze.default": _select_reshape,
    "aten.squeeze.dim": _select_reshape,
    "aten.squeeze.dims": _select_reshape,
    "aten.squeeze.default": _select_reshape,
    "aten.flatten.using_ints": _select_reshape,
    "aten.clone.default": _select_identity,
    "aten.contiguous.default": _select_identity,
    "aten.dropout.default": _select_identity,
    "aten._to_copy.default": _select_cast,
    "aten.to.dtype": _select_cast,
    "aten.slice.Tensor": _select_slice,
    "aten.cat.default": _select_cat,
    "aten.split_with_sizes.default": _select_split,
    "aten.split.Tensor": _select_split,
    "aten.select.int": _select_select,
    **COMPOSITE_SELECTORS,
    **MOVE_SELECTORS,
}

# ---- gathers of table rows by index (embedding, index_select along rows) ------------------

INDEX_ELEMENTS = ("i32", "i64")


def _gather_rows(op: AtenOp, rewriter: LegalizeRewriter, table: SSAValue, indices: SSAValue) -> Operation:
    """`table[indices]` for a 2-D float table and integer indices: a spyre.gather."""
    if len(_shape(table)) != 2:
        raise _Unsupported(f"a {len(_shape(table))}-D table {_shape(table)} (rows of a 2-D "
                           "table are gathered; reshape it to [rows, width] first)")
    if _element_name(table) not in FLOAT_ELEMENTS:
        raise _Unsupported(f"a {_element_name(table)} table (f16, bf16 and f32 tables)")
    if _element_name(indices) not in INDEX_ELEMENTS:
        raise _Unsupported(f"{_element_name(indices)} indices (int32 or int64 indices)")
    return GatherOp(table, indices, op.results[0].type, source_op=op)


def _select_embedding(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    """aten.embedding: rows of the weight by index. padding_idx only changes the gradient.
    The indices are checked against [0, V) when the gather runs (dma.gather faults)."""
    weight, indices = _operand(op, "weight"), _operand(op, "indices")
    if weight is None or indices is None:
        raise _Unsupported("a weight or indices that is not a tensor")
    return _gather_rows(op, rewriter, weight, indices)


def _select_index_select(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    """aten.index_select along dim 0 of a 2-D tensor is the same gather of rows."""
    table, index = _operand(op, "self"), _operand(op, "index")
    if table is None or index is None:
        raise _Unsupported("a source or index that is not a tensor")
    dim = _arg(op, "dim", 0)
    if len(_shape(table)) != 2 or dim % 2 != 0:  # type: ignore[operator]
        raise _Unsupported(f"along dim {dim} of a {_shape(table)} tensor (only rows of a 2-D "
                           "tensor, dim 0, are gathered; a gather of columns is a matmul by a "
                           "selection matrix when the index is constant)")
    return _gather_rows(op, rewriter, table, index)


def _scatter_rows(op: AtenOp, rewriter: LegalizeRewriter, table: SSAValue, dim: int,
                  index: SSAValue, values: SSAValue) -> Operation:
    """`table[..., index, :] = values` along dim -2 of a buffer, in place: a spyre.scatter."""
    shape = _shape(table)
    if len(shape) < 2 or dim % len(shape) != len(shape) - 2:
        raise _Unsupported(f"along dim {dim} of a {shape} tensor (rows are written along "
                           "the second-to-last dim, the sequence dim of a KV cache)")
    if not isinstance(table.owner, ParamOp):
        raise _Unsupported("into an activation (only buffers are updated, in place: the "
                           "KV-cache form `cache[:, :, pos] = k` / `cache.index_copy_(2, pos, "
                           "k)`)")
    if not table.has_one_use():
        raise _Unsupported(f"buffer '{table.owner.param_name.data}' is also read before the "
                           "update; the update happens in place, so read the updated value")
    if _element_name(table) not in FLOAT_ELEMENTS or _element_name(values) != _element_name(table):
        raise _Unsupported(f"{_element_name(values)} values into a {_element_name(table)} "
                           "buffer (f16, bf16 or f32, the same for both)")
    if _element_name(index) not in INDEX_ELEMENTS or len(_shape(index)) != 1:
        raise _Unsupported(f"a {_shape(index)} {_element_name(index)} index (1-D int32 or "
                           "int64 positions)")
    rows = shape[:-2] + _shape(index) + shape[-1:]
    given = _shape(values)
    if [1] * (len(rows) - len(given)) + given != rows:
        raise _Unsupported(f"values of shape {given} for {rows} rows (broadcast values are "
                           "not lowered; pass one row per position)")
    if given != rows:
        values = _emit(rewriter, op, ReshapeOp(values, _with_shape(values, rows)))
    return ScatterOp(table, index, values, source_op=op)


def _select_index_put(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    """index_put(cache, [None, .., None, pos], rows): rows written at positions pos of the
    second-to-last dim (torch.export writes both `cache[:, :, pos] = k` and
    `cache.index_copy_(2, pos, k)` so)."""
    if _arg(op, "accumulate", False):
        raise _Unsupported("accumulate=True (only writes of rows are lowered)")
    names = [n.data for n in op.operand_names.data]  # type: ignore[attr-defined]
    indexed = [int(n.split(".")[1]) for n in names if n.startswith("indices.")]
    table, values = _operand(op, "self"), _operand(op, "values")
    if len(indexed) != 1 or table is None or values is None:
        raise _Unsupported(f"tensor indices at dims {indexed} (one index tensor, at the "
                           "second-to-last dim, is lowered)")
    index = _operand(op, f"indices.{indexed[0]}")
    assert index is not None
    return _scatter_rows(op, rewriter, table, indexed[0], index, values)


def _select_index_copy(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    table, index, source = (_operand(op, n) for n in ("self", "index", "source"))
    if table is None or index is None or source is None:
        raise _Unsupported("an operand that is not a tensor")
    return _scatter_rows(op, rewriter, table, int(_arg(op, "dim", 0)), index, source)  # type: ignore[arg-type]


GATHER_SELECTORS: dict[str, Selector] = {
    "aten.embedding.default": _select_embedding,
    "aten.index_select.default": _select_index_select,
    "aten.index_put.default": _select_index_put,
    "aten.index_copy.default": _select_index_copy,
}
SELECTORS.update(GATHER_SELECTORS)


# ---- predicates: comparisons of integers, where, boolean attention masks ---------------------
#
# A boolean tensor lives on the device as an f32 tensor of 0.0 / 1.0 (a "predicate"), which
# is its numeric value, so a consumer that reads it as a number (a cast to float, a sum) is
# right as is; the ops made here carry `spyre.predicate` so `where` and attention can tell a
# predicate from a float tensor. A comparison of integers subtracts in f32 and clamps to
# [0, 1]: exact for integer values below 2^24 in magnitude (positions, lengths, token ids).

_COMPARE = {"le": (True, 1.0), "lt": (True, 0.0), "ge": (False, 1.0), "gt": (False, 0.0)}
INT_ELEMENTS = ("i32", "i64")


def is_predicate(value: SSAValue) -> bool:
    """Is `value` a 0/1 predicate made by a comparison (possibly reshaped or broadcast)?"""
    owner = through(value, (ReshapeOp, ExpandRowsOp, PermuteRowsOp)).owner
    return isinstance(owner, Operation) and "spyre.predicate" in owner.attributes


def _as_f32(op: AtenOp, rewriter: LegalizeRewriter, value: SSAValue) -> SSAValue:
    if _element_name(value) not in INT_ELEMENTS:
        raise _Unsupported(f"a {_element_name(value)} operand (comparisons of int32 / int64 "
                           "tensors are lowered; float comparisons are not exact as a clamp)")
    return _emit(rewriter, op, CastOp(value, TensorType(Float32Type(), _shape(value))))


def _mark(value: SSAValue) -> SSAValue:
    assert isinstance(value.owner, Operation)
    value.owner.attributes["spyre.predicate"] = UnitAttr()
    return value


def _select_compare(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """a <= b as clamp(b - a + 1, 0, 1), a < b as clamp(b - a, 0, 1) (ge, gt mirrored), a == b
    as 1 - clamp(|a - b|, 0, 1), a != b as clamp(|a - b|, 0, 1): 0.0 / 1.0 in f32."""
    kind = op.target.data.split(".")[1]
    a = _as_f32(op, rewriter, op.operands[0])
    if len(op.operands) == 2:
        b = _as_f32(op, rewriter, op.operands[1])
        # the result's shape: a column against a row broadcasts both (an outer difference:
        # position q against position kv)
        diff = _emit(rewriter, op, BINARY_OPS["sub"](
            a, b, TensorType(Float32Type(), _shape(op.results[0]))))
    else:
        other = _arg(op, "other")
        if not isinstance(other, int) or isinstance(other, bool):
            raise _Unsupported(f"a {type(other).__name__} scalar (an integer is lowered)")
        diff = _scalar_op(op, rewriter, "sub", a, float(other))
    # diff = a - b; shape it so that 1 means true after the clamp
    if kind in _COMPARE:
        flip, shift = _COMPARE[kind]
        if flip:  # le, lt: shift - (a - b)
            diff = _scalar_op(op, rewriter, "sub", diff, shift, reverse=True)
        elif shift:  # ge: (a - b) + 1
            diff = _scalar_op(op, rewriter, "add", diff, shift)
    else:
        diff = _emit(rewriter, op, UNARY_OPS["abs"](diff, diff.type))
    clamped = _scalar_op(op, rewriter, "minimum", _scalar_op(op, rewriter, "maximum", diff, 0.0),
                         1.0)
    if kind == "eq":
        clamped = _scalar_op(op, rewriter, "sub", clamped, 1.0, reverse=True)
    return _mark(clamped)


def _scalar_value(value: SSAValue) -> float | None:
    """The value of a one-element constant (a folded `scalar_tensor`), else None."""
    owner = value.owner
    if isinstance(owner, ParamOp) and owner.value is not None and _numel(value) == 1:
        return float(owner.value.get_values()[0])
    return None


def _select_where(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """where(p, a, b) = keep(a, p) + keep(b, 1 - p) in the result's type, where keep(x, q)
    is x where q is nonzero and -0.0 elsewhere (the SFU's KEEP). Exact for every value,
    NaN, infinities and signed zeros included: -0.0 is the additive identity of IEEE
    arithmetic, so the sum is the kept value itself. (A blend p * a + (1 - p) * b is not:
    0 * -inf is NaN, which turned every masked_fill(-inf) into NaN.)"""
    cond, a, b = op.operands
    if not is_predicate(cond):
        raise _Unsupported("a condition that is not a comparison of integers (predicates are "
                           "made by le/lt/ge/gt/eq/ne of int tensors)")
    if _element_name(op.results[0]) not in FLOAT_ELEMENTS:
        raise _Unsupported(f"{_element_name(op.results[0])} values (float where is lowered)")
    out = _shape(op.results[0])
    element = op.results[0].type.element_type  # type: ignore[attr-defined]

    def typed(v: SSAValue) -> SSAValue:
        if _element_name(v) != _element_name(op.results[0]):
            v = _emit(rewriter, op, CastOp(v, TensorType(element, _shape(v))))
        return _broadcast_rows(op, rewriter, v, out)

    def kept(value: SSAValue, where: SSAValue) -> SSAValue:
        constant = _scalar_value(value)
        if constant is not None:  # keep(s, q): the constant is the SFU's immediate
            return _scalar_op(op, rewriter, "keep", where, constant, reverse=True)
        return _binary_op(op, rewriter, "keep", typed(value), where)

    cond = typed(cond)
    not_cond = _scalar_op(op, rewriter, "sub", cond, 1.0, reverse=True)
    total = _binary_op(op, rewriter, "add", kept(a, cond), kept(b, not_cond))
    if _shape(total) != out:
        raise _Unsupported(f"a result of shape {out} from a {_shape(total)} condition (the "
                           "condition must have the result's shape)")
    return _cast_to(op, rewriter, total, op.results[0])


def _select_logical(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """and / or / not of predicates: product, maximum, 1 - p."""
    if "and" in op.target.data and len(op.operands) == 2:
        for keep, other in ((0, 1), (1, 0)):
            values = _int_constant(op.operands[other])
            if (values is not None and values.all() and is_predicate(op.operands[keep])
                    and _shape(op.operands[keep]) == _shape(op.results[0])):
                return op.operands[keep]  # p & True (a folded `new_ones` mask start)
    if not all(is_predicate(v) for v in op.operands):
        raise _Unsupported("an operand that is not a comparison of integers")
    kind = op.target.data
    if "not" in kind:
        return _mark(_scalar_op(op, rewriter, "sub", op.operands[0], 1.0, reverse=True))
    fn = "mul" if "and" in kind else "maximum"
    return _mark(_binary_op(op, rewriter, fn, op.operands[0], op.operands[1]))


def _select_attention_any_mask(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """SDPA whose boolean mask is a predicate: the mask becomes additive (p * 30000 - 30000,
    exactly 0 or -30000) in the query's type before the usual selection. A query whose keys
    are all masked gets zeros, as SDPA gives (the softmax of a row of -30000 would average
    every value): the output is multiplied by max(p) over the keys, 1 for a query that sees
    one key and 0 for one that sees none (exact either way)."""
    mask, query = _operand(op, "attn_mask"), _operand(op, "query")
    if mask is not None and query is not None and is_predicate(mask):
        sees = _reduce_last(op, rewriter, "max", mask)  # [..., L, 1]: 1 if a key is seen
        y = _select_attention_with_predicate(op, rewriter, mask, query)
        sees = _broadcast_rows(op, rewriter, sees, _shape(y), column=True)
        if _element_name(sees) != _element_name(y):  # cast where the product reads it
            sees = _emit(rewriter, op, CastOp(sees, _with_shape(y, _shape(sees))))
        return _binary_op(op, rewriter, "mul", y, sees)
    return _select_attention(op, rewriter)


def _select_attention_with_predicate(op: AtenOp, rewriter: LegalizeRewriter, mask: SSAValue,
                                     query: SSAValue) -> SSAValue:
    """SDPA with the predicate `mask` made additive (see `_select_attention_any_mask`)."""
    # one additive mask per predicate and query type, made at the first layer that reads
    # it and shared by the others (a decoder's layers share their mask)
    key = (mask, _element_name(query))
    additive = rewriter.additive_masks.get(key)
    if additive is None:
        scaled = _scalar_op(op, rewriter, "mul", mask, 30000.0)
        additive = _scalar_op(op, rewriter, "add", scaled, -30000.0)
        if _element_name(query) != "f32":
            additive = _emit(rewriter, op, CastOp(additive, _with_shape(query, _shape(mask))))
        rewriter.additive_masks[key] = additive
    names = [n.data for n in op.operand_names.data]  # type: ignore[attr-defined]
    op.operands[names.index("attn_mask")] = additive
    return _select_attention(op, rewriter)


def _select_cast_int(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """Casts from int32 / int64 (or a predicate) to a float type; float casts as before."""
    x = op.operands[0]
    if _element_name(op.results[0]) in FLOAT_ELEMENTS and (
            _element_name(x) in INT_ELEMENTS or is_predicate(x)):
        return _emit(rewriter, op, CastOp(x, op.results[0].type))
    return _select_cast(op, rewriter)


# ---- cumsum, argmax / argmin (and max / min with indices) over the last dim -----------------

def _select_cumsum(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """cumsum along the last dim: x @ U with U[i, j] = 1 for i <= j, a constant upper
    triangle (exact products, fp32 accumulation in the PT, as a K = n reduction)."""
    _require_float(op)
    x = op.operands[0]
    shape = _shape(x)
    if int(_arg(op, "dim", 0)) % len(shape) != len(shape) - 1:  # type: ignore[arg-type]
        raise _Unsupported(f"along dim {_arg(op, 'dim')} (only the last dim is lowered: a "
                           "matmul by a constant triangle)")
    if _element_name(x) != _element_name(op.results[0]):
        raise _Unsupported("a dtype argument that changes the element type")
    n = shape[-1]
    return _column_matmul(op, rewriter, x, np.triu(np.ones((n, n))), f"{_fx_name(op)}.triangle")


ARG_SCALE = 2.0**100  # twice: any nonzero fp32 difference (>= 2^-149) becomes >= 2^51


FLOAT32_MAX = float(np.finfo(np.float32).max)


def _first_match(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, best: SSAValue,
                 columns: SSAValue) -> SSAValue:
    """Per element, a value whose row minimum is the index of the first x_j equal to the
    row's `best` (its max or min), as torch's argmax / argmin define it, NaN and infinities
    included (design note 63):

    - c = clamp(x, -FLT_MAX, FLT_MAX) and p = keep(1, x - c) (1 where x is infinite) encode
      x finitely, NaN aside: x_j == best exactly when |c_j - c_b| + |p_j - p_b| is 0, so
      j + that * 2^200 is j at a match and at least 2^51 elsewhere (any nonzero fp32
      difference is at least 2^-149). A plain |best - x_j| is NaN at +-inf == +-inf;
    - a row holding a NaN has best = NaN (the SFU's max and min propagate it) and torch
      returns its first NaN: there the value is j at a NaN and j + 2^30 elsewhere, chosen
      with the exact select keep by the row's NaN flag."""
    def scalar(kind: str, value: SSAValue, number: float, reverse: bool = False) -> SSAValue:
        return _scalar_op(op, rewriter, kind, value, number, reverse=reverse)

    def binary(kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return _binary_op(op, rewriter, kind, a, b)

    def encode(value: SSAValue) -> tuple[SSAValue, SSAValue]:
        clamped = scalar("minimum", scalar("maximum", value, -FLOAT32_MAX), FLOAT32_MAX)
        return clamped, scalar("keep", binary("sub", value, clamped), 1.0, reverse=True)

    def distance(a: SSAValue, b: SSAValue) -> SSAValue:
        return _emit(rewriter, op, UNARY_OPS["abs"](binary("sub", a, b), a.type))

    (cx, px), (cb, pb) = encode(x), encode(best)
    gap = binary("add", distance(cx, cb), distance(px, pb))
    gap = scalar("mul", scalar("mul", gap, ARG_SCALE), ARG_SCALE)
    matched = binary("add", gap, columns)  # NaN throughout a row that holds a NaN
    is_nan = nonfinite(op, rewriter, cx)  # c is finite or NaN
    nan_first = binary("add", scalar("mul", scalar("sub", is_nan, 1.0, reverse=True), 2.0**30),
                       columns)
    row_nan = _reduce_last(op, rewriter, "max", is_nan)
    return binary("add", binary("keep", matched, scalar("sub", row_nan, 1.0, reverse=True)),
                  binary("keep", nan_first, row_nan))


def _select_arg_reduce(op: AtenOp, rewriter: LegalizeRewriter) -> list[SSAValue | None]:
    """argmax / argmin (and max.dim / min.dim's indices) over the last dim: with m the row's
    max (min), the index is the row minimum of `_first_match` (j at the first x_j equal to
    m, NaN first when the row has one, as torch), a row reduction; stored as int64 (int32
    on device)."""
    _require_float_inputs = [v for v in op.operands if _element_name(v) not in FLOAT_ELEMENTS]
    if _require_float_inputs:
        raise _Unsupported(f"a {_element_name(op.operands[0])} input (float inputs)")
    x = op.operands[0]
    shape = _shape(x)
    dim = _arg(op, "dim")
    if dim is None or int(dim) % len(shape) != len(shape) - 1:  # type: ignore[arg-type]
        raise _Unsupported(f"over dim {dim} (only the last dim is lowered so far)")
    keep = bool(_arg(op, "keepdim", False))
    kind = "max" if "max" in op.target.data else "min"
    f32 = TensorType(Float32Type(), shape)
    xf = _emit(rewriter, op, CastOp(x, f32)) if _element_name(x) != "f32" else x
    best = _reduce_last(op, rewriter, kind, xf)
    results: list[SSAValue | None] = []
    if len(op.results) == 2:  # max.dim / min.dim: the values, then the indices
        values = op.results[0]
        row = (best if keep else _column_to_row(op, rewriter, best, values)
               if math.prod(shape[:-1]) > 1 else
               _emit(rewriter, op, ReshapeOp(best, _with_shape(best, _shape(values)))))
        results.append(None if not values.uses else _cast_to(op, rewriter, row, values))
    indices = op.results[-1]
    if not indices.uses:  # made only when read: no dead ops reach spyre-fuse
        return [*results, None]
    columns = _constant(op, rewriter, f"{_fx_name(op)}.columns",
                        np.arange(shape[-1], dtype=np.float64)[None, :], Float32Type())
    if len(shape) == 1:
        columns = _emit(rewriter, op, ReshapeOp(columns, _with_shape(columns, shape)))
    first = _reduce_last(op, rewriter, "min", _first_match(op, rewriter, xf, best, columns))
    if not keep and math.prod(shape[:-1]) > 1:  # the indices move from a column to a row
        first = _column_to_row(op, rewriter, first, indices)
    result = _emit(rewriter, op, CastOp(first, _with_shape(indices, _shape(first))))
    if _shape(result) != _shape(indices):
        result = _emit(rewriter, op, ReshapeOp(result, indices.type))
    return [*results, result]


_UNARY.update({"aten.sin.default": "sin", "aten.cos.default": "cos"})  # run-time positions

SELECTORS.update({
    "aten.sin.default": _select_unary,
    "aten.cos.default": _select_unary,
    "aten.cumsum.default": _select_cumsum,
    "aten.argmax.default": _select_arg_reduce,
    "aten.argmin.default": _select_arg_reduce,
    "aten.max.dim": _select_arg_reduce,
    "aten.min.dim": _select_arg_reduce,
})

SELECTORS.update({
    **{f"aten.{k}.{form}": _select_compare for k in ("le", "lt", "ge", "gt", "eq", "ne")
       for form in ("Tensor", "Scalar")},
    "aten.where.self": _select_where,
    "aten.logical_and.default": _select_logical,
    "aten.bitwise_and.Tensor": _select_logical,
    "aten.logical_or.default": _select_logical,
    "aten.bitwise_or.Tensor": _select_logical,
    "aten.logical_not.default": _select_logical,
    "aten.bitwise_not.default": _select_logical,
    "aten.scaled_dot_product_attention.default": _select_attention_any_mask,
    "aten._to_copy.default": _select_cast_int,
    "aten.to.dtype": _select_cast_int,
})

# ---- integer arithmetic on run-time values (position ids): in f32 ---------------------------
# Hugging Face decoders given `position_ids` derive the attention mask from them: the packed
# sequence index cumsum(diff(pos) != 1) and each token's position as a column and as a row
# (`aten.index` by folded aranges), compared into a boolean mask. Integer tensors live on
# the device as int32; these ops run on them cast to f32 (exact below 2^24, positions and
# counts are far below) by the float lowering, and the result is cast back (`_select_via_f32`).
INT_VIA_F32 = {
    "aten.slice.Tensor", "aten.cat.default", "aten.cumsum.default", "aten.index.Tensor",
    *(f"aten.{k}.{form}" for k in ("add", "sub", "mul") for form in ("Tensor", "Scalar")),
    "aten.rsub.Scalar",
}


def _int_constant(value: SSAValue) -> np.ndarray | None:
    """The values of a small folded integer / boolean constant (`spyre.int_values`)."""
    owner = value.owner
    if isinstance(owner, ParamOp) and "spyre.int_values" in owner.attributes:
        values = owner.attributes["spyre.int_values"].get_values()  # type: ignore[attr-defined]
        return np.array(values, dtype=np.int64).reshape(_shape(value))
    return None


def _needs_f32(aten: AtenOp) -> bool:
    return (aten.target.data in INT_VIA_F32
            and any(_element_name(r) in INT_ELEMENTS for r in aten.results)
            and all(_element_name(v) in (*INT_ELEMENTS, "f32", "i1") for v in aten.operands))


def _select_via_f32(aten: AtenOp, rewriter: LegalizeRewriter, failures: list[str]) -> None:
    """`aten` on integer operands as the same op on their f32 casts (the index operands of
    `aten.index` stay: they are read as constants), its integer results cast back."""
    names = [n.data for n in aten.operand_names.data]  # type: ignore[attr-defined]
    operands = []
    for name, v in zip(names, aten.operands):
        if _element_name(v) in INT_ELEMENTS and not (
                aten.target.data == "aten.index.Tensor" and name != "self"):
            v = _emit(rewriter, aten, CastOp(v, TensorType(Float32Type(), _shape(v))))
        operands.append(v)
    result_types = [TensorType(Float32Type(), _shape(r)) if _element_name(r) in INT_ELEMENTS
                    else r.type for r in aten.results]
    clone = AtenOp.create(operands=operands, result_types=result_types,
                          properties=dict(aten.properties), attributes=dict(aten.attributes))
    rewriter.insert_op(clone, _before(aten))
    for old, new in zip(aten.results, clone.results):
        value = new if old.type == new.type else _emit(rewriter, aten, CastOp(new, old.type))
        old.replace_all_uses_with(value)
    rewriter.erase_op(aten)
    _select(clone, rewriter, failures)


def _select_index(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """x[i0, i1, ...] by constant index tensors (folded aranges: a position row read as a
    column `pos[b, q]` and as a row `pos[b, kv]`) of a one-row tensor: the row times a
    constant 0/1 selection matrix (exact), then reshaped to the result, through a device
    transpose when the result is a column."""
    x = _operand(op, "self")
    assert x is not None
    for v in (x, op.results[0]):
        if _element_name(v) not in FLOAT_ELEMENTS:
            raise _Unsupported(f"element type {_element_name(v)} (only f16, bf16, f32 so far)")
    shape = _shape(x)
    key: list[object] = [slice(None)] * len(shape)
    names = [n.data for n in op.operand_names.data]  # type: ignore[attr-defined]
    for name, value in zip(names, op.operands):
        if not name.startswith("indices."):
            continue
        values = _int_constant(value)
        if values is None:
            raise _Unsupported("an index tensor computed at run time (indices that depend on "
                               "no input are lowered, as a constant selection matrix)")
        key[int(name.split(".")[1])] = values
    picked = np.arange(max(math.prod(shape), 1)).reshape(shape)[tuple(key)]
    out = _shape(op.results[0])
    if list(picked.shape) != out:
        raise _Unsupported(f"indices selecting a {list(picked.shape)} result for {out}")
    if math.prod(shape[:-1]) != 1:
        raise _Unsupported(f"indexing a {shape} tensor (a tensor of one row is lowered: "
                           "a selection matrix over its columns)")
    if picked.size > MAX_ROW_MATRIX // max(shape[-1], 1):
        raise _Unsupported(f"a {shape[-1]} x {picked.size} selection matrix is too large")
    row = x if len(shape) == 2 else _emit(rewriter, op, ReshapeOp(x, _with_shape(x, [1, shape[-1]])))
    matrix = np.zeros((shape[-1], picked.size))
    matrix[picked.reshape(-1) % shape[-1], np.arange(picked.size)] = 1.0
    y = _column_matmul(op, rewriter, row, matrix, f"{_fx_name(op)}.select")
    if _shape(y) == out:
        return y
    if is_free_reshape(_shape(y), out, y.type.element_type):  # type: ignore[attr-defined]
        return _emit(rewriter, op, ReshapeOp(y, _with_shape(y, out)))
    return _restickify_reshape(op, rewriter, y, out)


SELECTORS["aten.index.Tensor"] = _select_index

# ops known to have no device lowering yet, with what to do instead
NOT_ON_DEVICE: dict[str, str] = {
    "aten.prod.dim_int": "a product reduction (not lowered: exp(sum(log|x|)) with a sign "
                         "count loses precision; multiply the factors explicitly)",
}


# ---- channels-last images (passes/graph/conv.py) ---------------------------------------------------
CHANNELS_LAST_ELEMENTWISE = {*_UNARY, *_BINARY, "aten.clone.default", "aten.dropout.default"}


def supported_targets() -> list[str]:
    return sorted(SELECTORS)


@dataclass(frozen=True)
class SpyreLegalize(ModulePass):
    """Select Spyre ops for imported ATen ops; report every unsupported op at once."""

    name = "spyre-legalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewriter = LegalizeRewriter()
        failures: list[str] = []
        # a reduction or softmax over a dim other than the last reduces the last dim of a
        # device transpose (see `move_reduced_dim`)
        move_reduced_dims_last(op)
        atens = [o for o in op.walk() if isinstance(o, AtenOp)]
        # eager attention first: its bmm, scale, mask add and softmax become one
        # spyre.attention (see `eager_attention`), and the matched chain is then dead
        for aten in [a for a in atens if a.target.data == "aten.bmm.default"]:
            if (match := match_eager_attention(aten)) is not None:
                _select_eager_attention(match, rewriter)
        _erase_dead_atens(atens)
        # concatenations first: they absorb the slices and negations feeding them (see
        # `_column_map`), which then have no uses left and are erased, not selected
        for aten in [a for a in atens if a.target.data == "aten.cat.default"]:
            _select(aten, rewriter, failures)
        _erase_dead_atens(atens)
        # convolution, batch norm and pooling: channels-last, with the elementwise ops
        # between them (`passes/graph/conv.py`); what it reports is not selected again
        reported = select_channels_last(op, rewriter, CHANNELS_LAST_ELEMENTWISE, failures)
        atens = [o for o in op.walk() if isinstance(o, AtenOp) and o not in reported]
        for aten in [a for a in atens if a.parent is not None]:
            _select(aten, rewriter, failures)
        _bool_outputs(op, failures)
        if failures:
            source = op.attributes.get("spyre.source")
            raise UnsupportedOpsError(
                source.data if isinstance(source, StringAttr) else "module", failures
            )
        _erase_dead_moves(op)
        _erase_dead_params(op)


def _bool_outputs(module: ModuleOp, failures: list[str]) -> None:
    """Boolean program outputs leave the device as the f32 0/1 predicates they are there;
    the graph function returns them as f32 and names them in `spyre.bool_outputs`, so the
    host converts them to torch.bool. A boolean output that is not a predicate is refused."""
    for fn in [o for o in module.walk() if isinstance(o, func.FuncOp)]:
        if fn.body.blocks.first is None or "grid" in fn.attributes:
            continue
        ret = fn.body.block.last_op
        names_attr = fn.attributes.get("spyre.output_names")
        if not isinstance(ret, func.ReturnOp) or not isinstance(names_attr, ArrayAttr):
            continue
        names = [n.data for n in names_attr.data]  # type: ignore[attr-defined]
        # the leading results update mutated buffers; the named outputs come last
        first = len(ret.arguments) - len(names)
        outputs = list(fn.function_type.outputs.data)
        bools = []
        for i, (name, value) in enumerate(zip(names, ret.arguments[first:])):
            declared = outputs[first + i]
            if not isinstance(declared, TensorType) or str(declared.element_type) != "i1":
                continue
            if isinstance(value.owner, AtenOp):
                continue  # its op is reported unsupported already
            if _element_name(value) != "f32" or not is_predicate(value):
                failures.append(f"program output {name}: a boolean tensor that is not a "
                                "comparison result; return it as a float tensor (.float())")
                continue
            outputs[first + i] = value.type
            bools.append(StringAttr(name))
        if bools:
            fn.function_type = FunctionType.from_lists(fn.function_type.inputs.data, outputs)
            fn.attributes["spyre.bool_outputs"] = ArrayAttr(bools)


def _select(aten: AtenOp, rewriter: LegalizeRewriter, failures: list[str]) -> None:
    """Replace one ATen op by its Spyre ops, or record why it cannot be."""
    if aten.parent is None:
        return  # erased by the selection of its producer (see `_kept_dim`)
    if _needs_f32(aten):
        _select_via_f32(aten, rewriter, failures)
        return
    selector = SELECTORS.get(aten.target.data)
    if selector is None:
        reason = NOT_ON_DEVICE.get(aten.target.data, "no Spyre lowering")
        failures.append(f"{describe(aten)}: {reason}")
        return
    try:
        result = selector(aten, rewriter)
    except _Unsupported as exc:
        failures.append(f"{describe(aten)}: {exc}")
        return
    if isinstance(result, Operation):
        rewriter.replace_op(aten, result)
    elif isinstance(result, list):
        for old, new in zip(aten.results, result):
            if new is not None:
                old.replace_all_uses_with(new)
        rewriter.erase_op(aten)
    else:
        aten.results[0].replace_all_uses_with(result)
        rewriter.erase_op(aten)


def _erase_dead_atens(atens: list[AtenOp]) -> None:
    """Erase ATen ops whose results are all unused (imported ops are pure), users first."""
    for aten in reversed(atens):
        if aten.parent is not None and aten.results and not any(r.uses for r in aten.results):
            aten.detach()
            aten.erase()


def _erase_dead_params(module: ModuleOp) -> None:
    for param in [o for o in module.walk() if isinstance(o, ParamOp)]:
        if not param.result.uses:
            param.detach()
            param.erase()

