"""Host <-> device conversion of the row-sticked layout."""

import ml_dtypes
import numpy as np
import pytest

from spyrec.runtime.dl16 import encode, round_dl16
from spyrec.runtime.layout import DeviceLayout, from_device, to_device


def rows_of(raw: np.ndarray, layout: DeviceLayout, dtype: type) -> np.ndarray:
    return raw.view(dtype).reshape(layout.rows, layout.padded_cols)


def test_fp16_pads_100_columns_to_128() -> None:
    # 100 fp16 columns at 2 bytes are 200 bytes: two 128-byte sticks, 128 columns, 28 padding.
    layout = DeviceLayout((3, 100), "float16")
    assert (layout.padded_cols, layout.row_pitch, layout.nbytes) == (128, 256, 768)
    host = np.random.default_rng(0).standard_normal((3, 100)).astype(np.float16)
    raw = to_device(layout, host)
    assert raw.dtype == np.uint8 and raw.size == layout.nbytes
    stored = rows_of(raw, layout, np.uint16)
    assert np.array_equal(stored[:, :100], encode(host.astype(np.float32)))
    assert not stored[:, 100:].any()
    back = from_device(layout, raw)
    assert back.dtype == np.float16 and back.shape == (3, 100)
    assert np.array_equal(back, round_dl16(host.astype(np.float32)).astype(np.float16))


def test_fp32_pads_100_columns_to_128() -> None:
    # 100 fp32 columns are 400 bytes: four sticks of 32 columns.
    layout = DeviceLayout((2, 5, 100), "float32")
    assert (layout.rows, layout.padded_cols, layout.row_pitch) == (10, 128, 512)
    host = np.random.default_rng(1).standard_normal((2, 5, 100)).astype(np.float32)
    raw = to_device(layout, host)
    assert not rows_of(raw, layout, np.float32)[:, 100:].any()
    assert np.array_equal(from_device(layout, raw), host)  # fp32 is stored exactly


def test_int32_round_trip() -> None:
    layout = DeviceLayout((7,), "int32")
    host = np.array([0, 1, -1, 2**31 - 1, -(2**31), 12345, -678], dtype=np.int32)
    raw = to_device(layout, host)
    assert raw.size == 128 and not rows_of(raw, layout, np.int32)[:, 7:].any()
    assert np.array_equal(from_device(layout, raw), host)


def test_bf16_goes_through_dl16() -> None:
    layout = DeviceLayout((4, 64), "bfloat16")
    host = np.random.default_rng(2).standard_normal((4, 64)).astype(ml_dtypes.bfloat16)
    back = from_device(layout, to_device(layout, host))
    assert back.dtype == ml_dtypes.bfloat16
    # bf16 has 8 significant bits, DL16 10, so bf16 values in DL16's range survive exactly.
    assert np.array_equal(back, host)


def test_scalar_layout() -> None:
    layout = DeviceLayout((), "float32")
    host = np.array(2.5, dtype=np.float32)
    back = from_device(layout, to_device(layout, host))
    assert back.shape == () and back == host


def test_ieee_numerics_keep_fp16_bits() -> None:
    layout = DeviceLayout((2, 64), "float16")
    host = np.random.default_rng(3).standard_normal((2, 64)).astype(np.float16)
    raw = to_device(layout, host, numerics="ieee")
    assert np.array_equal(rows_of(raw, layout, np.uint16), host.view(np.uint16))
    assert np.array_equal(from_device(layout, raw, numerics="ieee"), host)


def test_dl16_values_beyond_fp16_become_inf_on_the_host() -> None:
    layout = DeviceLayout((1,), "float16")
    raw = np.zeros(128, dtype=np.uint8)
    raw[:2] = encode(np.array([1e6], dtype=np.float32)).view(np.uint8)
    assert from_device(layout, raw)[0] == np.inf


def test_mismatched_host_array_is_refused() -> None:
    layout = DeviceLayout((2, 3), "float16")
    with pytest.raises(ValueError, match=r"\(2, 4\) float16.*\(2, 3\) float16"):
        to_device(layout, np.zeros((2, 4), np.float16))
    with pytest.raises(ValueError, match="float32"):
        to_device(layout, np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="needs 256"):
        from_device(layout, np.zeros(100, np.uint8))
