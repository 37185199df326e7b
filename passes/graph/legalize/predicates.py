"""spyre-legalize patterns for comparisons of integers, `where` and logical ops.

A boolean tensor lives on the device as an f32 tensor of 0.0 / 1.0 (a "predicate"), which
is its numeric value, so a consumer that reads it as a number (a cast to float, a sum) is
right as is; the ops made here carry `spyre.predicate` so `where` and attention can tell a
predicate from a float tensor (`is_predicate`). A comparison of integers subtracts in f32
and clamps to [0, 1]: exact for integer values below 2^24 in magnitude (positions, lengths,
token ids).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    Float32Type,
    IntegerAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import BlockArgument, Operation, SSAValue

from spyrec.dialects.spyre import (
    BINARY_OPS,
    UNARY_OPS,
    AtenOp,
    CastOp,
    ExpandRowsOp,
    PermuteRowsOp,
    ReshapeOp,
)
from spyrec.passes.graph.graph_build import binary_op as _binary_op
from spyrec.passes.graph.graph_build import element as _element_name
from spyrec.passes.graph.graph_build import emit as _emit
from spyrec.passes.graph.graph_build import nonfinite, through
from spyrec.passes.graph.graph_build import scalar_op as _scalar_op
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.legalize.base import (
    FLOAT_ELEMENTS,
    INT_ELEMENTS,
    LegalizeRewriter,
    Selector,
    Unsupported,
    arg,
    broadcast_binary,
    broadcast_rows,
    cast_to,
    int_constant,
    scalar_constant,
    unary_op,
)
from spyrec.passes.graph.legalize.movement import device_transpose
from spyrec.passes.graph.legalize.reductions import kept_dim, reduce_last

_COMPARE = {"le": (True, 1.0), "lt": (True, 0.0), "ge": (False, 1.0), "gt": (False, 0.0)}


BOOL_INPUTS = "spyre.bool_inputs"
"""The graph function's attribute listing (by index) its boolean inputs: f32 0.0 / 1.0 on
the device, converted by the host (`spyre_legalize._bool_inputs`)."""


def is_predicate(value: SSAValue) -> bool:
    """Is `value` a 0/1 predicate made by a comparison or a boolean input of the program
    (possibly reshaped or broadcast)?"""
    value = through(value, PREDICATE_VIEWS)
    if isinstance(value, BlockArgument):
        fn = value.block.parent_op()
        listed = fn.attributes.get(BOOL_INPUTS) if fn is not None else None
        return isinstance(listed, DenseArrayBase) and value.index in listed.get_values()
    owner = value.owner
    return isinstance(owner, Operation) and "spyre.predicate" in owner.attributes


PREDICATE_VIEWS = (ReshapeOp, ExpandRowsOp, PermuteRowsOp)


def _as_f32(op: AtenOp, rewriter: LegalizeRewriter, value: SSAValue) -> SSAValue:
    if _element_name(value) not in INT_ELEMENTS:
        raise Unsupported(f"a {_element_name(value)} operand (comparisons of int32 / int64 "
                          "tensors are lowered; float comparisons are not exact as a clamp)")
    return _emit(rewriter, op, CastOp(value, TensorType(Float32Type(), _shape(value))))


def _mark(value: SSAValue) -> SSAValue:
    """Record that `value` (the op behind its reshapes and row moves) is a predicate."""
    owner = through(value, PREDICATE_VIEWS).owner
    assert isinstance(owner, Operation)
    owner.attributes["spyre.predicate"] = UnitAttr()
    return value


def _select_compare(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """Integers: a <= b as clamp(b - a + 1, 0, 1), a < b as clamp(b - a, 0, 1) (ge, gt
    mirrored), a == b as 1 - clamp(|a - b|, 0, 1), a != b as clamp(|a - b|, 0, 1): 0.0 / 1.0
    in f32. Floats (or an integer against a float): `_float_compare`."""
    kind = op.target.data.split(".")[1]
    if any(_element_name(v) in FLOAT_ELEMENTS for v in op.operands) or isinstance(
            arg(op, "other"), float):
        return _float_compare(op, rewriter, kind)
    a = _as_f32(op, rewriter, op.operands[0])
    if len(op.operands) == 2:
        b = _as_f32(op, rewriter, op.operands[1])
        # the result's shape: a column against a row broadcasts both (an outer difference:
        # position q against position kv)
        out = _shape(op.results[0])
        diff = _emit(rewriter, op, BINARY_OPS["sub"](
            broadcast_rows(op, rewriter, a, out), broadcast_rows(op, rewriter, b, out),
            TensorType(Float32Type(), out)))
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


def in_f32(op: AtenOp, rewriter: LegalizeRewriter, value: SSAValue) -> SSAValue:
    """`value` (a float, integer or predicate tensor) in f32: exact for f16 and bf16, and
    for integers below 2^24."""
    if _element_name(value) == "f32":
        return value
    if _element_name(value) not in (*FLOAT_ELEMENTS, *INT_ELEMENTS) and not is_predicate(value):
        raise Unsupported(f"a {_element_name(value)} operand")
    return _emit(rewriter, op, CastOp(value, TensorType(Float32Type(), _shape(value))))


def _keep_one(op: AtenOp, rewriter: LegalizeRewriter, q: SSAValue) -> SSAValue:
    """keep(1, q): 1 where q is nonzero (NaN and infinities included), -0.0 where it is
    +-0: the predicate q != 0."""
    return _scalar_op(op, rewriter, "keep", q, 1.0, reverse=True)


def _not(op: AtenOp, rewriter: LegalizeRewriter, p: SSAValue) -> SSAValue:
    return _scalar_op(op, rewriter, "sub", p, 1.0, reverse=True)


def isnan(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue) -> SSAValue:
    """1 where x is NaN, -0.0 elsewhere: clamp(x, -1, 1) is finite for every number,
    infinities included, and NaN for NaN (maximum and minimum propagate NaN)."""
    bounded = _scalar_op(op, rewriter, "minimum", _scalar_op(op, rewriter, "maximum", x, -1.0),
                         1.0)
    return nonfinite(op, rewriter, bounded)


def _ordered(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue) -> SSAValue:
    """x where it is not NaN, -0.0 where it is."""
    return broadcast_binary(op, rewriter, "keep", x, _not(op, rewriter, isnan(op, rewriter, x)))


def _float_compare(op: AtenOp, rewriter: LegalizeRewriter, kind: str) -> SSAValue:
    """A comparison of floats as f32 predicates, exact for every value, NaN, infinities,
    signed zeros and subnormals included. With d = b - a in f32 (a < b, a <= b, ==, !=;
    d = a - b for >, >=): IEEE subtraction gets the sign of d right whatever it rounds
    (it is 0 only for equal values, a finite overflow is an infinity of the right sign),
    and d is NaN exactly when a or b is NaN (unordered: every comparison false but !=) or
    a and b are the same infinity (equal). So, with o = d where d is not NaN (else -0.0):
    less = keep(1, relu(o)), equal = 1 - keep(1, o) - unordered, and <= / >= their sum,
    != 1 - equal. A Python number is first rounded to the tensor's type, as eager does."""
    a = op.operands[0]
    if len(op.operands) == 2:
        b = op.operands[1]
        a32, b32 = in_f32(op, rewriter, a), in_f32(op, rewriter, b)
        first, second = (b32, a32) if kind in ("gt", "ge") else (a32, b32)
        d = broadcast_binary(op, rewriter, "sub", second, first)
        unordered = broadcast_binary(op, rewriter, "maximum", isnan(op, rewriter, a32),
                                     isnan(op, rewriter, b32))
    else:
        number = arg(op, "other")
        if not isinstance(number, int | float) or math.isnan(number):
            raise Unsupported(f"a scalar {number!r} (a number other than NaN is lowered)")
        rounded = float(np.array(number, dtype=_NUMPY.get(_element_name(a), np.float32)))
        a32 = in_f32(op, rewriter, a)
        d = _scalar_op(op, rewriter, "sub", a32, rounded, reverse=kind not in ("gt", "ge"))
        unordered = isnan(op, rewriter, a32)
    ordered = _ordered(op, rewriter, d)
    nonzero = _keep_one(op, rewriter, ordered)
    different = broadcast_binary(op, rewriter, "add", nonzero, unordered)
    if kind == "ne":
        return _mark(different)
    equal = _not(op, rewriter, different)
    if kind == "eq":
        return _mark(equal)
    less = _keep_one(op, rewriter, unary_op(op, rewriter, "relu", ordered))
    return _mark(less if kind in ("lt", "gt") else broadcast_binary(op, rewriter, "add", less,
                                                                     equal))


_NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32}


def _select_isnan(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """isnan / isinf / isfinite of a float tensor as predicates; isinf is nonfinite minus
    isnan. (A 16-bit tensor holds no infinity on the device: DL16 stores an infinity the
    device computes as NaN; see docs/numerics.md.)"""
    x = in_f32(op, rewriter, op.operands[0])
    nan = isnan(op, rewriter, x)
    if op.target.data == "aten.isnan.default":
        return _mark(nan)
    infinite = broadcast_binary(op, rewriter, "sub", nonfinite(op, rewriter, x), nan)
    if op.target.data == "aten.isinf.default":
        return _mark(infinite)
    return _mark(_not(op, rewriter, broadcast_binary(op, rewriter, "add", infinite, nan)))


def _select_sign(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """sign(x) = (x > 0) - (x < 0), as eager computes it (0 for NaN and for +-0):
    keep(1, relu(+-o)) is 1 where +-x > 0, with o = x where x is not NaN, else -0.0."""
    x = op.operands[0]
    if _element_name(x) not in FLOAT_ELEMENTS:
        raise Unsupported(f"a {_element_name(x)} operand (float sign is lowered)")
    ordered = _ordered(op, rewriter, x)
    positive = _keep_one(op, rewriter, unary_op(op, rewriter, "relu", ordered))
    negative = _keep_one(op, rewriter, unary_op(op, rewriter, "relu", unary_op(
        op, rewriter, "neg", ordered)))
    return broadcast_binary(op, rewriter, "sub", positive, negative)


def as_predicate(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue) -> SSAValue:
    """`x` as a predicate: itself when it is one, else x != 0 (NaN is true, as a cast to
    bool is)."""
    if is_predicate(x):
        return x
    return _mark(_keep_one(op, rewriter, in_f32(op, rewriter, x)))


def _select_any(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """any / all over every dim, or over the last one: the maximum (minimum) of the
    operand's predicate x != 0, a row reduction; over every dim the rows' results are
    moved into one row (a device transpose) and reduced again."""
    p = as_predicate(op, rewriter, op.operands[0])
    kind = "max" if "any" in op.target.data else "min"
    shape, out = _shape(p), _shape(op.results[0])
    dims = arg(op, "dim")
    if dims is not None:
        values = [d.value.data for d in dims.data] if isinstance(dims, ArrayAttr) else [dims]
        if [v % max(len(shape), 1) for v in values] != [len(shape) - 1]:  # type: ignore[operator]
            raise Unsupported(f"over dims {values} (every dim, or the last, is lowered)")
        y = reduce_last(op, rewriter, kind, p)
        return _mark(y if _shape(y) == out else kept_dim(op, rewriter, y))
    rows = math.prod(shape[:-1])
    if len(shape) != 2:
        p = _emit(rewriter, op, ReshapeOp(p, TensorType(Float32Type(), [rows, (shape or [1])[-1]])))
    y = reduce_last(op, rewriter, kind, p)
    if rows > 1:
        y = reduce_last(op, rewriter, kind, device_transpose(op, rewriter, y))
    return _mark(_emit(rewriter, op, ReshapeOp(y, TensorType(Float32Type(), out))))


def _select_where(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """where(p, a, b) = keep(a, p) + keep(b, 1 - p) in the result's type, where keep(x, q)
    is x where q is nonzero and -0.0 elsewhere (the SFU's KEEP). Exact for every value,
    NaN, infinities and signed zeros included: -0.0 is the additive identity of IEEE
    arithmetic, so the sum is the kept value itself. (A blend p * a + (1 - p) * b is not:
    0 * -inf is NaN, which turned every masked_fill(-inf) into NaN.)"""
    cond, a, b = op.operands
    return select_between(op, rewriter, cond, a, b)


def select_between(op: AtenOp, rewriter: LegalizeRewriter, cond: SSAValue, a: SSAValue,
                   b: SSAValue) -> SSAValue:
    """`where(cond, a, b)` as `_select_where` makes it, for `op`'s result (also the form of
    `x[mask] = v`: index_put with a boolean mask of x's shape)."""
    if not is_predicate(cond):
        raise Unsupported("a condition that is not a comparison of integers (predicates are "
                          "made by le/lt/ge/gt/eq/ne of int tensors)")
    result = _element_name(op.results[0])
    if result not in FLOAT_ELEMENTS and result not in INT_ELEMENTS:
        raise Unsupported(f"{result} values (float and integer where are lowered)")
    out = _shape(op.results[0])
    # integers are selected as the f32 values they are on the device (exact below 2^24,
    # which int_range guards: note 85), then cast back
    element = Float32Type() if result in INT_ELEMENTS else op.results[0].type.element_type  # type: ignore[attr-defined]

    def typed(v: SSAValue) -> SSAValue:
        if _element_name(v) != str(element):
            v = _emit(rewriter, op, CastOp(v, TensorType(element, _shape(v))))
        return broadcast_rows(op, rewriter, v, out)

    def kept(value: SSAValue, where: SSAValue) -> SSAValue:
        constant = scalar_constant(value)
        if constant is not None:  # keep(s, q): the constant is the SFU's immediate
            return _scalar_op(op, rewriter, "keep", where, constant, reverse=True)
        return broadcast_binary(op, rewriter, "keep", typed(value), where)

    cond = typed(cond)
    not_cond = _scalar_op(op, rewriter, "sub", cond, 1.0, reverse=True)
    total = broadcast_binary(op, rewriter, "add", kept(a, cond), kept(b, not_cond))
    if _shape(total) != out:
        raise Unsupported(f"a result of shape {out} from a {_shape(total)} condition (the "
                          "condition must have the result's shape)")
    return cast_to(op, rewriter, total, op.results[0])


def _select_logical(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """and / or / not of predicates (any tensor's x != 0 for the logical ops; the bitwise
    ones of booleans only): product, maximum, 1 - p, broadcast."""
    if "and" in op.target.data and len(op.operands) == 2:
        for keep, other in ((0, 1), (1, 0)):
            values = int_constant(op.operands[other])
            if (values is not None and values.all() and is_predicate(op.operands[keep])
                    and _shape(op.operands[keep]) == _shape(op.results[0])):
                return op.operands[keep]  # p & True (a folded `new_ones` mask start)
    kind = op.target.data
    if kind.startswith("aten.logical_") or all(
            is_predicate(v) or _element_name(v) == "i1" for v in op.operands):
        # a bitwise op of booleans (a predicate, or a boolean tensor such as a folded
        # causal mask) is the logical one
        operands = [as_predicate(op, rewriter, v) for v in op.operands]
    elif "and" in kind and any(is_predicate(v) or _element_name(v) == "i1"
                               for v in op.operands) and all(
            is_predicate(v) or _element_name(v) == "i1" or _unit_bounded(v)
            for v in op.operands):
        # a boolean and-ed with integers of magnitude <= 1 (a folded 0/1 int mask): the
        # boolean is 0 or 1, and with x in {-1, 0, 1}, 1 & x is 1 exactly where x != 0, so
        # it is the logical and (two such integers are not: -1 & -1 is -1)
        operands = [as_predicate(op, rewriter, v) for v in op.operands]
        return cast_to(op, rewriter, boolean_binary(op, rewriter, "and", *operands),
                       op.results[0])
    else:
        raise Unsupported("an operand that is not a boolean (a comparison, isnan, a cast to "
                          "bool; bitwise ops of integers are not lowered)")
    if "not" in kind:
        return _mark(_not(op, rewriter, operands[0]))
    return boolean_binary(op, rewriter, "and" if "and" in kind else "or", *operands)


def _unit_bounded(value: SSAValue) -> bool:
    """Is `value` an integer tensor of values in {-1, 0, 1}: a folded constant so bounded
    (`spyre.int_bound`), or a predicate cast to an integer type?"""
    if _element_name(value) not in INT_ELEMENTS:
        return False
    owner = value.owner
    if isinstance(owner, CastOp):
        return is_predicate(owner.operands[0])
    bound = owner.attributes.get("spyre.int_bound") if isinstance(owner, Operation) else None
    return isinstance(bound, IntegerAttr) and bound.value.data <= 1


def boolean_binary(op: AtenOp, rewriter: LegalizeRewriter, kind: str, a: SSAValue,
                   b: SSAValue) -> SSAValue:
    """`a and b` (a product) or `a or b` (a maximum) of two predicates, broadcast."""
    fn = "mul" if kind == "and" else "maximum"
    if _shape(a) == _shape(b):
        return _mark(_binary_op(op, rewriter, fn, a, b))
    return _mark(broadcast_binary(op, rewriter, fn, a, b))


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
    "aten.isnan.default": _select_isnan,
    "aten.sign.default": _select_sign,
    "aten.isinf.default": _select_isnan,
    "aten.isfinite.default": _select_isnan,
    **dict.fromkeys(("aten.any.default", "aten.any.dim", "aten.any.dims", "aten.all.default",
                     "aten.all.dim", "aten.all.dims"), _select_any),
}
