"""spyre-legalize patterns for the elementary functions the SFU has no instruction for:
log2, log10, exp2, sinh, cosh, tan, atan, asin, acos, asinh, acosh, atanh.

Each is a composition of SFU tile ops (exp, log, sqrt, sin, cos, reciprocal, min/max, KEEP)
chosen to be accurate to a few fp32 ulps over the whole real line and to give PyTorch's
result on NaN, +-inf, +-0 and at the ends of each domain without a comparison:

- no intermediate overflows where the result is finite: sqrt(1 + x^2) is m sqrt(c^2 + r^2)
  with c = clamp(x, -1, 1) and r = 1 / max(|x|, 1), which is x / m and 1 / m for
  m = max(|x|, 1), exact at +-inf (c = +-1, r = 0);
- atan reduces its argument twice by the half-angle identity atan(x) = 2 atan(x / (1 +
  sqrt(1 + x^2))), to |t| <= tan(pi / 8), where a degree-4 polynomial in t^2 (fitted here
  for relative error, 6e-8 in fp32 Horner evaluation) is within an ulp; atan(+-inf) is
  +-pi / 2 through c and r, asin and acos go through atan by half angles as well, so no
  division by zero appears at +-1;
- NaN propagates through every op used (min and max included), an argument outside the
  domain reaches sqrt or log of a negative number, which is NaN as in PyTorch.

Compositions cost a few to about thirty SFU ops per element; they are for models that use
these functions once (hf:yoso's acos, angle features), not for hot loops.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from xdsl.ir import SSAValue

from spyrec.dialects.spyre import AtenOp
from spyrec.passes.graph.graph_build import binary_op, scalar_op
from spyrec.passes.graph.legalize.base import (
    LegalizeRewriter,
    Selector,
    cast_to,
    require_float,
    unary_op,
)

# atan(t) = t + t z Q(z), z = t^2, for 0 <= t <= tan(pi / 8): Q's coefficients, lowest
# first, a weighted least-squares fit of the relative error on Chebyshev nodes (2e-9 in
# exact arithmetic)
ATAN_Q = (-0.3333331457963146, 0.19998442085466497, -0.14243064163718214,
          0.10590773287511356, -0.060713041110355095)


class _Build:
    """Emits the ops of one composition before `op`, in the type of its operand."""

    def __init__(self, op: AtenOp, rewriter: LegalizeRewriter):
        self.op, self.rewriter = op, rewriter

    def f(self, name: str, x: SSAValue) -> SSAValue:
        return unary_op(self.op, self.rewriter, name, x)

    def s(self, kind: str, x: SSAValue, value: float, reverse: bool = False) -> SSAValue:
        return scalar_op(self.op, self.rewriter, kind, x, value, reverse=reverse)

    def b(self, kind: str, x: SSAValue, y: SSAValue) -> SSAValue:
        return binary_op(self.op, self.rewriter, kind, x, y)

    def square(self, x: SSAValue) -> SSAValue:
        return self.b("mul", x, x)

    def odd(self, x: SSAValue, magnitude: SSAValue) -> SSAValue:
        """`magnitude` with the sign of x: keep(v, relu(x)) + keep(-v, relu(-x)), -0 at
        x = 0 and NaN where x or the magnitude is NaN."""
        positive = self.b("keep", magnitude, self.f("relu", x))
        negative = self.b("keep", self.f("neg", magnitude), self.f("relu", self.f("neg", x)))
        return self.b("add", positive, negative)

    def unit_parts(self, x: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue]:
        """(c, r, m) = (x / m, 1 / m, m) for m = max(|x|, 1), exact at +-inf."""
        m = self.s("maximum", self.f("abs", x), 1.0)
        return self.s("minimum", self.s("maximum", x, -1.0), 1.0), self.f("reciprocal", m), m

    def hypot(self, c: SSAValue, r: SSAValue) -> SSAValue:
        """sqrt(c^2 + r^2) of the unit parts of a value (no overflow)."""
        return self.f("sqrt", self.b("add", self.square(c), self.square(r)))

    def half_angle(self, c: SSAValue, r: SSAValue) -> SSAValue:
        """tan(atan(x) / 2) = x / (1 + sqrt(1 + x^2)) written as c / (r + sqrt(c^2 + r^2))."""
        return self.b("div", c, self.b("add", r, self.hypot(c, r)))

    def atan_small(self, t: SSAValue) -> SSAValue:
        """atan(t) for |t| <= tan(pi / 8): the polynomial ATAN_Q."""
        z = self.square(t)
        q = self.s("add", self.s("mul", z, ATAN_Q[-1]), ATAN_Q[-2])
        for coefficient in reversed(ATAN_Q[:-2]):
            q = self.s("add", self.b("mul", q, z), coefficient)
        return self.b("add", t, self.b("mul", self.b("mul", t, z), q))

    def atan_unit(self, t: SSAValue) -> SSAValue:
        """atan(t) for |t| <= 1: one half angle, then the polynomial."""
        one_plus = self.s("add", self.f("sqrt", self.s("add", self.square(t), 1.0)), 1.0)
        return self.s("mul", self.atan_small(self.b("div", t, one_plus)), 2.0)

    def atan(self, x: SSAValue) -> SSAValue:
        c, r, _ = self.unit_parts(x)
        return self.s("mul", self.atan_unit(self.half_angle(c, r)), 2.0)

    def asin(self, x: SSAValue) -> SSAValue:
        """asin(x) = 2 atan(x / (1 + sqrt((1 - x)(1 + x)))): the argument stays within
        [-1, 1], (1 - x)(1 + x) keeps 1 - x^2's relative accuracy near +-1, and |x| > 1
        takes the sqrt of a negative number (NaN)."""
        cos = self.b("mul", self.s("sub", x, 1.0, reverse=True), self.s("add", x, 1.0))
        t = self.b("div", x, self.s("add", self.f("sqrt", cos), 1.0))
        return self.s("mul", self.atan_unit(t), 2.0)


def _composition(build: Callable[[_Build, SSAValue], SSAValue]) -> Selector:
    """A selector computing `build` on the operand cast to the result's float type."""

    def select(op: AtenOp, rewriter: LegalizeRewriter) -> SSAValue:
        require_float(op)
        return build(_Build(op, rewriter), cast_to(op, rewriter, op.operands[0], op.results[0]))

    return select


def _half_exponentials(g: _Build, x: SSAValue, combine: str) -> SSAValue:
    """exp(x - ln 2) `combine` exp(-x - ln 2): halved before the exponential, so the result
    is finite wherever sinh / cosh are in fp32; absolutely accurate to an ulp of the larger
    term."""
    return g.b(combine, g.f("exp", g.s("add", x, -math.log(2.0))),
               g.f("exp", g.s("sub", x, -math.log(2.0), reverse=True)))


def _sinh(g: _Build, x: SSAValue) -> SSAValue:
    return _half_exponentials(g, x, "sub")


def _cosh(g: _Build, x: SSAValue) -> SSAValue:
    return _half_exponentials(g, x, "add")


def _asinh(g: _Build, x: SSAValue) -> SSAValue:
    """sign(x) log(|x| + sqrt(x^2 + 1)), the root as m sqrt(c^2 + r^2): no overflow."""
    c, r, m = g.unit_parts(x)
    root = g.b("mul", m, g.hypot(c, r))
    return g.odd(x, g.f("log", g.b("add", g.f("abs", x), root)))


def _acosh(g: _Build, x: SSAValue) -> SSAValue:
    """log(x) + log(1 + sqrt((1 - r)(1 + r))) with r = 1 / x: log(x + sqrt(x^2 - 1))
    without x^2; x < 1 makes (1 - r)(1 + r) or log(x) negative-argument NaN."""
    r = g.f("reciprocal", x)
    root = g.f("sqrt", g.b("mul", g.s("sub", r, 1.0, reverse=True), g.s("add", r, 1.0)))
    return g.b("add", g.f("log", x), g.f("log", g.s("add", root, 1.0)))


def _atanh(g: _Build, x: SSAValue) -> SSAValue:
    """log((1 + x) / (1 - x)) / 2: +-inf at +-1, NaN beyond."""
    ratio = g.b("div", g.s("add", x, 1.0), g.s("sub", x, 1.0, reverse=True))
    return g.s("mul", g.f("log", ratio), 0.5)


SELECTORS: dict[str, Selector] = {
    "aten.log2.default": _composition(lambda g, x: g.s("mul", g.f("log", x), 1 / math.log(2))),
    "aten.log10.default": _composition(
        lambda g, x: g.s("mul", g.f("log", x), 1 / math.log(10))),
    "aten.exp2.default": _composition(lambda g, x: g.f("exp", g.s("mul", x, math.log(2)))),
    "aten.sinh.default": _composition(_sinh),
    "aten.cosh.default": _composition(_cosh),
    "aten.tan.default": _composition(lambda g, x: g.b("div", g.f("sin", x), g.f("cos", x))),
    "aten.atan.default": _composition(_Build.atan),
    "aten.asin.default": _composition(_Build.asin),
    # acos(x) = pi / 2 - asin(x): absolutely accurate to an ulp of pi / 2
    "aten.acos.default": _composition(
        lambda g, x: g.s("sub", g.asin(x), math.pi / 2, reverse=True)),
    "aten.asinh.default": _composition(_asinh),
    "aten.acosh.default": _composition(_acosh),
    "aten.atanh.default": _composition(_atanh),
}
