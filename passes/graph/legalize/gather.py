"""spyre-legalize patterns that pick elements by index: gathers and scatters of rows by
run-time index, and every data movement whose element map is a compile-time constant.

- Run-time indices: `embedding`, `index_select` and `index.Tensor` (one index tensor, at
  any dim: position ids, a relative-position bias table read by buckets) become
  `spyre.gather` of the rows of a 2-D table; the indexed dim is first made the rows of that
  table (a free reshape when nothing else is in front of it, a device transpose when it is
  the innermost dim), so `dma.gather` checks every index against that dim's extent when it
  runs. Row writes into a buffer at run-time positions (`index_put` with `[None, .., pos]`,
  `index_copy` along dim -2: a KV-cache append) become `spyre.scatter`, done in place.
- Constant element maps (`flip`, `as_strided`, `unfold`, `index.Tensor` by folded indices:
  reflect and replicate padding, `constant_pad_nd` of leading dims): the flat source
  element of each result element is worked out at compile time (`element_map`) and split
  into a row part, a constant `spyre.gather` of whole rows (DMA only), and a column part,
  one column map shared by every row (`columns.column_matmul`: a stick move or an exact
  matmul by a 0/1 matrix). A map that is not of that form is refused (design note 71).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import TensorType, i64
from xdsl.ir import Operation, SSAValue

from spyrec.dialects.spyre import (
    ELEMENT_BYTES,
    AtenOp,
    ExpandRowsOp,
    GatherOp,
    ParamOp,
    ReshapeOp,
    ScatterOp,
    SliceRowsOp,
    is_free_reshape,
)
from spyrec.passes.graph.graph_build import binary_op as _binary_op
from spyrec.passes.graph.graph_build import constant as _constant
from spyrec.passes.graph.graph_build import dense_values
from spyrec.passes.graph.graph_build import element as _element_name
from spyrec.passes.graph.graph_build import emit as _emit
from spyrec.passes.graph.graph_build import fx_name as _fx_name
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.legalize.base import (
    FLOAT_ELEMENTS,
    LegalizeRewriter,
    Selector,
    Unsupported,
    arg,
    int_constant,
    operand,
    with_shape,
)
from spyrec.passes.graph.legalize.columns import _select_index as _select_one_row_index
from spyrec.passes.graph.legalize.columns import _select_pad as _select_last_dim_pad
from spyrec.passes.graph.legalize.columns import column_matmul
from spyrec.passes.graph.legalize.movement import (
    device_transpose,
    permute,
    restickify_reshape,
    transposed_weight,
)
from spyrec.passes.graph.legalize.predicates import is_predicate, select_between
from spyrec.passes.graph.legalize.reductions import reduce_last
from spyrec.target import MIB

INDEX_ELEMENTS = ("i32", "i64")


def _gather_rows(op: AtenOp, rewriter: LegalizeRewriter, table: SSAValue,
                 indices: SSAValue, result: TensorType | None = None) -> GatherOp:
    """`table[indices]` for a 2-D float table and integer indices: a spyre.gather (of the
    op's result type unless `result` is given)."""
    if len(_shape(table)) != 2:
        raise Unsupported(f"a {len(_shape(table))}-D table {_shape(table)} (rows of a 2-D "
                          "table are gathered; reshape it to [rows, width] first)")
    if _element_name(table) not in FLOAT_ELEMENTS:
        raise Unsupported(f"a {_element_name(table)} table (f16, bf16 and f32 tables)")
    if _element_name(indices) not in INDEX_ELEMENTS:
        raise Unsupported(f"{_element_name(indices)} indices (int32 or int64 indices)")
    rows, width = _shape(table)
    stick = rewriter.target.stick_bytes
    span = rows * -(-width * ELEMENT_BYTES[_element_name(table)] // stick) * stick
    if span > rewriter.target.per_core_span_bytes:  # any core may read any of its rows
        raise Unsupported(
            f"a table of {rows} rows of {width} spanning {span / MIB:.1f} MiB, beyond the "
            f"{rewriter.target.per_core_span_bytes // MIB} MiB of one tensor a core may "
            "address: a gather by run-time index may read any row (split the table into "
            "tables under that size, or a vocabulary this large in a smaller dtype)")
    return GatherOp(table, indices, result or op.results[0].type, source_op=op)


def _select_embedding(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    """aten.embedding: rows of the weight by index. padding_idx only changes the gradient.
    The indices are checked against [0, V) when the gather runs (dma.gather faults)."""
    weight, indices = operand(op, "weight"), operand(op, "indices")
    if weight is None or indices is None:
        raise Unsupported("a weight or indices that is not a tensor")
    return _gather_rows(op, rewriter, weight, indices)


def _select_index_select(op: AtenOp, rewriter: LegalizeRewriter) -> Operation | SSAValue:
    """aten.index_select along dim 0 of a 2-D tensor is the same gather of rows; along any
    other dim the gather of `gather_along`."""
    table, index = operand(op, "self"), operand(op, "index")
    if table is None or index is None:
        raise Unsupported("a source or index that is not a tensor")
    dim = int(arg(op, "dim", 0)) % max(len(_shape(table)), 1)  # type: ignore[arg-type]
    if len(_shape(table)) == 2 and dim == 0:
        return _gather_rows(op, rewriter, table, index)
    return gather_along(op, rewriter, table, dim, index)


# ---- gathers by run-time index along any dim --------------------------------------------------

def _require_float_data(x: SSAValue) -> None:
    """Moved data is f16, bf16 or f32 (integer tensors are moved as f32 casts by the
    caller, `spyre_legalize.INT_VIA_F32`)."""
    if _element_name(x) not in FLOAT_ELEMENTS:
        raise Unsupported(f"moving {_element_name(x)} data (f16, bf16 and f32 tensors)")


def reshape_to(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, out: list[int]) -> SSAValue:
    """x with the shape `out` (same elements, row-major): a free reshape when the bytes stay
    in place, else a restickify through device transposes."""
    if _shape(x) == out:
        return x
    if is_free_reshape(_shape(x), out, x.type.element_type):  # type: ignore[attr-defined]
        return _emit(rewriter, op, ReshapeOp(x, with_shape(x, out)))
    return restickify_reshape(op, rewriter, x, out)


def _gather_innermost(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue,
                      index: SSAValue) -> SSAValue:
    """x [..., N] indexed along its innermost dim by `index` -> [..., *index.shape]: the
    columns become rows (a weight transposed when it is stored, a device transpose
    otherwise), the rows are gathered and the result is transposed back."""
    shape = _shape(x)
    lead, ids = shape[:-1], _shape(index)
    rows = reshape_to(op, rewriter, x, [math.prod(lead), shape[-1]])
    table = (transposed_weight(op, rows, rewriter) if isinstance(rows.owner, ParamOp)
             else device_transpose(op, rewriter, rows))  # [N, R]
    picked = _emit(rewriter, op, _gather_rows(op, rewriter, table, index,
                                              with_shape(x, [*ids, math.prod(lead)])))
    flat = reshape_to(op, rewriter, picked, [math.prod(ids), math.prod(lead)])
    return reshape_to(op, rewriter, device_transpose(op, rewriter, flat), [*lead, *ids])


def gather_along(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, dim: int,
                 index: SSAValue) -> SSAValue:
    """`x` indexed along `dim` by a run-time integer tensor (torch `index_select`, or
    `x[..., index, ...]` with one index tensor): the result has `index.shape` in place of
    `dim`. The indexed dim is made the rows of a 2-D table (dim 0 of a tensor with nothing
    else in front, or whole sticks behind it: a reshape; else moved innermost and through
    `_gather_innermost`), so `dma.gather` checks each index against that dim's extent."""
    shape = _shape(x)
    rank = len(shape)
    _require_float_data(x)
    if rank < 2 and dim == 0:
        x = reshape_to(op, rewriter, x, [1, *shape])
        return reshape_to(op, rewriter, _gather_innermost(op, rewriter, x, index),
                          _shape(op.results[0]))
    ids = _shape(index)
    out = [*shape[:dim], *ids, *shape[dim + 1:]]
    if dim == rank - 1:
        return reshape_to(op, rewriter, _gather_innermost(op, rewriter, x, index), out)
    others = [d for d in range(rank - 1) if d != dim]
    front = permute(op, rewriter, x, [dim, *others, rank - 1])  # [L, *rest, N]
    rest = [shape[d] for d in others]
    wide = [shape[dim], math.prod(rest) * shape[-1]]
    if is_free_reshape(_shape(front), wide, x.type.element_type):  # type: ignore[attr-defined]
        table = reshape_to(op, rewriter, front, wide)
        picked = _emit(rewriter, op, GatherOp(table, index, with_shape(x, [*ids, wide[1]]),
                                              source_op=op))
        picked = reshape_to(op, rewriter, picked, [*ids, *rest, shape[-1]])
        order = [*range(len(ids), len(ids) + dim), *range(len(ids)),
                 *range(len(ids) + dim, len(ids) + len(rest) + 1)]
        return permute(op, rewriter, picked, order)
    inner = permute(op, rewriter, x, [*others, rank - 1, dim])  # [*rest, N, L]
    picked = _gather_innermost(op, rewriter, inner, index)  # [*rest, N, *ids]
    k = len(rest)
    order = [*range(dim), *range(k + 1, k + 1 + len(ids)), *range(dim, k), k]
    return permute(op, rewriter, picked, order)


def _one_hot(op: AtenOp, rewriter: LegalizeRewriter, index: SSAValue, n: int,
             like: SSAValue) -> SSAValue:
    """[*index.shape, n]: row index[i] of the n x n identity in `like`'s element type, a
    `spyre.gather`, so every index is checked against [0, n) when it runs."""
    if _element_name(index) not in INDEX_ELEMENTS:
        raise Unsupported(f"{_element_name(index)} indices (int32 or int64 indices)")
    eye = _constant(op, rewriter, f"{_fx_name(op)}.one_hot", np.eye(n),
                    like.type.element_type)  # type: ignore[attr-defined]
    return _emit(rewriter, op, GatherOp(eye, index, with_shape(like, [*_shape(index), n]),
                                        source_op=op))


def _rows_of(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, lead: list[int]) -> SSAValue:
    """x with its leading dims cut to `lead` (torch.gather and scatter_add read only the
    index's extent of the other dims): slices of rows."""
    for dim, size in enumerate(lead):
        if size != _shape(x)[dim]:
            x = _emit(rewriter, op, SliceRowsOp(x, dim, 0, 1, with_shape(
                x, [*_shape(x)[:dim], size, *_shape(x)[dim + 1:]])))
    return x


def _gather_elements_last(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue,
                          index: SSAValue) -> SSAValue:
    """x [*L, N] gathered along its innermost dim: out[..., j] = x[..., index[..., j]] for
    index [*L', J]. The one-hot rows of the indices keep x's element where they hold their
    1 (-0.0, the additive identity, elsewhere), and a row sum adds the one element to
    -0.0s: exact for every value, NaN and infinities included. The [*L', J, 1] column of
    results is transposed into the row [*L', J]."""
    ids = _shape(index)
    n = _shape(x)[-1]
    wide = reshape_to(op, rewriter, _rows_of(op, rewriter, x, ids[:-1]), [*ids[:-1], 1, n])
    if ids[-1] != 1:
        wide = _emit(rewriter, op, ExpandRowsOp(wide, with_shape(x, [*ids, n])))
    picked = _binary_op(op, rewriter, "keep", wide, _one_hot(op, rewriter, index, n, x))
    column = reduce_last(op, rewriter, "sum", picked)
    return reshape_to(op, rewriter, device_transpose(op, rewriter, column), ids)


def _scatter_add_last(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, index: SSAValue,
                      src: SSAValue) -> SSAValue:
    """x [*L, N] with src [*L, J] added along its innermost dim at index [*L, J]: each
    source element repeated along N is kept where its one-hot row holds its 1, the
    [*L, J, N] contributions are summed over J (a device transpose and a row sum; -0.0
    elsewhere, so NaN and infinities land only where they are added) and added to x."""
    ids = _shape(index)
    n = _shape(x)[-1]
    if _shape(src) != ids or ids[:-1] != _shape(x)[:-1]:
        raise Unsupported(f"index {ids} and src {_shape(src)} for a {_shape(x)} tensor (an "
                          "index of src's shape, covering every leading index of self)")
    column = reshape_to(op, rewriter, src, [*ids, 1])
    wide = column_matmul(op, rewriter, column, np.ones((1, n)), f"{_fx_name(op)}.repeat")
    kept = _binary_op(op, rewriter, "keep", wide, _one_hot(op, rewriter, index, n, x))
    count = len(ids)
    by_column = permute(op, rewriter, kept, [*range(count - 1), count, count - 1])
    summed = reduce_last(op, rewriter, "sum", by_column)  # [*L, N, 1]
    added = reshape_to(op, rewriter, device_transpose(op, rewriter, summed), _shape(x))
    return _binary_op(op, rewriter, "add", x, added)


def _on_last_dim(op: AtenOp, rewriter: LegalizeRewriter, values: list[SSAValue],
                 compute: Callable[..., SSAValue]) -> SSAValue:
    """`compute` along the op's `dim` of same-rank `values` (1-D ones as one row): that dim
    is swapped with the innermost one first (device transposes) and swapped back after."""
    rank = len(_shape(values[0]))
    if rank < 2:
        values = [reshape_to(op, rewriter, v, [1, *_shape(v)]) for v in values]
    dim = int(arg(op, "dim", 0)) % max(rank, 1) + (1 if rank < 2 else 0)  # type: ignore[arg-type]
    swap = list(range(max(rank, 2)))
    swap[dim], swap[-1] = swap[-1], swap[dim]
    result = compute(*(permute(op, rewriter, v, swap) for v in values))
    return reshape_to(op, rewriter, permute(op, rewriter, result, swap), _shape(op.results[0]))


def _select_gather(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """torch.gather(x, dim, index) by a run-time index along any dim
    (`_gather_elements_last` on the dim made innermost)."""
    x, index = operand(op, "self"), operand(op, "index")
    if x is None or index is None:
        raise Unsupported("a source or index that is not a tensor")
    _require_float_data(x)
    return _on_last_dim(op, rewriter, [x, index],
                        lambda a, i: _gather_elements_last(op, rewriter, a, i))


def _select_scatter_add(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """x.scatter_add(dim, index, src) by a run-time index along any dim
    (`_scatter_add_last` on the dim made innermost)."""
    x, index, src = (operand(op, n) for n in ("self", "index", "src"))
    if x is None or index is None or src is None:
        raise Unsupported("a self, index or src that is not a tensor")
    _require_float_data(x)
    if _element_name(src) != _element_name(x):
        raise Unsupported(f"{_element_name(src)} src into a {_element_name(x)} tensor")
    return _on_last_dim(op, rewriter, [x, index, src],
                        lambda a, i, v: _scatter_add_last(op, rewriter, a, i, v))


def _refuse_scatter(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """scatter without a reduction: refused with what to write instead."""
    raise Unsupported("writes of elements at run-time indices: with duplicate indices the "
                      "result depends on the order of the writes, which the device does not "
                      "keep; write `x.scatter_add(dim, index, src)` on a tensor zeroed at "
                      "those places, or `torch.where` with a one-hot mask")


def _select_embedding_bag(op: AtenOp, rewriter: LegalizeRewriter) -> list[SSAValue | None]:
    """_embedding_bag in sum or mean mode with constant offsets (2-D indices of one bag
    size export with a folded arange): the rows are gathered (`spyre.gather`), transposed
    [D, K], multiplied by the constant [K, B] bag matrix (1, or 1/size for a mean: an
    exact move, note 63) and transposed back to [B, D]. Only the first result (the bags)
    may be used."""
    weight, indices, offsets = (operand(op, n) for n in ("weight", "indices", "offsets"))
    if weight is None or indices is None or offsets is None:
        raise Unsupported("a weight, indices or offsets that is not a tensor")
    mode = int(arg(op, "mode", 0))  # type: ignore[arg-type]
    if mode not in (0, 1):
        raise Unsupported("mode='max' (sum and mean bags are lowered)")
    if operand(op, "per_sample_weights") is not None or int(arg(op, "padding_idx", -1) or -1) >= 0:  # type: ignore[arg-type]
        raise Unsupported("per_sample_weights or padding_idx (plain sum and mean bags are "
                          "lowered; multiply the gathered rows explicitly instead)")
    if any(r.uses for r in op.results[1:]):
        raise Unsupported("a use of offset2bag, bag_size or max_indices (only the bags)")
    starts = int_constant(offsets)
    if starts is None or len(_shape(indices)) != 1:
        raise Unsupported("offsets computed at run time (bags whose sizes are known only "
                          "when the program runs are not lowered): pass 2-D indices "
                          "[bags, bag size] without offsets, or constant offsets")
    count = _shape(indices)[0]
    ends = list(starts[1:]) + ([] if arg(op, "include_last_offset", False) else [count])
    starts = starts[:len(ends)]
    bags = np.zeros((count, len(ends)))
    for b, (start, end) in enumerate(zip(starts, ends)):
        if end > start:
            bags[start:end, b] = 1.0 / (end - start) if mode == 1 else 1.0
    rows = _emit(rewriter, op, _gather_rows(op, rewriter, weight, indices, with_shape(
        weight, [count, _shape(weight)[-1]])))
    summed = column_matmul(op, rewriter, device_transpose(op, rewriter, rows), bags,
                           f"{_fx_name(op)}.bags")
    return [device_transpose(op, rewriter, summed), None, None, None]


# ---- data movement by a constant element map ----------------------------------------------------

def _index_constant(op: AtenOp, rewriter: LegalizeRewriter, values: np.ndarray) -> SSAValue:
    """Constant row numbers as an int64 `spyre.param` carrying its values."""
    ttype = TensorType(i64, list(values.shape))
    name = f"{_fx_name(op)}.rows"
    param = ParamOp(name, ttype, value=dense_values(ttype, values))
    param.result.name_hint = name.replace(".", "_")
    return _emit(rewriter, op, param)


def move_elements(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, rows: np.ndarray,
                  cols: np.ndarray) -> SSAValue:
    """The [*rows.shape, len(cols)] tensor whose row i is row rows[i] of x (its leading dims
    flattened) with its columns picked by `cols` (-1: a zero column). The rows are a
    constant `spyre.gather` (none when they are x's own rows in order), the columns one
    column map (`column_matmul`: a stick move, or an exact matmul by a 0/1 matrix, note 63)."""
    _require_float_data(x)
    shape = _shape(x)
    n, count = (shape[-1] if shape else 1), max(math.prod(shape[:-1]), 1)
    lead = list(rows.shape)
    if np.array_equal(rows.reshape(-1), np.arange(count)):
        y = reshape_to(op, rewriter, x, [*lead, n])
    else:
        table = reshape_to(op, rewriter, x, [count, n])
        ids = _index_constant(op, rewriter, rows)
        y = _emit(rewriter, op, GatherOp(table, ids, with_shape(x, [*lead, n]), source_op=op))
    if not np.array_equal(cols, np.arange(n)):
        matrix = np.zeros((n, cols.size))
        kept = np.flatnonzero(cols >= 0)
        matrix[cols[kept], kept] = 1.0
        y = column_matmul(op, rewriter, y, matrix, f"{_fx_name(op)}.columns")
    return y


def element_map(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue,
                flat: np.ndarray) -> SSAValue:
    """The tensor of `flat.shape` whose element at i is element `flat[i]` of `x` (row-major),
    for a compile-time map that splits into rows and columns: with the result's dims cut
    into a prefix and a suffix (the innermost dim in it), the source row depends on the
    prefix only and the source column on the suffix only (`move_elements`, the cut with the
    fewest columns), and the [prefix, suffix] result is reshaped to `flat.shape`. Exact for
    every value. Any other map is refused."""
    shape = _shape(x)
    n = shape[-1] if shape else 1
    out = list(flat.shape)
    rows, cols = flat // n, flat % n
    for cut in range(len(out) - 1, -1, -1):
        width = math.prod(out[cut:])
        by_row, by_col = rows.reshape(-1, width), cols.reshape(-1, width)
        if (by_row == by_row[:, :1]).all() and (by_col == by_col[:1]).all():
            y = move_elements(op, rewriter, x, by_row[:, 0].reshape(out[:cut] or [1]), by_col[0])
            return reshape_to(op, rewriter, y, out)
    raise Unsupported(f"a {out} view of a {shape} tensor whose rows do not each read one "
                      "source row with one column pattern (not lowered; make the view "
                      "contiguous on the host, or index rows and columns separately)")


def _source_elements(x: SSAValue) -> np.ndarray:
    shape = _shape(x)
    return np.arange(math.prod(shape), dtype=np.int64).reshape(shape)


def _select_flip(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """flip along any dims (a negative-step slice): rows in reverse by a constant gather,
    the innermost dim reversed by an anti-identity column map."""
    x = op.operands[0]
    rank = len(_shape(x))
    dims = [int(d.value.data) % rank for d in arg(op, "dims").data]  # type: ignore[union-attr]
    return element_map(op, rewriter, x, np.flip(_source_elements(x), tuple(dims)))


def _select_as_strided(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """as_strided over the operand's contiguous elements: element i of the result is
    element storage_offset + sum(i_k * stride_k) of the operand (`element_map`)."""
    x = op.operands[0]
    size = [int(v.value.data) for v in arg(op, "size").data]  # type: ignore[union-attr]
    stride = [int(v.value.data) for v in arg(op, "stride").data]  # type: ignore[union-attr]
    offset = int(arg(op, "storage_offset", 0) or 0)  # type: ignore[arg-type]
    flat = np.full(size, offset, dtype=np.int64)
    for axis, step in zip(np.indices(size), stride):
        flat = flat + axis * step
    if flat.size and (flat.min() < 0 or flat.max() >= math.prod(_shape(x))):
        raise Unsupported(f"size {size} stride {stride} offset {offset} reads outside the "
                          f"{_shape(x)} operand (only views of its own elements are lowered)")
    return element_map(op, rewriter, x, flat)


def _select_unfold(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """unfold(dim, size, step): windows of `size` every `step` along dim, as a new last dim."""
    x = op.operands[0]
    dim = int(arg(op, "dimension", 0)) % max(len(_shape(x)), 1)  # type: ignore[arg-type]
    size, step = int(arg(op, "size")), int(arg(op, "step"))  # type: ignore[arg-type]
    windows = np.lib.stride_tricks.sliding_window_view(_source_elements(x), size, axis=dim)
    picked = tuple(slice(None, None, step) if d == dim else slice(None)
                   for d in range(windows.ndim))
    return element_map(op, rewriter, x, np.ascontiguousarray(windows[picked]))


def _select_index(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """x[i0, i1, ...]. Constant index tensors: on a one-row tensor a selection matrix
    (`columns._select_index`), otherwise the constant element map they pick (reflect and
    replicate padding index so). One run-time index tensor: `gather_along` its dim."""
    x = operand(op, "self")
    assert x is not None
    shape = _shape(x)
    names = [n.data for n in op.operand_names.data]  # type: ignore[attr-defined]
    indexed = {int(name.split(".")[1]): value for name, value in zip(names, op.operands)
               if name.startswith("indices.")}
    constants = {d: int_constant(v) for d, v in indexed.items()}
    if all(c is not None for c in constants.values()):
        if math.prod(shape[:-1]) == 1:
            return _select_one_row_index(op, rewriter)
        key: list[slice | np.ndarray] = [slice(None)] * len(shape)
        for d, values in constants.items():
            assert values is not None
            key[d] = values.astype(bool) if _element_name(indexed[d]) == "i1" else values
        picked = _source_elements(x)[tuple(key)]
        if list(picked.shape) != _shape(op.results[0]):
            raise Unsupported(f"indices selecting a {list(picked.shape)} result for "
                              f"{_shape(op.results[0])}")
        return element_map(op, rewriter, x, picked)
    if len(indexed) != 1:
        raise Unsupported(f"run-time index tensors at dims {sorted(indexed)} (one run-time "
                          "index tensor, at any dim, is lowered; index one dim at a time)")
    ((dim, index),) = indexed.items()
    if _element_name(index) not in INDEX_ELEMENTS:
        raise Unsupported(f"a {_element_name(index)} run-time index (int32 or int64 "
                          "indices; a boolean mask selects a data-dependent number of "
                          "elements)")
    return gather_along(op, rewriter, x, dim, index)


def _pad_axis(extent: int, left: int, right: int) -> np.ndarray:
    """Source index of each position of a dim of `extent` padded by (left, right) (negative:
    cropped); -1 for a padded position."""
    kept = np.arange(max(-left, 0), extent - max(-right, 0))
    return np.concatenate([np.full(max(left, 0), -1), kept, np.full(max(right, 0), -1)])


def _select_pad(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """constant_pad_nd. Along the innermost dim only: `columns._select_pad`. With leading
    dims padded (or cropped): the kept rows by a constant gather (padded rows read row 0)
    and the kept columns by a column map (padded columns are zero columns) in
    `move_elements`, `value` added in the padded columns, and the padded rows replaced by
    `value` exactly: keep by a constant 0/1 column (-0.0 there) plus `value` (-0.0, the
    additive identity, in the kept rows)."""
    pad = [int(p.value.data) for p in arg(op, "pad").data]  # type: ignore[union-attr]
    if not any(pad[2:]):
        return _select_last_dim_pad(op, rewriter)
    x = op.operands[0]
    shape = _shape(x)
    pad = pad + [0] * (2 * len(shape) - len(pad))
    axes = [_pad_axis(extent, pad[2 * (len(shape) - 1 - d)], pad[2 * (len(shape) - 1 - d) + 1])
            for d, extent in enumerate(shape)]
    rows = np.zeros([a.size for a in axes[:-1]], dtype=np.int64)
    valid = np.ones(rows.shape, dtype=bool)
    for d, axis in enumerate(axes[:-1]):
        place = [1] * len(axes[:-1])
        place[d] = axis.size
        rows = rows * shape[d] + np.maximum(axis, 0).reshape(place)
        valid = valid & (axis >= 0).reshape(place)
    y = move_elements(op, rewriter, x, rows, axes[-1])
    value = float(arg(op, "value", 0.0) or 0.0)  # type: ignore[arg-type]
    dtype = x.type.element_type  # type: ignore[attr-defined]
    if value != 0.0 and (axes[-1] < 0).any():
        fill = np.where(axes[-1] < 0, value, -0.0)
        y = _binary_op(op, rewriter, "add", y,
                       _constant(op, rewriter, f"{_fx_name(op)}.fill", fill, dtype))
    if not valid.all():
        kept = _constant(op, rewriter, f"{_fx_name(op)}.rows_kept",
                         valid.astype(np.float64)[..., None], dtype)
        y = _binary_op(op, rewriter, "keep", y, kept)
        fill = np.where(valid, -0.0, value)[..., None]
        y = _binary_op(op, rewriter, "add", y,
                       _constant(op, rewriter, f"{_fx_name(op)}.row_fill", fill, dtype))
    return y


def _scatter_rows(op: AtenOp, rewriter: LegalizeRewriter, table: SSAValue, dim: int,
                  index: SSAValue, values: SSAValue) -> Operation:
    """`table[..., index, :] = values` along dim -2 of a buffer, in place: a spyre.scatter."""
    shape = _shape(table)
    if len(shape) < 2 or dim % len(shape) != len(shape) - 2:
        raise Unsupported(f"along dim {dim} of a {shape} tensor (rows are written along "
                          "the second-to-last dim, the sequence dim of a KV cache)")
    if not isinstance(table.owner, ParamOp):
        raise Unsupported("into an activation (only buffers are updated, in place: the "
                          "KV-cache form `cache[:, :, pos] = k` / `cache.index_copy_(2, pos, "
                          "k)`)")
    if not table.has_one_use():
        raise Unsupported(f"buffer '{table.owner.param_name.data}' is also read before the "
                          "update; the update happens in place, so read the updated value")
    if _element_name(table) not in FLOAT_ELEMENTS or _element_name(values) != _element_name(table):
        raise Unsupported(f"{_element_name(values)} values into a {_element_name(table)} "
                          "buffer (f16, bf16 or f32, the same for both)")
    if _element_name(index) not in INDEX_ELEMENTS or len(_shape(index)) != 1:
        raise Unsupported(f"a {_shape(index)} {_element_name(index)} index (1-D int32 or "
                          "int64 positions)")
    rows = shape[:-2] + _shape(index) + shape[-1:]
    given = _shape(values)
    if [1] * (len(rows) - len(given)) + given != rows:
        raise Unsupported(f"values of shape {given} for {rows} rows (broadcast values are "
                          "not lowered; pass one row per position)")
    if given != rows:
        values = _emit(rewriter, op, ReshapeOp(values, with_shape(values, rows)))
    return ScatterOp(table, index, values, source_op=op)


def _select_index_put(op: AtenOp, rewriter: LegalizeRewriter) -> Operation | SSAValue:
    """index_put(cache, [None, .., None, pos], rows): rows written at positions pos of the
    second-to-last dim (torch.export writes both `cache[:, :, pos] = k` and
    `cache.index_copy_(2, pos, k)` so); index_put(x, [mask], v) with a boolean mask of x's
    shape and one value: `where(mask, v, x)`."""
    if arg(op, "accumulate", False):
        raise Unsupported("accumulate=True (only writes of rows are lowered)")
    names = [n.data for n in op.operand_names.data]  # type: ignore[attr-defined]
    indexed = [int(n.split(".")[1]) for n in names if n.startswith("indices.")]
    table, values = operand(op, "self"), operand(op, "values")
    if len(indexed) != 1 or table is None or values is None:
        raise Unsupported(f"tensor indices at dims {indexed} (one index tensor, at the "
                          "second-to-last dim, is lowered)")
    index = operand(op, f"indices.{indexed[0]}")
    assert index is not None
    if (is_predicate(index) or _element_name(index) == "i1") and indexed == [0] \
            and _shape(index) == _shape(table) and math.prod(_shape(values)) == 1:
        # `x[mask] = v` with a mask of x's shape and one value (Gemma 3's out-of-vocabulary
        # image tokens): where(mask, v, x), exact
        return select_between(op, rewriter, index, values, table)
    return _scatter_rows(op, rewriter, table, indexed[0], index, values)


def _select_index_copy(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    table, index, source = (operand(op, n) for n in ("self", "index", "source"))
    if table is None or index is None or source is None:
        raise Unsupported("an operand that is not a tensor")
    return _scatter_rows(op, rewriter, table, int(arg(op, "dim", 0)), index, source)  # type: ignore[arg-type]


SELECTORS: dict[str, Selector] = {
    "aten.embedding.default": _select_embedding,
    "aten.index_select.default": _select_index_select,
    "aten.index_put.default": _select_index_put,
    "aten.index_copy.default": _select_index_copy,
    "aten.index.Tensor": _select_index,
    "aten.gather.default": _select_gather,
    "aten.scatter_add.default": _select_scatter_add,
    "aten.scatter.src": _refuse_scatter,
    "aten.scatter.value": _refuse_scatter,
    "aten._embedding_bag.default": _select_embedding_bag,
    "aten._embedding_bag_forward_only.default": _select_embedding_bag,
    "aten.flip.default": _select_flip,
    "aten.as_strided.default": _select_as_strided,
    "aten.unfold.default": _select_unfold,
    "aten.constant_pad_nd.default": _select_pad,
}
