"""DL16 encoding: known values, rounding, range limits, every code, fp16 data loss."""

from collections.abc import Sequence

import numpy as np
import pytest

from spyrec.runtime import dl16


def bits(values: Sequence[float | np.floating]) -> list[int]:
    return dl16.encode(np.array(values, dtype=np.float32)).tolist()


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (1.0, 0x3E00),  # exponent 31 (the bias), fraction 0
        (-2.5, 0xC080),  # -1.25 * 2^1: sign, exponent 32, fraction 0.25 * 512 = 128
        (0.0, 0x0000),
        (-0.0, 0x8000),
        (2.0**32 * (1 + 510 / 512), dl16.MAX_FINITE),  # the largest finite value
        (2.0**-31 * (1 + 1 / 512), 0x0001),  # the smallest positive value
        (2.0**-30, 0x0200),  # exponent field 1
    ],
)
def test_known_values(value: float, code: int) -> None:
    assert bits([value]) == [code]
    assert dl16.decode(np.array([code], dtype=np.uint16))[0] == np.float32(value)


def test_field_widths() -> None:
    assert 1 + dl16.EXPONENT_BITS + dl16.FRACTION_BITS == 16
    assert dl16.EXPONENT_BIAS == 2 ** (dl16.EXPONENT_BITS - 1) - 1


def test_ties_round_to_even() -> None:
    ulp = 2.0**-9  # DL16 spacing in [1, 2)
    # 1 + ulp/2 is halfway between 1 (even fraction 0) and 1 + ulp (odd): rounds down.
    # 1 + 3ulp/2 is halfway between 1 + ulp (odd) and 1 + 2ulp (even): rounds up.
    assert bits([1 + ulp / 2, 1 + 3 * ulp / 2]) == [0x3E00, 0x3E02]
    # A hair above the tie rounds up, a hair below rounds down.
    above, below = np.nextafter(np.float32(1 + ulp / 2), np.float32(2)), np.float32(1 + ulp / 4)
    assert bits([above, below]) == [0x3E01, 0x3E00]


def test_rounding_carries_into_the_exponent() -> None:
    just_below_two = np.nextafter(np.float32(2.0), np.float32(0))
    assert bits([just_below_two]) == bits([2.0])


def test_small_values_flush_to_signed_zero() -> None:
    subnormal = np.float32(1e-40)
    assert bits([subnormal, -subnormal]) == [0x0000, 0x8000]
    # 2^-31 would be exponent 0 with fraction 0, the zero pattern: DL16 has no such number.
    assert bits([2.0**-31, -(2.0**-31)]) == [0x0000, 0x8000]
    assert bits([2.0**-33]) == [0x0000]


def test_overflow_inf_and_nan_become_ninf() -> None:
    largest = 2.0**32 * (1 + 510 / 512)
    half_ulp = 2.0**32 / 1024
    # The tie just above the largest value rounds to it (even fraction), beyond it overflows.
    assert bits([largest + half_ulp]) == [0x7FFE]
    assert bits([largest + 2 * half_ulp, 1e38, np.inf, -np.inf, np.nan]) == [
        0x7FFF, 0x7FFF, 0x7FFF, 0xFFFF, 0x7FFF]
    decoded = dl16.decode(np.array([0x7FFF, 0xFFFF], dtype=np.uint16))
    assert np.isnan(decoded).all()
    assert np.signbit(decoded).tolist() == [False, True]


def test_every_code_round_trips() -> None:
    codes = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    values = dl16.decode(codes)
    assert np.array_equal(dl16.encode(values), codes)
    # Apart from the two NINF codes every code is a distinct number (and +-0).
    finite = values[np.isfinite(values)]
    assert finite.size == (1 << 16) - 2
    assert np.unique(finite).size == (1 << 16) - 3  # +0 and -0 compare equal


def test_rounding_is_to_the_nearest_code() -> None:
    x = np.random.default_rng(0).standard_normal(100_000).astype(np.float32) * 1e3
    rounded = dl16.round_dl16(x)
    spacing = np.ldexp(np.float32(1), np.frexp(rounded)[1] - 10)  # DL16 ulp at the result
    assert np.all(np.abs(rounded.astype(np.float64) - x) <= spacing / 2)


def test_fp16_data_in_unit_interval_loses_at_most_half_a_dl16_ulp() -> None:
    # Every fp16 value in [0, 1): DL16 keeps one fraction bit less, so the loss is 0 or
    # exactly half a DL16 ulp: at most 2^-11 absolute ([0.5, 1) has ulp 2^-10) and 2^-10
    # relative (the half-ulp step right above a power of two).
    x = np.arange(0x0000, 0x3C00, dtype=np.uint16).view(np.float16).astype(np.float32)
    error = np.abs(dl16.round_dl16(x).astype(np.float64) - x)
    assert error.max() == 2.0**-11
    relative = error[x > 0] / x[x > 0]
    assert relative.max() <= 2.0**-10


def test_ieee_codec_is_fp16() -> None:
    codec = dl16.half_codec("ieee")
    x = np.array([1.0, 65504.0, 1e5, 2.0**-24, 1 + 2.0**-11], dtype=np.float32)
    with np.errstate(over="ignore"):
        fp16 = x.astype(np.float16)
    assert np.array_equal(codec.encode(x), fp16.view(np.uint16))
    assert np.array_equal(codec.round(x), fp16.astype(np.float32))
    with pytest.raises(ValueError, match="unknown numerics"):
        dl16.half_codec("fp8")


def test_the_encode_table_agrees_with_the_arithmetic() -> None:
    """encode gathers from a table by the top 19 bits and leaves exact ties to the arithmetic:
    every top pattern with the dropped bits that decide the rounding (zero, just above zero,
    just below, at and just above the tie, all ones) gives the arithmetic's code."""
    top = np.arange(1 << 19, dtype=np.uint32) << np.uint32(13)
    low = np.array([0, 1, 0x1FFF, 0x2000, 0x2001, 0x3FFF], dtype=np.uint32)
    # the 19th bit is the first dropped one: clear it for the low patterns below the tie
    patterns = ((top[:, None] & ~np.uint32(0x2000)) | low[None, :]).reshape(-1)
    values = patterns.view(np.float32)
    with np.errstate(all="ignore"):
        assert np.array_equal(dl16.encode(values), dl16._encode_arithmetic(values))
        strided = values.reshape(-1, 6)[:, ::2]  # not contiguous
        assert np.array_equal(dl16.encode(strided), dl16._encode_arithmetic(strided))
