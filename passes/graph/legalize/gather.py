"""spyre-legalize patterns for gathers and scatters of rows by run-time index:
`embedding` and `index_select` along rows become `spyre.gather`; row writes into a buffer
at run-time positions (`index_put` with `[None, .., pos]`, `index_copy` along dim -2: a
KV-cache append) `spyre.scatter`, done in place.
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from spyrec.dialects.spyre import AtenOp, GatherOp, ParamOp, ReshapeOp, ScatterOp
from spyrec.passes.graph.graph_build import element as _element_name
from spyrec.passes.graph.graph_build import emit as _emit
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.legalize.base import (
    FLOAT_ELEMENTS,
    LegalizeRewriter,
    Selector,
    Unsupported,
    arg,
    operand,
    with_shape,
)

INDEX_ELEMENTS = ("i32", "i64")


def _gather_rows(op: AtenOp, rewriter: LegalizeRewriter, table: SSAValue,
                 indices: SSAValue) -> Operation:
    """`table[indices]` for a 2-D float table and integer indices: a spyre.gather."""
    if len(_shape(table)) != 2:
        raise Unsupported(f"a {len(_shape(table))}-D table {_shape(table)} (rows of a 2-D "
                          "table are gathered; reshape it to [rows, width] first)")
    if _element_name(table) not in FLOAT_ELEMENTS:
        raise Unsupported(f"a {_element_name(table)} table (f16, bf16 and f32 tables)")
    if _element_name(indices) not in INDEX_ELEMENTS:
        raise Unsupported(f"{_element_name(indices)} indices (int32 or int64 indices)")
    return GatherOp(table, indices, op.results[0].type, source_op=op)


def _select_embedding(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    """aten.embedding: rows of the weight by index. padding_idx only changes the gradient.
    The indices are checked against [0, V) when the gather runs (dma.gather faults)."""
    weight, indices = operand(op, "weight"), operand(op, "indices")
    if weight is None or indices is None:
        raise Unsupported("a weight or indices that is not a tensor")
    return _gather_rows(op, rewriter, weight, indices)


def _select_index_select(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    """aten.index_select along dim 0 of a 2-D tensor is the same gather of rows."""
    table, index = operand(op, "self"), operand(op, "index")
    if table is None or index is None:
        raise Unsupported("a source or index that is not a tensor")
    dim = arg(op, "dim", 0)
    if len(_shape(table)) != 2 or dim % 2 != 0:  # type: ignore[operator]
        raise Unsupported(f"along dim {dim} of a {_shape(table)} tensor (only rows of a 2-D "
                          "tensor, dim 0, are gathered; a gather of columns is a matmul by a "
                          "selection matrix when the index is constant)")
    return _gather_rows(op, rewriter, table, index)


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


def _select_index_put(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    """index_put(cache, [None, .., None, pos], rows): rows written at positions pos of the
    second-to-last dim (torch.export writes both `cache[:, :, pos] = k` and
    `cache.index_copy_(2, pos, k)` so)."""
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
}
