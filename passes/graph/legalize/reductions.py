"""spyre-legalize patterns for reductions: sum, mean, amax and amin, var and std,
vector norms, cumsum, and argmax / argmin (with max.dim / min.dim).

A reduction over the last (stick) dim is a row reduction (`reduce_last`); sums and means
over leading dims are a matmul by a constant summation matrix (`_reduce_rows`); cumsum is a
matmul by a constant triangle; argmax / argmin a row minimum of an exact first-match
encoding (design notes 28 and 63). A keepdim=False result is either put in place of the
users that restore the dim, or moved from its column into a row (`kept_dim`).
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, Float32Type, TensorType
from xdsl.ir import SSAValue

from spyrec.dialects.spyre import REDUCE_OPS, UNARY_OPS, AtenOp, CastOp, MatmulOp, ReshapeOp
from spyrec.passes.graph.graph_build import binary_op as _binary_op
from spyrec.passes.graph.graph_build import constant as _constant
from spyrec.passes.graph.graph_build import element as _element_name
from spyrec.passes.graph.graph_build import emit as _emit
from spyrec.passes.graph.graph_build import exact_move, nonfinite
from spyrec.passes.graph.graph_build import fx_name as _fx_name
from spyrec.passes.graph.graph_build import scalar_op as _scalar_op
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.legalize.base import (
    FLOAT_ELEMENTS,
    INT_ELEMENTS,
    MAX_ROW_MATRIX,
    LegalizeRewriter,
    Selector,
    Unsupported,
    arg,
    cast_to,
    number_arg,
    require_float,
    unary_op,
    with_shape,
)
from spyrec.passes.graph.legalize.columns import column_matmul
from spyrec.passes.graph.legalize.movement import column_to_row
from spyrec.target.layout import STICK_BYTES


def last_dim_only(op: AtenOp, dims: object, rank: int) -> None:
    """Reductions and softmax are lowered over the innermost (stick) dimension only."""
    values = ([d.value.data for d in dims.data]
              if isinstance(dims, ArrayAttr) else [dims])
    if [v % rank for v in values if isinstance(v, int)] != [rank - 1]:
        raise Unsupported(f"over dims {values} (only the last dimension is lowered so far)")


def reduce_last(op: AtenOp, rewriter: LegalizeRewriter, kind: str, x: SSAValue) -> SSAValue:
    shape = _shape(x)
    if shape[-1] == 1:  # the sum, max or min of one column is that column
        return x
    return _emit(rewriter, op, REDUCE_OPS[kind](x, with_shape(x, [*shape[:-1], 1])))


_RESHAPE_TARGETS = ("aten.unsqueeze.default", "aten.view.default", "aten.reshape.default",
                    "aten._unsafe_view.default")


def _dim_restorers(op: AtenOp) -> list[AtenOp] | None:
    """For a last-dim reduction with keepdim=False: its users, if every one of them puts the
    reduced dim back as size 1 (`x - x.mean(-1)[..., None]`); None otherwise."""
    kept = [*_shape(op.operands[0])[:-1], 1]
    users = [use.operation for use in op.results[0].uses]
    if all(isinstance(u, AtenOp) and u.target.data in _RESHAPE_TARGETS
           and _shape(u.results[0]) == kept for u in users):
        return users  # type: ignore[return-value]
    return None


def kept_dim(op: AtenOp, rewriter: LegalizeRewriter, y: SSAValue) -> SSAValue:
    """The keepdim result `y` of a last-dim reduction: with keepdim=False it replaces the
    users that put the dim back (`_dim_restorers`), which are erased, or else moves from its
    column into a row (`column_to_row`); a scalar result (a 1-D input reduced whole) is a
    free reshape of it."""
    if not _shape(op.results[0]):
        return _emit(rewriter, op, ReshapeOp(y, op.results[0].type))
    if not arg(op, "keepdim", False):
        users = _dim_restorers(op)
        if users is None:
            return column_to_row(op, rewriter, y, op.results[0])
        for user in users:
            user.results[0].replace_all_uses_with(y)
            user.detach()
            user.erase()
    return y


def keepdim_last(op: AtenOp, x: SSAValue) -> None:
    last_dim_only(op, arg(op, "dim"), len(_shape(x)))
    if not arg(op, "keepdim", False):
        _dim_restorers(op)


def _reduced_dims(op: AtenOp, rank: int) -> list[int]:
    """The dims a reduction's `dim` argument names, normalised (none given: all of them)."""
    dims = arg(op, "dim")
    if dims is None or (isinstance(dims, ArrayAttr) and not dims.data):
        return list(range(rank))
    values = ([d.value.data for d in dims.data] if isinstance(dims, ArrayAttr)
              else [dims])
    return sorted({v % max(rank, 1) for v in values})  # type: ignore[operator]


MEANS = ("aten.mean.dim", "aten.mean.default")


def summation_refusal(lead: list[int], dims: list[int], element: str) -> str:
    """Why a sum over the leading dims `dims` of rows `lead` (in `element`) cannot be a
    matmul by a summation matrix (`_reduce_rows`), or "" when it can: the summed rows are
    the matmul's rhs rows, so they must be whole sticks, and the matrix must fit."""
    r_in = math.prod(lead)
    r_out = math.prod(n for d, n in enumerate(lead) if d not in dims)
    per_stick = STICK_BYTES // {"f32": 4}.get(element, 2)
    if r_in == r_out:
        return ""
    if r_in % per_stick:
        return (f"over leading dims {dims}: the {r_in} rows summed are not a multiple of "
                f"{per_stick} (a whole stick), as a matmul by a summation matrix needs")
    if r_in * r_out > MAX_ROW_MATRIX:
        return f"over leading dims {dims}: a {r_out} x {r_in} summation matrix is too large"
    return ""


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
        return x if shape == result else _emit(rewriter, op, ReshapeOp(x, with_shape(x, result)))
    refusal = summation_refusal(lead, dims, _element_name(x))
    if refusal:
        raise Unsupported(refusal)
    index = np.indices(lead).reshape(len(lead), -1)
    out_row = np.zeros(r_in, dtype=np.int64)
    for d in kept:
        out_row = out_row * lead[d] + index[d]
    matrix = np.zeros((r_out, r_in))
    matrix[out_row, np.arange(r_in)] = 1.0 / (r_in // r_out) if mean else 1.0
    flat = x if len(shape) == 2 else _emit(
        rewriter, op, ReshapeOp(x, with_shape(x, [r_in, shape[-1]])))
    rows = _constant(op, rewriter, f"{_fx_name(op)}.rows", matrix, x.type.element_type)  # type: ignore[attr-defined]
    y = exact_move(op, rewriter, flat, lambda value: _emit(
        rewriter, op, MatmulOp(rows, value, None, with_shape(x, [r_out, shape[-1]]))), matrix)
    if _shape(y) == _shape(op.results[0]):
        return y
    return _emit(rewriter, op, ReshapeOp(y, with_shape(x, _shape(op.results[0]))))


def _select_reduce(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    require_float(op)
    x = op.operands[0]
    rank = len(_shape(x))
    dims = _reduced_dims(op, rank)
    target = op.target.data
    mean = target in MEANS
    if target in ("aten.sum.dim_IntList", "aten.sum.default", *MEANS) and rank > 1 \
            and dims != [rank - 1]:
        x = cast_to(op, rewriter, x, op.results[0])
        leading = [d for d in dims if d < rank - 1]
        if rank - 1 not in dims:
            return _reduce_rows(op, rewriter, x, leading, mean)
        # the stick dim first (a row reduction), then the leading dims (a matmul)
        out = _shape(op.results[0])
        if out and out[-1] != 1:
            raise Unsupported(f"over dims {dims} to a {out} result (the sums would have to "
                              "move from a column into a row; keep the last dim)")
        y = reduce_last(op, rewriter, "sum", x)
        if mean:
            y = _scalar_op(op, rewriter, "mul", y, 1.0 / _shape(x)[-1])
        return _reduce_rows(op, rewriter, y, leading, mean)
    if dims != [rank - 1]:
        raise Unsupported(f"over dims {dims} (the last dim, or sums and means over leading "
                          "dims, are lowered)")
    if not arg(op, "keepdim", False) and _shape(op.results[0]):
        _dim_restorers(op)
    target = op.target.data
    kind = {"aten.amax.default": "max", "aten.amin.default": "min"}.get(target, "sum")
    y = reduce_last(op, rewriter, kind, cast_to(op, rewriter, x, op.results[0]) if
                    _element_name(x) != _element_name(op.results[0]) else x)
    if mean:
        y = _scalar_op(op, rewriter, "mul", y, 1.0 / _shape(x)[-1])
    return kept_dim(op, rewriter, y)


def _select_variance(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """var / std over the last dim: the centred sum of squares (two passes, as torch's)
    over n - correction; std (or sqrt of a var used only there) scales the centred values
    by their largest magnitude first."""
    require_float(op)
    x = op.operands[0]
    keepdim_last(op, x)
    n = _shape(x)[-1]
    correction = number_arg(op, "correction")
    correction = 1.0 if correction is None else correction
    if n - correction <= 0:
        raise Unsupported(f"{n} elements with correction {correction} (a division by zero)")
    x = cast_to(op, rewriter, x, op.results[0])
    mean = _scalar_op(op, rewriter, "mul", reduce_last(op, rewriter, "sum", x), 1.0 / n)
    centred = _binary_op(op, rewriter, "sub", x, mean)
    users = [use.operation for use in op.results[0].uses]
    root = users[0] if len(users) == 1 and isinstance(users[0], AtenOp) \
        and users[0].target.data == "aten.sqrt.default" else None
    if op.target.data != "aten.std.correction" and root is None:
        squares = reduce_last(op, rewriter, "sum",
                              _binary_op(op, rewriter, "mul", centred, centred))
        return kept_dim(op, rewriter, _scalar_op(op, rewriter, "mul", squares,
                                                 1.0 / (n - correction)))
    # std = s * sqrt(sum((c / s)^2) / (n - correction)) with s = max |c| (at least the
    # smallest normal f32): the squares stay in range where c^2 would overflow (a row
    # holding 1e30 has a finite std, as torch computes it); NaN and inf still propagate
    largest = reduce_last(op, rewriter, "max", unary_op(op, rewriter, "abs", centred))
    scale = _scalar_op(op, rewriter, "maximum", largest, float(np.finfo(np.float32).tiny))
    scaled = _binary_op(op, rewriter, "div", centred, scale)
    squares = reduce_last(op, rewriter, "sum", _binary_op(op, rewriter, "mul", scaled, scaled))
    var = _scalar_op(op, rewriter, "mul", squares, 1.0 / (n - correction))
    std = kept_dim(op, rewriter, _binary_op(op, rewriter, "mul",
                                            unary_op(op, rewriter, "sqrt", var), scale))
    if root is not None:  # sqrt(var(x)), torch.std as export spells it: the sqrt is done
        root.results[0].replace_all_uses_with(std)
        root.detach()
        root.erase()
    return std


def _norm_over_dims(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, dims: list[int],
                    order: float) -> SSAValue:
    """ord 2 or 1 over dims other than the last alone (ConvNeXt V2's global response norm
    over H and W): |x| or x * x in f32 (an f16 square overflows from 256), summed over the
    stick dim if it is one of them (kept as a column), then over the leading dims by a
    summation matrix (`_reduce_rows`), the root, the result's element type."""
    if order not in (1, 2):
        raise Unsupported(f"ord {order} over dims {dims} (ord 1 and 2 are lowered there, "
                          "inf and -inf over the last dim only)")
    rank = len(_shape(x))
    out = _shape(op.results[0])
    if rank - 1 in dims and (not out or out[-1] != 1):
        raise Unsupported(f"over dims {dims} to a {out} result (the sums would have to move "
                          "from a column into a row; keepdim=True)")
    wide = x if _element_name(x) == "f32" else _emit(
        rewriter, op, CastOp(x, TensorType(Float32Type(), _shape(x))))
    terms = (_binary_op(op, rewriter, "mul", wide, wide) if order == 2
             else unary_op(op, rewriter, "abs", wide))
    if rank - 1 in dims:
        terms = reduce_last(op, rewriter, "sum", terms)
    y = _reduce_rows(op, rewriter, terms, [d for d in dims if d < rank - 1], False)
    if order == 2:
        y = unary_op(op, rewriter, "sqrt", y)
    return cast_to(op, rewriter, y, op.results[0])


def _select_vector_norm(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """linalg.vector_norm over the last dim for ord 2, 1, inf and -inf; over other dims
    for ord 2 and 1 (`_norm_over_dims`)."""
    require_float(op)
    x = op.operands[0]
    if arg(op, "dtype") is not None:
        raise Unsupported("an explicit dtype")
    order = number_arg(op, "ord")
    order = 2.0 if order is None else order
    rank = len(_shape(x))
    dims = _reduced_dims(op, rank)
    if rank > 1 and dims != [rank - 1]:
        return _norm_over_dims(op, rewriter, x, dims, order)
    keepdim_last(op, x)
    x = cast_to(op, rewriter, x, op.results[0])
    if order == 2:
        return kept_dim(op, rewriter, unary_op(op, rewriter, "sqrt", reduce_last(
            op, rewriter, "sum", _binary_op(op, rewriter, "mul", x, x))))
    if order not in (1, math.inf, -math.inf):
        raise Unsupported(f"ord {order} (2, 1, inf and -inf are lowered)")
    magnitude = unary_op(op, rewriter, "abs", x)
    kind = "sum" if order == 1 else "max" if order > 0 else "min"
    return kept_dim(op, rewriter, reduce_last(op, rewriter, kind, magnitude))


def _select_cumsum(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """cumsum along the last dim: x @ U with U[i, j] = 1 for i <= j, a constant upper
    triangle (exact products, fp32 accumulation in the PT, as a K = n reduction)."""
    require_float(op)
    x = op.operands[0]
    shape = _shape(x)
    if int(arg(op, "dim", 0)) % len(shape) != len(shape) - 1:  # type: ignore[arg-type]
        raise Unsupported(f"along dim {arg(op, 'dim')} (only the last dim is lowered: a "
                          "matmul by a constant triangle)")
    if _element_name(x) != _element_name(op.results[0]):
        raise Unsupported("a dtype argument that changes the element type")
    n = shape[-1]
    return column_matmul(op, rewriter, x, np.triu(np.ones((n, n))), f"{_fx_name(op)}.triangle")


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
    row_nan = reduce_last(op, rewriter, "max", is_nan)
    return binary("add", binary("keep", matched, scalar("sub", row_nan, 1.0, reverse=True)),
                  binary("keep", nan_first, row_nan))


def _select_arg_reduce(op: AtenOp, rewriter: LegalizeRewriter) -> list[SSAValue | None]:
    """argmax / argmin (and max.dim / min.dim's indices) over the last dim: with m the row's
    max (min), the index is the row minimum of `_first_match` (j at the first x_j equal to
    m, NaN first when the row has one, as torch), a row reduction; stored as int64 (int32
    on device)."""
    x = op.operands[0]
    integer = _element_name(x) in INT_ELEMENTS  # compared in f32: exact below 2^24 (note 28c)
    if _element_name(x) not in FLOAT_ELEMENTS and not (integer and len(op.results) == 1):
        raise Unsupported(f"a {_element_name(x)} input (float inputs; integer ones for "
                          "argmax / argmin)")
    shape = _shape(x)
    dim = arg(op, "dim")
    if dim is None or int(dim) % len(shape) != len(shape) - 1:  # type: ignore[arg-type]
        raise Unsupported(f"over dim {dim} (only the last dim is lowered so far)")
    keep = bool(arg(op, "keepdim", False))
    kind = "max" if "max" in op.target.data else "min"
    f32 = TensorType(Float32Type(), shape)
    xf = _emit(rewriter, op, CastOp(x, f32)) if _element_name(x) != "f32" else x
    best = reduce_last(op, rewriter, kind, xf)
    results: list[SSAValue | None] = []
    if len(op.results) == 2:  # max.dim / min.dim: the values, then the indices
        values = op.results[0]
        row = (best if keep else column_to_row(op, rewriter, best, values)
               if math.prod(shape[:-1]) > 1 else
               _emit(rewriter, op, ReshapeOp(best, with_shape(best, _shape(values)))))
        results.append(None if not values.uses else cast_to(op, rewriter, row, values))
    indices = op.results[-1]
    if not indices.uses:  # made only when read: no dead ops reach spyre-fuse
        return [*results, None]
    columns = _constant(op, rewriter, f"{_fx_name(op)}.columns",
                        np.arange(shape[-1], dtype=np.float64)[None, :], Float32Type())
    if len(shape) == 1:
        columns = _emit(rewriter, op, ReshapeOp(columns, with_shape(columns, shape)))
    first = reduce_last(op, rewriter, "min", _first_match(op, rewriter, xf, best, columns))
    if not keep and math.prod(shape[:-1]) > 1:  # the indices move from a column to a row
        first = column_to_row(op, rewriter, first, indices)
    result = _emit(rewriter, op, CastOp(first, with_shape(indices, _shape(first))))
    if _shape(result) != _shape(indices):
        result = _emit(rewriter, op, ReshapeOp(result, indices.type))
    return [*results, result]


SELECTORS: dict[str, Selector] = {
    "aten.sum.dim_IntList": _select_reduce,
    "aten.sum.default": _select_reduce,
    "aten.mean.dim": _select_reduce,
    "aten.mean.default": _select_reduce,
    "aten.amax.default": _select_reduce,
    "aten.amin.default": _select_reduce,
    "aten.var.correction": _select_variance,
    "aten.std.correction": _select_variance,
    "aten.linalg_vector_norm.default": _select_vector_norm,
    "aten.cumsum.default": _select_cumsum,
    "aten.argmax.default": _select_arg_reduce,
    "aten.argmin.default": _select_arg_reduce,
    "aten.max.dim": _select_arg_reduce,
    "aten.min.dim": _select_arg_reduce,
}
