"""spyre-legalize patterns for normalizations and the softmax family: layer norm,
RMS norm, softmax, log_softmax and logsumexp, over the last dim, written out in row
reductions and SFU ops (the max-shifted, stable forms); and the statistics of group norm
(`group_normalize`), which channels-last selection (`conv.py`) calls on an image's
channels moved back into rows.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr
from xdsl.ir import SSAValue

from spyrec.dialects.spyre import UNARY_OPS, AtenOp, ReshapeOp, is_free_reshape
from spyrec.passes.graph.graph_build import binary_op as _binary_op
from spyrec.passes.graph.graph_build import emit as _emit
from spyrec.passes.graph.graph_build import nonfinite
from spyrec.passes.graph.graph_build import scalar_op as _scalar_op
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.legalize.base import (
    LegalizeRewriter,
    Selector,
    Unsupported,
    arg,
    cast_to,
    operand,
    require_float,
    unary_op,
    with_shape,
)
from spyrec.passes.graph.legalize.movement import restickify_reshape
from spyrec.passes.graph.legalize.reductions import (
    keepdim_last,
    kept_dim,
    last_dim_only,
    reduce_last,
)


def _normalize(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, centered: bool,
               eps: float) -> SSAValue:
    """(x - mean) * rsqrt(var + eps) for layer norm, x * rsqrt(mean(x^2) + eps) for RMS norm."""
    n = _shape(x)[-1]
    if centered:
        mean = _scalar_op(op, rewriter, "mul", reduce_last(op, rewriter, "sum", x), 1.0 / n)
        x = _binary_op(op, rewriter, "sub", x, mean)
    square = _binary_op(op, rewriter, "mul", x, x)
    var = _scalar_op(op, rewriter, "mul", reduce_last(op, rewriter, "sum", square), 1.0 / n)
    shifted = _scalar_op(op, rewriter, "add", var, eps)
    scale = _emit(rewriter, op, UNARY_OPS["rsqrt"](shifted, shifted.type))
    return _binary_op(op, rewriter, "mul", x, scale)


def _view(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, shape: list[int]) -> SSAValue:
    """`x` as `shape`: free when the rows regroup, else through device transposes."""
    if _shape(x) == shape:
        return x
    element = x.type.element_type  # type: ignore[attr-defined]
    if is_free_reshape(_shape(x), shape, element):
        return _emit(rewriter, op, ReshapeOp(x, with_shape(x, shape)))
    return restickify_reshape(op, rewriter, x, shape)


def group_normalize(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue, groups: int,
                    eps: float) -> SSAValue:
    """Group norm without its affine part: [N, C, S] `x` (f32: torch computes the group
    statistics in fp32 for 16-bit inputs too) normalized over each group of C / groups
    channels and all S positions, as [N, C, S]. A group is one row of [N, groups, C / groups
    * S] (a free reshape when S is whole sticks or a group is one channel, else a
    restickify), normalized like a layer norm (two-pass variance)."""
    n, c, size = _shape(x)
    rows = _view(op, rewriter, x, [n, groups, c // groups, size])
    rows = _view(op, rewriter, rows, [n, groups, c // groups * size])
    y = _normalize(op, rewriter, rows, centered=True, eps=eps)
    y = _view(op, rewriter, y, [n, groups, c // groups, size])
    return _view(op, rewriter, y, [n, c, size])


def _check_normalized_shape(op: AtenOp, x: SSAValue) -> None:
    shape = arg(op, "normalized_shape")
    dims = [d.value.data for d in shape.data] if isinstance(shape, ArrayAttr) else []
    if dims != _shape(x)[-1:]:
        raise Unsupported(f"normalized_shape {dims} (only the last dimension is lowered so far)")


def _affine(op: AtenOp, rewriter: LegalizeRewriter, y: SSAValue, weight: SSAValue | None,
            bias: SSAValue | None) -> SSAValue:
    if weight is not None:
        y = _binary_op(op, rewriter, "mul", y, weight)
    if bias is not None:
        y = _binary_op(op, rewriter, "add", y, bias)
    return y


def _select_layer_norm(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    require_float(op)
    x = operand(op, "input")
    assert x is not None
    _check_normalized_shape(op, x)
    if op.target.data == "aten.native_layer_norm.default" and any(
            r.uses for r in op.results[1:]):
        raise Unsupported("the mean and rstd outputs are used (only the normalized output is)")
    eps = float(arg(op, "eps", 1e-5))  # type: ignore[arg-type]
    y = _normalize(op, rewriter, x, centered=True, eps=eps)
    y = _affine(op, rewriter, y, operand(op, "weight"), operand(op, "bias"))
    return cast_to(op, rewriter, y, op.results[0])


def _select_rms_norm(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    require_float(op)
    x = operand(op, "input")
    assert x is not None
    _check_normalized_shape(op, x)
    eps = arg(op, "eps")
    if eps is None:  # torch uses the machine epsilon of the type it computes in: fp32
        eps = 2.0**-23  # for fp16 and bf16 too (their opmath type)
    y = _normalize(op, rewriter, x, centered=False, eps=float(eps))  # type: ignore[arg-type]
    y = _affine(op, rewriter, y, operand(op, "weight"), None)
    return cast_to(op, rewriter, y, op.results[0])


def _select_softmax(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    require_float(op)
    x = op.operands[0]
    last_dim_only(op, arg(op, "dim"), len(_shape(x)))
    x = cast_to(op, rewriter, x, op.results[0])
    shifted = _binary_op(op, rewriter, "sub", x, reduce_last(op, rewriter, "max", x))
    e = _emit(rewriter, op, UNARY_OPS["exp"](shifted, shifted.type))
    total = reduce_last(op, rewriter, "sum", e)
    return _binary_op(op, rewriter, "div", e, total)


def _logsumexp_last(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue,
                    finite_peak: bool = False) -> tuple[SSAValue, SSAValue]:
    """(max, log(sum(exp(x - max)))) over the last dim: the stable form. `finite_peak`: an
    infinite max becomes 0, as torch.logsumexp does, so a row with +inf gives +inf and a
    row of -inf gives -inf (not inf - inf = NaN)."""
    peak = reduce_last(op, rewriter, "max", x)
    if finite_peak:
        # 1 - nonfinite(peak) is the 0/1 "finite" predicate that keeps the peak or zeroes it
        finite = _scalar_op(op, rewriter, "sub", nonfinite(op, rewriter, peak), 1.0,
                            reverse=True)
        peak = _binary_op(op, rewriter, "keep", peak, finite)
    shifted = _binary_op(op, rewriter, "sub", x, peak)
    total = reduce_last(op, rewriter, "sum", unary_op(op, rewriter, "exp", shifted))
    return peak, unary_op(op, rewriter, "log", total)


def _select_log_softmax(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """x - max - log(sum(exp(x - max))) over the last dim."""
    require_float(op)
    x = op.operands[0]
    last_dim_only(op, arg(op, "dim"), len(_shape(x)))
    x = cast_to(op, rewriter, x, op.results[0])
    peak, log_total = _logsumexp_last(op, rewriter, x)
    return _binary_op(op, rewriter, "sub", _binary_op(op, rewriter, "sub", x, peak), log_total)


def _select_logsumexp(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    require_float(op)
    x = op.operands[0]
    keepdim_last(op, x)
    peak, log_total = _logsumexp_last(op, rewriter, cast_to(op, rewriter, x, op.results[0]),
                                      finite_peak=True)
    return kept_dim(op, rewriter, _binary_op(op, rewriter, "add", peak, log_total))


SELECTORS: dict[str, Selector] = {
    "aten.layer_norm.default": _select_layer_norm,
    "aten.native_layer_norm.default": _select_layer_norm,
    "aten.rms_norm.default": _select_rms_norm,
    "aten.softmax.int": _select_softmax,
    "aten._softmax.default": _select_softmax,
    "aten._log_softmax.default": _select_log_softmax,
    "aten.log_softmax.int": _select_log_softmax,
    "aten.logsumexp.default": _select_logsumexp,
}
