"""DL16 ("DLFloat16"), the 16-bit number format Spyre computes fp16 and bf16 data in.

Bit layout, most significant first: 1 sign bit, 6 exponent bits (bias 31), 9 fraction bits.
The conventions follow IBM's published reference conversion for this format (the NNP-data-type-1
class in onnx-mlir/zDNN), except for the rounding of exact ties (see below):

* every exponent field, 0 and 63 included, is a normal binade: value = (-1)^s * 2^(e-31) * 1.f;
* the two magnitude patterns that are not numbers are reserved: 0x0000 (magnitude all zeros) is
  zero, so +-0 exist; 0x7FFF (magnitude all ones) is "NINF", the one pattern DL16 has for NaN,
  infinity and overflow. It decodes to NaN (its sign kept), as IBM's conversion does;
* there are no subnormals: a value whose magnitude rounds below the smallest nonzero magnitude
  2^-31 * (1 + 2^-9) becomes a zero of the same sign (fp32 subnormals always do);
* the largest finite magnitude is 0x7FFE = 2^32 * (1 + 510/512), about 8.573e9. A finite value
  that rounds beyond it, +-infinity and NaN all encode to NINF with the input's sign;
* conversion from fp32 rounds to nearest, ties to even. IBM's reference conversion rounds ties
  away from zero instead; the two differ only on values exactly halfway between two DL16
  numbers (fp32 inputs whose 14 dropped bits are 10000000000000).

Consequence for the compiler: DL16 has no infinity, so an fp16 `-inf` (e.g. an attention mask)
becomes NaN on device; masks must use a large finite value instead.

Besides DL16 the runtime offers an "ieee" numerics mode, a debugging aid in which 16-bit device
storage holds IEEE fp16 bits instead; `half_codec` hands out the matching conversion pair.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

EXPONENT_BITS = 6
FRACTION_BITS = 9
EXPONENT_BIAS = 31
NINF = 0x7FFF  # magnitude pattern of NaN / infinity / overflow
MAX_FINITE = 0x7FFE  # bit pattern of the largest finite magnitude

_DROPPED = 23 - FRACTION_BITS  # fp32 fraction bits that DL16 drops
_HALF_MINUS_ONE = np.uint32((1 << (_DROPPED - 1)) - 1)
# A float32 magnitude shifted right by _DROPPED is (fp32 biased exponent << 9) | fraction; the
# DL16 magnitude code is that minus _LOWEST, where _LOWEST is DL16 exponent 0 in fp32 terms.
_LOWEST = np.uint32((127 - EXPONENT_BIAS) << FRACTION_BITS)


def _encode_arithmetic(x: np.ndarray) -> np.ndarray:
    """Round float32 values to DL16 and return the bit patterns (uint16, same shape)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    mag = bits & np.uint32(0x7FFF_FFFF)
    # Round to nearest even on the dropped bits: adding 0x1FFF plus the kept lsb carries into
    # the kept bits exactly when the dropped part is above half, or is half and the lsb is odd.
    # A carry out of the fraction increments the exponent, which is the right result.
    lsb = mag >> np.uint32(_DROPPED)
    lsb &= np.uint32(1)
    mag += lsb
    mag += _HALF_MINUS_ONE
    mag >>= np.uint32(_DROPPED)
    # One clip does all the special cases: below DL16's range gives code 0 (zero); at or beyond
    # the NINF code (overflow, and fp32 inf/NaN, whose exponent is far above) gives NINF.
    np.clip(mag, _LOWEST, _LOWEST + np.uint32(NINF), out=mag)
    mag -= _LOWEST
    code = mag.astype(np.uint16)
    code |= (bits >> np.uint32(16)).astype(np.uint16) & np.uint16(0x8000)
    return code


# The code of every float32 by its top 19 bits (sign, exponent, the 9 kept fraction bits and
# the first dropped bit), for dropped bits other than an exact tie: with the first dropped bit
# clear the value rounds down, with it set and any other dropped bit set it rounds up. So a
# table entry is the code of its pattern with the lowest bit set (just above the tie), and
# exact ties (dropped bits 10000000000000), where the kept bit decides, are left to the
# arithmetic. 1 MiB; encode is then a shift and a gather (checked once on all 2^32 inputs;
# test_dl16 covers every rounding case of every top pattern).
_TOP_SHIFT = np.uint32(_DROPPED - 1)
_TIE_MASK = np.uint32((1 << _DROPPED) - 1)
_TIE = np.uint32(1 << (_DROPPED - 1))
_ENCODE_TABLE = _encode_arithmetic(
    ((np.arange(1 << 19, dtype=np.uint32) << _TOP_SHIFT) | np.uint32(1)).view(np.float32))


def encode(x: np.ndarray | np.generic) -> np.ndarray:
    """Round float32 values to DL16 and return the bit patterns (uint16, same shape)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    code = _ENCODE_TABLE.take(bits >> _TOP_SHIFT)
    ties = ((bits & _TIE_MASK) == _TIE).reshape(-1).nonzero()[0]
    if ties.size:
        code.reshape(-1)[ties] = _encode_arithmetic(bits.reshape(-1)[ties].view(np.float32))
    return code


def _decode_arithmetic(code: np.ndarray) -> np.ndarray:
    code = code.astype(np.uint32)
    sign = (code & np.uint32(0x8000)) << np.uint32(16)
    mag = code & np.uint32(0x7FFF)
    value = (mag << np.uint32(_DROPPED)) + (_LOWEST << np.uint32(_DROPPED))
    value[mag == 0] = 0
    value[mag == NINF] = 0x7FC0_0000  # quiet NaN
    return (value | sign).view(np.float32)


# Every DL16 code's float32 value; decoding is a gather from this 256 KiB table.
_DECODE_TABLE = _decode_arithmetic(np.arange(1 << 16, dtype=np.uint32))


def decode(bits: np.ndarray) -> np.ndarray:
    """Convert DL16 bit patterns (uint16) to float32 values (exact)."""
    # ndarray.take gathers about twice as fast as fancy indexing on tiles of thousands of
    # elements (and the method skips np.take's Python wrapper)
    codes = bits if getattr(bits, "dtype", None) == np.uint16 else np.asarray(bits, np.uint16)
    return _DECODE_TABLE.take(codes)


def round_dl16(x: np.ndarray) -> np.ndarray:
    """The float32 value nearest to each input that DL16 can hold (decode(encode(x)))."""
    return decode(encode(x))


def _encode_fp16(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # beyond fp16's range is +-inf, as intended
        return np.asarray(x, dtype=np.float32).astype(np.float16).view(np.uint16)


def _decode_fp16(bits: np.ndarray) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint16).view(np.float16).astype(np.float32)


@dataclass(frozen=True)
class HalfCodec:
    """The conversion pair between float32 and the 16-bit device format of a numerics mode."""

    name: str
    encode: Callable[[np.ndarray], np.ndarray]
    decode: Callable[[np.ndarray], np.ndarray]

    def round(self, x: np.ndarray) -> np.ndarray:
        """Round float32 values to the 16-bit format and back."""
        return self.decode(self.encode(x))


NUMERICS: dict[str, HalfCodec] = {
    "dl16": HalfCodec("dl16", encode, decode),
    "ieee": HalfCodec("ieee", _encode_fp16, _decode_fp16),
}


def half_codec(numerics: str) -> HalfCodec:
    """The 16-bit codec of a numerics mode: "dl16" (the device) or "ieee" (IEEE fp16 bits)."""
    codec = NUMERICS.get(numerics)
    if codec is None:
        raise ValueError(f"unknown numerics '{numerics}' (expected one of {sorted(NUMERICS)})")
    return codec
