"""The SFU's element functions as whole-array NumPy code.

Every function maps float32 arrays to the float32 result the SFU produces before rounding to
the destination type (a reduction maps each row to one value). Arithmetic (+, -, *, /, max,
min, abs, neg, relu, sum) is IEEE fp32. Transcendental functions are evaluated in float64 and
rounded once to float32, so they are within one fp32 ulp of the exact value (torch's CPU
kernels are too, so fp32 results agree with eager to about an ulp and DL16 results almost
always exactly).

GELU uses the exact erf form. NumPy has no erf and math.erf per element is far too slow, so
`erfc` evaluates it in float64 the way Numerical Recipes does: with t = 2 / (2 + z), z >= 0,
    erfc(z) = t * exp(-z^2 + P(2t - 1)),
where P is a degree-28 Chebyshev series, smooth on [-1, 1] because log(erfc(z) / t) + z^2 is
smooth in t. Its coefficients are interpolated at import from two exact expansions of
log(erfc(z)) + z^2: for z < 3 the everywhere-positive series
    erf(z) = 2/sqrt(pi) * exp(-z^2) * sum_n 2^n z^(2n+1) / (1*3*...*(2n+1)),
and for z >= 3 the continued fraction
    erfc(z) = exp(-z^2) / sqrt(pi) / (z + (1/2)/(z + 1/(z + (3/2)/(z + 2/(z + ...))))),
which is taken in log form so it does not underflow. The result is within 1e-12 relative of
the true erfc for every z (tested against math.erfc), far below fp32's resolution.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.polynomial import chebyshev

from spyrec.runtime.isa import BinaryFn, ReduceFn, UnaryFn

_SERIES_LIMIT = 3.0
_SERIES_TERMS = 80  # the series' terms fall below 1e-17 of the sum well before this at z < 3
_FRACTION_TERMS = 60  # the continued fraction has converged to double precision for z >= 3
_CHEBYSHEV_DEGREE = 28


def _log_erfc_plus_square(z: np.ndarray) -> np.ndarray:
    """log(erfc(z)) + z^2 for z >= 0, from the series and the continued fraction (slow)."""
    out = np.empty_like(z)
    near = z < _SERIES_LIMIT
    x = z[near]
    term, total = x.copy(), x.copy()
    for n in range(1, _SERIES_TERMS):
        term *= 2.0 * x * x / (2 * n + 1)
        total += term
    out[near] = np.log1p(-2.0 / np.sqrt(np.pi) * np.exp(-x * x) * total) + x * x
    x = z[~near]
    tail = x.copy()
    for n in range(_FRACTION_TERMS, 0, -1):
        tail = x + (0.5 * n) / tail
    out[~near] = -np.log(np.sqrt(np.pi) * tail)
    return out


def _chebyshev_argument(u: np.ndarray) -> np.ndarray:
    t = (u + 1.0) / 2.0  # u = 2t - 1 in [-1, 1] -> t in [0, 1] -> z = 2/t - 2 in [0, inf]
    z = 2.0 / t - 2.0
    return _log_erfc_plus_square(z) - np.log(t)


_ERFC_COEFFICIENTS = chebyshev.chebinterpolate(_chebyshev_argument, _CHEBYSHEV_DEGREE)


def erfc(x: np.ndarray) -> np.ndarray:
    """Complementary error function of a float64 array (relative error below 1e-12)."""
    x = np.asarray(x, dtype=np.float64)
    z = np.abs(x)
    t = 2.0 / (2.0 + z)
    result = t * np.exp(chebyshev.chebval(2.0 * t - 1.0, _ERFC_COEFFICIENTS) - z * z)
    return np.where(x < 0, 2.0 - result, result)


def erf(x: np.ndarray) -> np.ndarray:
    """Error function of a float64 array: the Maclaurin series near 0 (where 1 - erfc would
    lose the relative precision of small results), 1 - erfc elsewhere."""
    x = np.asarray(x, dtype=np.float64)
    small = np.abs(x) < 0.5
    xs = np.where(small, x, 0.0)
    term, total = xs.copy(), xs.copy()
    for n in range(1, 14):  # |term| < 0.5^27 / 13! well below 1e-17 of the sum
        term = term * -xs * xs / n
        total = total + term / (2 * n + 1)
    return np.where(small, 2.0 / np.sqrt(np.pi) * total, 1.0 - erfc(x))


def _in_double(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    def wrapped(x: np.ndarray) -> np.ndarray:
        return fn(x.astype(np.float64)).astype(np.float32)

    return wrapped


def _gelu(x: np.ndarray) -> np.ndarray:
    # 0.5 * x * erfc(-x / sqrt 2) keeps full relative accuracy in the negative tail.
    return 0.5 * x * erfc(-x / np.sqrt(2.0))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x * x * x)))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp of -|x| never overflows, and the negative side keeps its tiny values' precision.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


UNARY: dict[UnaryFn, Callable[[np.ndarray], np.ndarray]] = {
    UnaryFn.COPY: lambda x: x,
    UnaryFn.RELU: lambda x: np.maximum(x, np.float32(0)),
    UnaryFn.GELU: _in_double(_gelu),
    UnaryFn.GELU_TANH: _in_double(_gelu_tanh),
    UnaryFn.EXP: _in_double(np.exp),
    UnaryFn.NEG: np.negative,
    UnaryFn.SIGMOID: _in_double(_sigmoid),
    UnaryFn.SILU: _in_double(lambda x: x * _sigmoid(x)),
    UnaryFn.TANH: _in_double(np.tanh),
    UnaryFn.SQRT: _in_double(np.sqrt),
    UnaryFn.RSQRT: _in_double(lambda x: 1.0 / np.sqrt(x)),
    UnaryFn.RECIPROCAL: _in_double(lambda x: 1.0 / x),
    UnaryFn.ABS: np.abs,
    UnaryFn.LOG: _in_double(np.log),
    UnaryFn.ERF: _in_double(erf),
    UnaryFn.SIN: _in_double(np.sin),
    UnaryFn.COS: _in_double(np.cos),
}

BINARY: dict[BinaryFn, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    BinaryFn.ADD: np.add,
    BinaryFn.SUB: np.subtract,
    BinaryFn.MUL: np.multiply,
    BinaryFn.DIV: np.divide,
    BinaryFn.MAX: np.maximum,
    BinaryFn.MIN: np.minimum,
}

# Row reductions of a (rows, cols) float32 array to (rows, 1): the sum accumulates in float32
# (NumPy's pairwise order); max and min return one of the inputs, NaN if a row has one.
REDUCE: dict[ReduceFn, Callable[[np.ndarray], np.ndarray]] = {
    ReduceFn.SUM: lambda x: np.sum(x, axis=-1, dtype=np.float32, keepdims=True),
    ReduceFn.MAX: lambda x: np.max(x, axis=-1, keepdims=True),
    ReduceFn.MIN: lambda x: np.min(x, axis=-1, keepdims=True),
}

# Integer SFU work (all operands int32) wraps around like the device's 32-bit integer lanes.
INT_UNARY: dict[UnaryFn, Callable[[np.ndarray], np.ndarray]] = {
    UnaryFn.COPY: lambda x: x,
    UnaryFn.RELU: lambda x: np.maximum(x, np.int32(0)),
    UnaryFn.NEG: np.negative,
    UnaryFn.ABS: np.abs,
}

INT_BINARY: dict[BinaryFn, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    BinaryFn.ADD: np.add,
    BinaryFn.SUB: np.subtract,
    BinaryFn.MUL: np.multiply,
    BinaryFn.MAX: np.maximum,
    BinaryFn.MIN: np.minimum,
}


def float_to_int32(x: np.ndarray) -> np.ndarray:
    """Convert to int32 rounding toward zero; NaN becomes 0 and out-of-range values saturate."""
    clean = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0)
    return np.clip(clean, np.iinfo(np.int32).min, np.iinfo(np.int32).max).astype(np.int32)
