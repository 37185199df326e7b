"""The SFU's element functions as whole-array NumPy code.

Every function maps float32 arrays to the float32 result the SFU produces before rounding to
the destination type (a reduction maps each row to one value). Arithmetic (+, -, *, /, max,
min, abs, neg, relu, sum) is IEEE fp32. Transcendental functions are evaluated in float64 and
rounded once to float32, so they are within one fp32 ulp of the exact value (torch's CPU
kernels are too, so fp32 results agree with eager to about an ulp and DL16 results almost
always exactly).

GELU uses the exact erf form, 0.5 x erfc(-x / sqrt 2), which keeps full relative accuracy in
the negative tail. NumPy has no erf, and math.erfc per element is far too slow, so `erfc` and
`erf` call PyTorch's vectorised float64 kernels on the array's memory (no copy). They are
within a few float64 ulps of the exact value (tested against math.erfc/math.erf), far below
fp32's resolution. torch is imported on the first call, so modules that only build or check
programs (spyre-opt) never load it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spyrec.target.isa import BinaryFn, ReduceFn, UnaryFn


def _torch_float64(fn_name: str, x: np.ndarray) -> np.ndarray:
    import torch  # deferred: importing torch takes seconds (see docstring)

    values = np.asarray(x, dtype=np.float64)
    if not (values.flags.c_contiguous and values.flags.writeable):  # what torch can share
        values = values.copy()
    # On one thread: a tile is far too small for threads to pay off, and with the other
    # core busy a two-thread call took 7.8 ms instead of 28 us (4096 values, measured).
    threads = torch.get_num_threads()
    if threads != 1:
        torch.set_num_threads(1)
    try:
        return getattr(torch.special, fn_name)(torch.from_numpy(values)).numpy()
    finally:
        if threads != 1:
            torch.set_num_threads(threads)


def erfc(x: np.ndarray) -> np.ndarray:
    """Complementary error function of a float64 array (relative error below 1e-15)."""
    return _torch_float64("erfc", x)


def erf(x: np.ndarray) -> np.ndarray:
    """Error function of a float64 array (relative error below 1e-15)."""
    return _torch_float64("erf", x)


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

# An SFU operand: a tile, or the instruction's immediate as a NumPy scalar.
Operand = np.ndarray | np.generic

BINARY: dict[BinaryFn, Callable[[Operand, Operand], np.ndarray]] = {
    BinaryFn.ADD: np.add,
    BinaryFn.SUB: np.subtract,
    BinaryFn.MUL: np.multiply,
    BinaryFn.DIV: np.divide,
    BinaryFn.MAX: np.maximum,
    BinaryFn.MIN: np.minimum,
    BinaryFn.KEEP: lambda a, p: np.where(p != 0, a, np.float32(-0.0)),
}

# Row reductions of a (rows, cols) float32 array to (rows, 1): the sum accumulates in float32
# (NumPy's pairwise order); max and min return one of the inputs, NaN if a row has one.
# (NumPy's stubs type the float32 sum as scalar-or-array; with keepdims=True it is an array.)
REDUCE: dict[ReduceFn, Callable[[np.ndarray], np.ndarray]] = {
    ReduceFn.SUM: lambda x: np.sum(  # pyright: ignore[reportAssignmentType]
        x, axis=-1, dtype=np.float32, keepdims=True),
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

INT_BINARY: dict[BinaryFn, Callable[[Operand, Operand], np.ndarray]] = {
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
