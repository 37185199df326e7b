"""spyre-legalize patterns for matrix products: linear, addmm, mm and bmm.

`spyre.matmul` takes a constant weight (a transposed weight folds into the `spyre.param`,
`transposed_weight`); a product by the device transpose of an activation reads that
activation as stored (`spyre.batch_matmul` with its rhs transposed, `transpose_source`).
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from spyrec.dialects.spyre import AtenOp, BatchMatmulOp, MatmulOp, ReshapeOp
from spyrec.passes.graph.graph_build import emit as _emit
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.legalize.base import (
    LegalizeRewriter,
    Selector,
    Unsupported,
    arg,
    numel,
    operand,
    require_float,
    with_shape,
)
from spyrec.passes.graph.legalize.movement import (
    check_resident_rhs,
    transpose_source,
    transposed_weight,
)


def _select_linear(op: AtenOp, rewriter: LegalizeRewriter) -> Operation | SSAValue:
    require_float(op)
    x, w, b = operand(op, "input"), operand(op, "weight"), operand(op, "bias")
    assert x is not None and w is not None
    wt = transposed_weight(op, w, rewriter)
    shape = _shape(x)
    if len(shape) == 2:
        return MatmulOp(x, wt, b, op.results[0].type, source_op=op)
    # [..., K] @ [K, N]: the leading dims are rows of the row-sticked layout, so flattening
    # them (and restoring them after) moves no data
    rows = numel(x) // shape[-1]
    flat = _emit(rewriter, op, ReshapeOp(x, with_shape(x, [rows, shape[-1]])))
    out = _shape(op.results[0])
    y = _emit(rewriter, op, MatmulOp(flat, wt, b, with_shape(op.results[0], [rows, out[-1]])))
    return _emit(rewriter, op, ReshapeOp(y, op.results[0].type))


def _select_addmm(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    require_float(op)
    if arg(op, "beta", 1) != 1 or arg(op, "alpha", 1) != 1:
        raise Unsupported("addmm with beta or alpha other than 1")
    bias, a, b = operand(op, "self"), operand(op, "mat1"), operand(op, "mat2")
    assert bias is not None and a is not None and b is not None
    return MatmulOp(a, b, bias, op.results[0].type, source_op=op)


def _select_mm(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    require_float(op)
    a, b = operand(op, "self"), operand(op, "mat2")
    assert a is not None and b is not None
    source = transpose_source(rewriter, b)
    if source is not None:  # a @ x^T of an activation x: the PT reads x as stored
        check_resident_rhs(source, "a matmul by a transposed activation", rewriter.target)
        return BatchMatmulOp(a, source, True, op.results[0].type, source_op=op)
    return MatmulOp(a, b, None, op.results[0].type, source_op=op)


def _select_bmm(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    """bmm of activations (eager attention is matched before): spyre.batch_matmul, with the
    rhs read as stored when it is the device transpose of an activation (q @ k^T)."""
    require_float(op)
    a, b = operand(op, "self"), operand(op, "mat2")
    assert a is not None and b is not None
    source = transpose_source(rewriter, b)
    if source is not None:
        check_resident_rhs(source, "a bmm by a transposed activation", rewriter.target)
        return BatchMatmulOp(a, source, True, op.results[0].type, source_op=op)
    check_resident_rhs(b, "a bmm", rewriter.target)
    return BatchMatmulOp(a, b, False, op.results[0].type, source_op=op)


SELECTORS: dict[str, Selector] = {
    "aten.linear.default": _select_linear,
    "aten.addmm.default": _select_addmm,
    "aten.mm.default": _select_mm,
    "aten.bmm.default": _select_bmm,
}
