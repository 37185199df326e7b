"""spyre-legalize patterns for elementwise ops: unary and binary SFU ops (with
PyTorch's type promotion and broadcasts of rows), casts, powers, and composites built from
the SFU's tile ops (clamp, hardtanh, leaky_relu, elu, softplus, mish, hardsigmoid,
hardswish).
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Operation, SSAValue

from spyrec.dialects.spyre import BINARY_OPS, UNARY_OPS, AtenOp, CastOp
from spyrec.passes.graph.graph_build import binary_op as _binary_op
from spyrec.passes.graph.graph_build import element as _element_name
from spyrec.passes.graph.graph_build import emit as _emit
from spyrec.passes.graph.graph_build import scalar_op as _scalar_op
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.passes.graph.legalize.base import (
    COMMUTATIVE,
    FLOAT_ELEMENTS,
    INT_ELEMENTS,
    LegalizeRewriter,
    Selector,
    Unsupported,
    arg,
    broadcast_binary,
    broadcast_operands,
    broadcast_rows,
    cast_to,
    number_arg,
    operand,
    require_float,
    scalar_constant,
    unary_op,
    with_shape,
)
from spyrec.passes.graph.legalize.predicates import (
    as_predicate,
    boolean_binary,
    in_f32,
    is_predicate,
)

# ATen overload -> spyre unary op name
ATEN_UNARY = {
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
    "aten.sin.default": "sin",  # rotary tables of run-time positions
    "aten.cos.default": "cos",
}
# ATen overload -> spyre binary op name
ATEN_BINARY = {
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


def _select_gelu(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    require_float(op)
    approx = arg(op, "approximate", "none")
    name = {"none": "gelu", "tanh": "gelu_tanh"}.get(str(approx))
    if name is None:
        raise Unsupported(f"gelu approximation '{approx}'")
    return UNARY_OPS[name](op.operands[0], op.results[0].type, source_op=op)


def _select_unary(op: AtenOp, rewriter: LegalizeRewriter) -> Operation:
    require_float(op)
    return UNARY_OPS[ATEN_UNARY[op.target.data]](op.operands[0], op.results[0].type, source_op=op)


def _promoted(op: AtenOp, rewriter: LegalizeRewriter, v: SSAValue) -> SSAValue:
    """`v` in the element type of `op`'s result. torch.export records PyTorch's type
    promotion in the result type (f16 + f32 -> f32, bf16 * f16 -> f32, an int64 tensor + an
    f16 tensor -> f16, an f16 tensor * a 0-d f32 tensor -> f16: a 0-d operand does not
    promote a tensor of its category); an operand of another type is cast on the device
    first (spyre.cast: a float widening is exact, an integer below 2^11 (f16), 2^8 (bf16)
    or 2^24 (f32) is exact, a boolean is 0 or 1). Integer results are refused."""
    out = _element_name(op.results[0])
    if out not in FLOAT_ELEMENTS:
        raise Unsupported(f"element type {out} (only f16, bf16, f32 so far)")
    if _element_name(v) == out:
        return v
    if _element_name(v) not in (*FLOAT_ELEMENTS, *INT_ELEMENTS) and not is_predicate(v):
        raise Unsupported(f"a {_element_name(v)} operand (float, int32 / int64 and boolean "
                          "operands are promoted)")
    return _emit(rewriter, op, CastOp(v, with_shape(op.results[0], _shape(v))))


def _python_scalar(op: AtenOp, name: str) -> float:
    """A binary op's Python-number operand (`x - 1` keeps it in `other`, `1 - x` in
    `self`); a boolean is 0 or 1, as PyTorch promotes it."""
    scalar = arg(op, name)
    if not isinstance(scalar, (int, float)):
        raise Unsupported(f"a scalar operand of type {type(scalar).__name__}")
    return float(scalar)


def _select_binary(op: AtenOp, rewriter: LegalizeRewriter) -> Operation | SSAValue:
    """A binary op under NumPy's broadcasting rules. A Python number, or a one-element
    constant (a 0-d `torch.tensor(c)`, a 0-d buffer) of the result's shape's other operand,
    is the SFU's immediate; other operands broadcast through `broadcast_rows` (a 0-d or
    size-1 run-time tensor as one value per row)."""
    if arg(op, "alpha", 1) != 1:
        raise Unsupported("alpha other than 1")
    kind = ATEN_BINARY[op.target.data]
    out = _shape(op.results[0])
    if len(op.operands) == 1:
        tensor_is_self = operand(op, "self") is not None
        scalar = _python_scalar(op, "other" if tensor_is_self else "self")
        reverse = (op.target.data == "aten.rsub.Scalar") == tensor_is_self
        return _scalar_op(op, rewriter, kind, _promoted(op, rewriter, op.operands[0]),
                          scalar, reverse=reverse)
    if len(op.operands) != 2:
        raise Unsupported(f"{len(op.operands)} tensor operands")
    if _element_name(op.results[0]) == "i1" and kind in COMMUTATIVE:  # of booleans
        return boolean_binary(op, rewriter, "and" if kind in ("mul", "minimum") else "or",
                              *(as_predicate(op, rewriter, v) for v in op.operands))
    for i, other in ((1, 0), (0, 1)):
        scalar = scalar_constant(op.operands[i])
        if scalar is not None and _shape(op.operands[other]) == out:
            return _scalar_op(op, rewriter, kind, _promoted(op, rewriter, op.operands[other]),
                              scalar, reverse=i == 0)
    operands = [_promoted(op, rewriter, v) for v in op.operands]
    cls = BINARY_OPS[kind]
    a, b = broadcast_operands(op, rewriter, kind, operands[0], operands[1], out)
    if (a, b) == tuple(op.operands):
        return cls(a, b, op.results[0].type, source_op=op)
    return _emit(rewriter, op, cls(a, b, op.results[0].type))


def _select_identity(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    return op.operands[0]


def _select_cast(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    x = op.operands[0]
    if _element_name(op.results[0]) not in FLOAT_ELEMENTS or _element_name(x) not in FLOAT_ELEMENTS:
        raise Unsupported(f"cast {_element_name(x)} -> {_element_name(op.results[0])} "
                          "(float casts only so far)")
    return cast_to(op, rewriter, x, op.results[0])


def _select_cast_int(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """Casts from int32 / int64 (or a predicate) to a float type, and of any tensor to
    bool (a predicate); float casts as before. A float to int32 / int64 truncates toward
    zero (`arith.fptosi`, as PyTorch; NaN, infinities and values out of the integer range
    are undefined in PyTorch too). int32 <-> int64 keeps the values: both are int32 on the
    device (`target.layout`) and, like every integer op there, read through f32 (note
    28c: exact below 2^24)."""
    x = op.operands[0]
    source, result = _element_name(x), _element_name(op.results[0])
    if result == "i1":  # to bool: x != 0
        return as_predicate(op, rewriter, x)
    if result in FLOAT_ELEMENTS and (source in INT_ELEMENTS or is_predicate(x)):
        return _emit(rewriter, op, CastOp(x, op.results[0].type))
    if result in FLOAT_ELEMENTS and source == "i1":  # a boolean input or constant: 0.0 / 1.0
        return _emit(rewriter, op, CastOp(x, op.results[0].type))
    if result in INT_ELEMENTS and source in INT_ELEMENTS:
        if source == result:
            return x
        x = _emit(rewriter, op, CastOp(x, TensorType(Float32Type(), _shape(x))))
        return _emit(rewriter, op, CastOp(x, op.results[0].type))
    if result in INT_ELEMENTS and source in FLOAT_ELEMENTS:
        return _emit(rewriter, op, CastOp(_truncate(op, rewriter, x), op.results[0].type))
    return _select_cast(op, rewriter)


ROUNDING = 2.0**23  # c + 2^23 - 2^23 is c rounded to an integer for 0 <= c <= 2^23


def _truncate(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue) -> SSAValue:
    """x rounded toward zero, in f32, exactly (a cast to an integer type rounds only where
    the value is stored; a fused kernel reading it would see the fraction):
    with a = |x| and c = min(a, 2^23), r = (c + 2^23) - 2^23 is c rounded to nearest, and
    d = r - c is positive (at least 2^-24) exactly when it rounded up, so
    floor(a) = r - clamp(d * 2^24, 0, 1) + (a - c) (every f32 from 2^23 up is an integer);
    the sign comes back as floor(a) * (1 - 2 * clamp(-x, 0, 1)) (x in (-1, 0) has floor 0).
    """
    def scalar(kind: str, value: SSAValue, number: float) -> SSAValue:
        return _scalar_op(op, rewriter, kind, value, number)

    def clamp01(value: SSAValue) -> SSAValue:
        return scalar("minimum", scalar("maximum", value, 0.0), 1.0)

    if _element_name(x) != "f32":
        x = _emit(rewriter, op, CastOp(x, TensorType(Float32Type(), _shape(x))))
    a = unary_op(op, rewriter, "abs", x)
    c = scalar("minimum", a, ROUNDING)
    r = scalar("sub", scalar("add", c, ROUNDING), ROUNDING)
    up = clamp01(scalar("mul", _binary_op(op, rewriter, "sub", r, c), 2.0**24))
    floor = _binary_op(op, rewriter, "add", _binary_op(op, rewriter, "sub", r, up),
                       _binary_op(op, rewriter, "sub", a, c))
    negative = clamp01(scalar("mul", x, -1.0))
    sign = _scalar_op(op, rewriter, "sub", scalar("mul", negative, 2.0), 1.0, reverse=True)
    return _binary_op(op, rewriter, "mul", floor, sign)


def _select_div_mode(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """`torch.div(a, b, rounding_mode=...)`: q = a / b in f32 (IEEE, correctly rounded),
    then rounded toward zero by `_truncate` ('trunc': eager's trunc(a / b), any dtype) or
    down ('floor', integers only): floor(q) = t - clamp((t - q) * 2^25, 0, 1) with t the
    truncation. For integers |a|, |b| < 2^24 (note 85 guards the range) a rounded quotient
    never crosses an integer, and a non-integer one has a fraction of at least 2^-24
    below t, so both are exact. Eager's float floor division is fmod-based (1 // 0.1 is
    9, floor(1 / 0.1) is 10), which the device has no op for: refused."""
    mode = arg(op, "rounding_mode")
    out = _element_name(op.results[0])
    divisor = arg(op, "other")  # a Python number (`x // 8192`: Llama 4's attention chunks)
    scalar = len(op.operands) == 1 and isinstance(divisor, int | float) \
        and not isinstance(divisor, bool) and divisor != 0
    if mode not in ("trunc", "floor") or not (len(op.operands) == 2 or scalar):
        raise Unsupported(f"rounding_mode={mode!r} with {len(op.operands)} tensor operands "
                          "(only 'trunc' and 'floor' of two tensors or of a tensor and a "
                          "nonzero number)")
    if mode == "floor" and out not in INT_ELEMENTS:
        raise Unsupported(
            f"rounding_mode='floor' of {out} values (eager's float floor division is "
            "fmod-based, which the device has no op for; use rounding_mode='trunc', or "
            "divide integers)")
    for v in op.operands:
        if _element_name(v) not in (*FLOAT_ELEMENTS, *INT_ELEMENTS):
            raise Unsupported(f"a {_element_name(v)} operand (float and int32 / int64 only)")
    a, *b = (in_f32(op, rewriter, v) for v in op.operands)
    if b:
        quotient = broadcast_binary(op, rewriter, "div", a, b[0])
    else:  # an integer divisor is exact in f32 below 2^24, as the tensors' values are
        if out in INT_ELEMENTS and (not float(divisor).is_integer()  # type: ignore[arg-type]
                                    or abs(divisor) >= 2**24):  # type: ignore[arg-type]
            raise Unsupported(f"an integer tensor divided by {divisor!r} (integer divisors "
                              "below 2^24 are lowered)")
        quotient = _scalar_op(op, rewriter, "div", a, float(divisor))  # type: ignore[arg-type]
    rounded = _truncate(op, rewriter, quotient)
    if mode == "floor":
        below = _scalar_op(op, rewriter, "mul",
                           _binary_op(op, rewriter, "sub", rounded, quotient), 2.0**25)
        below = _scalar_op(op, rewriter, "minimum",
                           _scalar_op(op, rewriter, "maximum", below, 0.0), 1.0)
        rounded = _binary_op(op, rewriter, "sub", rounded, below)
    if rounded.type == op.results[0].type:
        return rounded
    return _emit(rewriter, op, CastOp(rounded, op.results[0].type))


def _select_remainder(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """`a % b` of integers (Python's modulus: the sign of the divisor), as eager computes
    it: r = a - b * trunc(a / b), plus b where r is nonzero and its sign is not b's. Every
    step is exact in f32 for |a|, |b| < 2^24 (note 85 guards the range): the truncated
    quotient as in `_select_div_mode`, |b * trunc(a / b)| <= |a|, |r| < |b|, and r * b,
    a product of integers, is negative exactly when their signs differ (rounded or not).
    Float remainders are fmod-based in eager, which the device has no op for: refused."""
    out = _element_name(op.results[0])
    if out not in INT_ELEMENTS:
        raise Unsupported(f"a remainder of {out} values (eager's float remainder is "
                          "fmod-based, which the device has no op for; integers are lowered)")
    divisor = arg(op, "other")
    if len(op.operands) == 1 and (not isinstance(divisor, int) or isinstance(divisor, bool)
                                  or divisor == 0 or abs(divisor) >= 2**24):
        raise Unsupported(f"a remainder by {divisor!r} (integer divisors other than 0, "
                          "below 2^24 in magnitude, are lowered)")
    if len(op.operands) not in (1, 2):
        raise Unsupported(f"{len(op.operands)} tensor operands")
    a, *b = (in_f32(op, rewriter, v) for v in op.operands)
    if b:
        a = broadcast_rows(op, rewriter, a, _shape(op.results[0]))

    def times_b(x: SSAValue) -> SSAValue:
        return broadcast_binary(op, rewriter, "mul", x, b[0]) if b else _scalar_op(
            op, rewriter, "mul", x, float(divisor))  # type: ignore[arg-type]

    quotient = broadcast_binary(op, rewriter, "div", a, b[0]) if b else _scalar_op(
        op, rewriter, "div", a, float(divisor))  # type: ignore[arg-type]
    r = broadcast_binary(op, rewriter, "sub", a, times_b(_truncate(op, rewriter, quotient)))
    # 1 where r * b < 0 (|r * b| >= 1 there), else 0
    wrong = _scalar_op(op, rewriter, "minimum", _scalar_op(
        op, rewriter, "maximum", _scalar_op(op, rewriter, "mul", times_b(r), -1.0), 0.0), 1.0)
    r = broadcast_binary(op, rewriter, "add", r, times_b(wrong))
    return _emit(rewriter, op, CastOp(r, op.results[0].type))


def _select_pow(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    require_float(op)
    x = op.operands[0]
    exponent = arg(op, "exponent")
    if exponent == 1:
        return x
    if exponent == 2:
        return _binary_op(op, rewriter, "mul", x, x)
    if exponent == 3:  # the tanh GELU of GPT-2 (`gelu_new`) cubes its input
        return _binary_op(op, rewriter, "mul", _binary_op(op, rewriter, "mul", x, x), x)
    unary = {0.5: "sqrt", -0.5: "rsqrt", -1: "reciprocal"}.get(exponent)
    if unary is None:
        return _select_pow_general(op, rewriter)
    return _emit(rewriter, op, UNARY_OPS[unary](x, x.type))


def _select_pow_general(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """x ** p for an exponent without a one-op form: small integers by repeated
    multiplication (and a reciprocal for negative ones), others as exp(p * log x), which
    is NaN for x < 0 as torch's is."""
    x = op.operands[0]
    p = number_arg(op, "exponent")
    assert p is not None
    if p == int(p) and 2 <= abs(p) <= 8:
        acc = x
        for _ in range(int(abs(p)) - 1):
            acc = _binary_op(op, rewriter, "mul", acc, x)
        return acc if p > 0 else unary_op(op, rewriter, "reciprocal", acc)
    return unary_op(op, rewriter, "exp", _scalar_op(op, rewriter, "mul",
                                                    unary_op(op, rewriter, "log", x), p))


def _select_pow_scalar_base(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """b ** x for a positive number b: exp(x * log b)."""
    require_float(op)
    base = number_arg(op, "self")
    if base is None or base <= 0:
        raise Unsupported(f"base {base} (a positive number is lowered)")
    x = cast_to(op, rewriter, op.operands[0], op.results[0])
    return unary_op(op, rewriter, "exp", _scalar_op(op, rewriter, "mul", x, math.log(base)))


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
    require_float(op)
    x = cast_to(op, rewriter, op.operands[0], op.results[0])
    target = op.target.data
    if len(op.operands) > 1:  # tensor bounds
        if target == "aten.clamp.Tensor":
            low, high = operand(op, "min"), operand(op, "max")
        else:
            low, high = ((op.operands[1], None) if target == "aten.clamp_min.Tensor"
                         else (None, op.operands[1]))
        out = _shape(op.results[0])
        if low is not None:
            x = _binary_op(op, rewriter, "maximum", x, broadcast_rows(op, rewriter, low, out))
        if high is not None:
            x = _binary_op(op, rewriter, "minimum", x, broadcast_rows(op, rewriter, high, out))
        return x
    if target == "aten.hardtanh.default":
        low, high = number_arg(op, "min_val"), number_arg(op, "max_val")
        return _clamp(op, rewriter, x, -1.0 if low is None else low, 1.0 if high is None else high)
    if target == "aten.clamp_min.default":
        return _clamp(op, rewriter, x, number_arg(op, "min"), None)
    if target == "aten.clamp_max.default":
        return _clamp(op, rewriter, x, None, number_arg(op, "max"))
    return _clamp(op, rewriter, x, number_arg(op, "min"), number_arg(op, "max"))


def _select_leaky_relu(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """leaky_relu(x) = max(x, slope * x) for 0 <= slope <= 1, min(x, slope * x) above."""
    require_float(op)
    x = op.operands[0]
    slope = number_arg(op, "negative_slope")
    slope = 0.01 if slope is None else slope
    if slope < 0:
        raise Unsupported(f"negative_slope {slope} < 0")
    scaled = _scalar_op(op, rewriter, "mul", x, slope)
    return _binary_op(op, rewriter, "maximum" if slope <= 1 else "minimum", x, scaled)


def _select_elu(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """elu(x) = max(x, 0) + min(alpha * (exp(x) - 1), 0): the two terms are never both
    non-zero, because exp(x) - 1 has the sign of x."""
    require_float(op)
    x = op.operands[0]
    alpha = number_arg(op, "alpha")
    alpha = 1.0 if alpha is None else alpha
    scale, input_scale = (number_arg(op, name) for name in ("scale", "input_scale"))
    if alpha < 0 or (scale or 1.0) <= 0 or (input_scale or 1.0) <= 0:
        raise Unsupported(f"alpha {alpha}, scale {scale}, input_scale {input_scale} (positive "
                          "values are lowered)")
    # selu: elu(x) * scale with exp(input_scale * x) in its negative part
    scaled = x if input_scale in (None, 1.0) else _scalar_op(op, rewriter, "mul", x, input_scale)
    expm1 = _scalar_op(op, rewriter, "add", unary_op(op, rewriter, "exp", scaled), -1.0)
    negative = _scalar_op(op, rewriter, "minimum", _scalar_op(op, rewriter, "mul", expm1, alpha),
                          0.0)
    y = _binary_op(op, rewriter, "add", unary_op(op, rewriter, "relu", x), negative)
    return y if scale in (None, 1.0) else _scalar_op(op, rewriter, "mul", y, scale)


def _select_shifted(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """expm1(x) = exp(x) - 1 and log1p(x) = log(x + 1), in the kernel's fp32: absolutely
    accurate to fp32's rounding of 1 (about 6e-8), not relatively so for results far
    smaller than that."""
    require_float(op)
    x = op.operands[0]
    if op.target.data == "aten.expm1.default":
        return _scalar_op(op, rewriter, "add", unary_op(op, rewriter, "exp", x), -1.0)
    return unary_op(op, rewriter, "log", _scalar_op(op, rewriter, "add", x, 1.0))


def _select_rrelu(op: AtenOp, rewriter: LegalizeRewriter) -> list[SSAValue | None]:
    """rrelu in eval mode: leaky_relu with the mean slope (lower + upper) / 2, as torch's
    inference is; training mode draws random slopes and is refused."""
    if arg(op, "training", False):
        raise Unsupported("training mode (random slopes); export the model in eval mode")
    require_float(op)
    lower, upper = number_arg(op, "lower"), number_arg(op, "upper")
    slope = ((1 / 8 if lower is None else lower) + (1 / 3 if upper is None else upper)) / 2
    x = op.operands[0]
    return [_binary_op(op, rewriter, "maximum", x, _scalar_op(op, rewriter, "mul", x, slope)),
            None]


def _softplus(op: AtenOp, rewriter: LegalizeRewriter, x: SSAValue) -> SSAValue:
    """log(1 + exp(x)) as max(x, 0) + log(1 + exp(-|x|)), which never overflows."""
    tail = unary_op(op, rewriter, "exp",
                    unary_op(op, rewriter, "neg", unary_op(op, rewriter, "abs", x)))
    log1p = unary_op(op, rewriter, "log", _scalar_op(op, rewriter, "add", tail, 1.0))
    return _binary_op(op, rewriter, "add", unary_op(op, rewriter, "relu", x), log1p)


def _select_softplus(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """softplus(x) = softplus(beta x) / beta; torch's linear region above `threshold`
    differs from the smooth form by less than exp(-threshold) (2e-9 at the default 20)."""
    require_float(op)
    x = op.operands[0]
    beta = number_arg(op, "beta")
    beta = 1.0 if beta is None else beta
    threshold = number_arg(op, "threshold")
    if beta <= 0:
        raise Unsupported(f"beta {beta} <= 0")
    if threshold is not None and threshold < 15:
        raise Unsupported(f"threshold {threshold} < 15 (its linear region would differ "
                          "visibly from the smooth form)")
    if beta != 1.0:
        x = _scalar_op(op, rewriter, "mul", x, beta)
    y = _softplus(op, rewriter, x)
    return y if beta == 1.0 else _scalar_op(op, rewriter, "mul", y, 1.0 / beta)


def _select_mish(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """mish(x) = x * tanh(softplus(x))."""
    require_float(op)
    x = op.operands[0]
    return _binary_op(op, rewriter, "mul", x,
                      unary_op(op, rewriter, "tanh", _softplus(op, rewriter, x)))


def _select_hard_sigmoid(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
    """hardsigmoid(x) = clamp(x / 6 + 1/2, 0, 1); hardswish(x) = x * hardsigmoid(x)."""
    require_float(op)
    x = op.operands[0]
    gate = _clamp(op, rewriter, _scalar_op(op, rewriter, "add",
                                           _scalar_op(op, rewriter, "mul", x, 1.0 / 6.0), 0.5),
                  0.0, 1.0)
    if op.target.data == "aten.hardswish.default":
        return _binary_op(op, rewriter, "mul", x, gate)
    return gate


SELECTORS: dict[str, Selector] = {
    "aten.gelu.default": _select_gelu,
    **dict.fromkeys(ATEN_UNARY, _select_unary),
    **dict.fromkeys(ATEN_BINARY, _select_binary),
    "aten.clone.default": _select_identity,
    "aten.contiguous.default": _select_identity,
    "aten.dropout.default": _select_identity,
    "aten._to_copy.default": _select_cast_int,
    "aten.to.dtype": _select_cast_int,
    "aten.div.Tensor_mode": _select_div_mode,
    "aten.remainder.Scalar": _select_remainder,
    "aten.remainder.Tensor": _select_remainder,
    "aten.pow.Tensor_Scalar": _select_pow,
    "aten.pow.Scalar": _select_pow_scalar_base,
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
    "aten.expm1.default": _select_shifted,
    "aten.log1p.default": _select_shifted,
    "aten.rrelu_with_noise_functional.default": _select_rrelu,
    "aten.mish.default": _select_mish,
    "aten.hardsigmoid.default": _select_hard_sigmoid,
    "aten.hardswish.default": _select_hard_sigmoid,
}
