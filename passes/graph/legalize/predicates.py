"""spyre-legalize patterns for comparisons of integers, `where` and logical ops.

A boolean tensor lives on the device as an f32 tensor of 0.0 / 1.0 (a "predicate"), which
is its numeric value, so a consumer that reads it as a number (a cast to float, a sum) is
right as is; the ops made here carry `spyre.predicate` so `where` and attention can tell a
predicate from a float tensor (`is_predicate`). A comparison of integers subtracts in f32
and clamps to [0, 1]: exact for integer values below 2^24 in magnitude (positions, lengths,
token ids).
"""

from __future__ import annotations

from xdsl.dialects.builtin import Float32Type, TensorType, UnitAttr
from xdsl.ir import Operation, SSAValue

from spyrec.dialects.spyre import (
    BINARY_OPS,
    UNARY_OPS,
    AtenOp,
    CastOp,
    ExpandRowsOp,
    ParamOp,
    PermuteRowsOp,
    ReshapeOp,
)
from spyrec.passes.graph.graph_build import binary_op as _binary_op
from spyrec.passes.graph.graph_build import element as _element_name
from spyrec.passes.graph.graph_build import emit as _emit
from spyrec.passes.graph.graph_build import scalar_op as _scalar_op
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.graph_build import through
from spyrec.passes.graph.legalize.base import (
    FLOAT_ELEMENTS,
    INT_ELEMENTS,
    LegalizeRewriter,
    Selector,
    Unsupported,
    arg,
    broadcast_rows,
    cast_to,
    int_constant,
    numel,
)

_COMPARE = {"le": (True, 1.0), "lt": (True, 0.0), "ge": (False, 1.0), "gt": (False, 0.0)}


def is_predicate(value: SSAValue) -> bool:
    """Is `value` a 0/1 predicate made by a comparison (possibly reshaped or broadcast)?"""
    owner = through(value, (ReshapeOp, ExpandRowsOp, PermuteRowsOp)).owner
    return isinstance(owner, Operation) and "spyre.predicate" in owner.attributes


def _as_f32(op: AtenOp, rewriter: LegalizeRewriter, value: SSAValue) -> SSAValue:
    if _element_name(value) not in INT_ELEMENTS:
        raise Unsupported(f"a {_element_name(value)} operand (comparisons of int32 / int64 "
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
        other = arg(op, "other")
        if not isinstance(other, int) or isinstance(other, bool):
            raise Unsupported(f"a {type(other).__name__} scalar (an integer is lowered)")
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
    if isinstance(owner, ParamOp) and owner.value is not None and numel(value) == 1:
        first = owner.value.get_values()[0]
        assert isinstance(first, int | float)  # not a complex constant
        return float(first)
    return None


def _select_where(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """where(p, a, b) = keep(a, p) + keep(b, 1 - p) in the result's type, where keep(x, q)
    is x where q is nonzero and -0.0 elsewhere (the SFU's KEEP). Exact for every value,
    NaN, infinities and signed zeros included: -0.0 is the additive identity of IEEE
    arithmetic, so the sum is the kept value itself. (A blend p * a + (1 - p) * b is not:
    0 * -inf is NaN, which turned every masked_fill(-inf) into NaN.)"""
    cond, a, b = op.operands
    if not is_predicate(cond):
        raise Unsupported("a condition that is not a comparison of integers (predicates are "
                          "made by le/lt/ge/gt/eq/ne of int tensors)")
    if _element_name(op.results[0]) not in FLOAT_ELEMENTS:
        raise Unsupported(f"{_element_name(op.results[0])} values (float where is lowered)")
    out = _shape(op.results[0])
    element = op.results[0].type.element_type  # type: ignore[attr-defined]

    def typed(v: SSAValue) -> SSAValue:
        if _element_name(v) != _element_name(op.results[0]):
            v = _emit(rewriter, op, CastOp(v, TensorType(element, _shape(v))))
        return broadcast_rows(op, rewriter, v, out)

    def kept(value: SSAValue, where: SSAValue) -> SSAValue:
        constant = _scalar_value(value)
        if constant is not None:  # keep(s, q): the constant is the SFU's immediate
            return _scalar_op(op, rewriter, "keep", where, constant, reverse=True)
        return _binary_op(op, rewriter, "keep", typed(value), where)

    cond = typed(cond)
    not_cond = _scalar_op(op, rewriter, "sub", cond, 1.0, reverse=True)
    total = _binary_op(op, rewriter, "add", kept(a, cond), kept(b, not_cond))
    if _shape(total) != out:
        raise Unsupported(f"a result of shape {out} from a {_shape(total)} condition (the "
                          "condition must have the result's shape)")
    return cast_to(op, rewriter, total, op.results[0])


def _select_logical(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """and / or / not of predicates: product, maximum, 1 - p."""
    if "and" in op.target.data and len(op.operands) == 2:
        for keep, other in ((0, 1), (1, 0)):
            values = int_constant(op.operands[other])
            if (values is not None and values.all() and is_predicate(op.operands[keep])
                    and _shape(op.operands[keep]) == _shape(op.results[0])):
                return op.operands[keep]  # p & True (a folded `new_ones` mask start)
    if not all(is_predicate(v) for v in op.operands):
        raise Unsupported("an operand that is not a comparison of integers")
    kind = op.target.data
    if "not" in kind:
        return _mark(_scalar_op(op, rewriter, "sub", op.operands[0], 1.0, reverse=True))
    fn = "mul" if "and" in kind else "maximum"
    return _mark(_binary_op(op, rewriter, fn, op.operands[0], op.operands[1]))


SELECTORS: dict[str, Selector] = {
    **{f"aten.{k}.{form}": _select_compare for k in ("le", "lt", "ge", "gt", "eq", "ne")
       for form in ("Tensor", "Scalar")},
    "aten.where.self": _select_where,
    "aten.logical_and.default": _select_logical,
    "aten.bitwise_and.Tensor": _select_logical,
    "aten.logical_or.default": _select_logical,
    "aten.bitwise_or.Tensor": _select_logical,
    "aten.logical_not.default": _select_logical,
    "aten.bitwise_not.default": _select_logical,
}
