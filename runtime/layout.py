"""Host data to and from the device layouts of `spyrec.target.layout`: sticks padded with
zeros, 16-bit floats rounded to DL16 (or kept IEEE with numerics="ieee"), int64 narrowed
to int32 with a range check, channels-last permutations applied on the way."""

from __future__ import annotations

import numpy as np

from spyrec.runtime.dl16 import half_codec
from spyrec.target.isa import DType

# re-exported: the runtime's users read DEVICE_DTYPE, HOST_DTYPE and STICK_BYTES here too
from spyrec.target.layout import DEVICE_DTYPE, HOST_DTYPE, STICK_BYTES, DeviceLayout  # noqa: F401


def _host_matrix(layout: DeviceLayout, host: np.ndarray) -> np.ndarray:
    expected = HOST_DTYPE.get(layout.host_dtype)
    if expected is None:
        raise ValueError(f"unsupported host dtype '{layout.host_dtype}'")
    if host.dtype != expected or tuple(host.shape) != layout.shape:
        raise ValueError(
            f"host array is {tuple(host.shape)} {host.dtype}, "
            f"the layout wants {layout.shape} {layout.host_dtype}"
        )
    if layout.perm is not None:
        host = host.transpose(layout.perm)
    return host.reshape(layout.rows, layout.cols)


def to_device(layout: DeviceLayout, host: np.ndarray, numerics: str = "dl16") -> np.ndarray:
    """Convert a host array to the device bytes of `layout` (uint8, `layout.nbytes` long).

    fp16 and bf16 values are rounded to the 16-bit device format of `numerics` ("dl16": DL16,
    "ieee": IEEE fp16 bits); fp32 and int32 are stored as they are, int64 as int32 after a
    check that every value fits (ValueError naming the first one that does not). Padding
    columns are zero.
    """
    matrix = _host_matrix(layout, np.asarray(host))
    device = layout.device_dtype
    if layout.host_dtype == "int64":
        matrix = _narrow_int64(matrix)
    if device is DType.DL16:
        storage = np.zeros((layout.rows, layout.padded_cols), dtype=np.uint16)
        storage[:, : layout.cols] = half_codec(numerics).encode(matrix.astype(np.float32))
    else:
        storage = np.zeros((layout.rows, layout.padded_cols), dtype=_STORAGE[device])
        storage[:, : layout.cols] = matrix
    return storage.reshape(-1).view(np.uint8)


def from_device(layout: DeviceLayout, raw: np.ndarray, numerics: str = "dl16") -> np.ndarray:
    """Convert the device bytes of `layout` back to a host array of its shape and host dtype.

    16-bit device values are decoded to float32 and then rounded to the host dtype (values
    beyond fp16's range become +-inf, as a float32 -> fp16 cast does).
    """
    raw = np.ascontiguousarray(raw, dtype=np.uint8).reshape(-1)
    if raw.size != layout.nbytes:
        raise ValueError(f"device buffer has {raw.size} bytes, the layout needs {layout.nbytes}")
    host_dtype = HOST_DTYPE[layout.host_dtype]
    device = layout.device_dtype
    if device is DType.DL16:
        stored = raw.view(np.uint16).reshape(layout.rows, layout.padded_cols)[:, : layout.cols]
        with np.errstate(over="ignore"):
            matrix = half_codec(numerics).decode(stored).astype(host_dtype)
    else:
        stored = raw.view(_STORAGE[device]).reshape(layout.rows, layout.padded_cols)
        matrix = stored[:, : layout.cols].astype(host_dtype)
    if layout.perm is None:
        return np.array(matrix).reshape(layout.shape)
    inverse = tuple(int(i) for i in np.argsort(layout.perm))
    return np.ascontiguousarray(np.array(matrix).reshape(layout.permuted_shape).transpose(inverse))


_STORAGE = {DType.F32: np.dtype(np.float32), DType.I32: np.dtype(np.int32)}
_INT32 = np.iinfo(np.int32)


def check_int32(values: np.ndarray) -> None:
    """ValueError naming the first value that does not fit int32 (an id never wraps)."""
    bad = np.flatnonzero((values < _INT32.min) | (values > _INT32.max))
    if bad.size:
        flat = int(bad[0])
        raise ValueError(f"int64 value {int(values.reshape(-1)[flat])} at flat index {flat} "
                         f"does not fit the device's int32 ({bad.size} values do not)")


def _narrow_int64(matrix: np.ndarray) -> np.ndarray:
    """int64 host values as int32; ValueError if one does not fit (never a wrapped id)."""
    check_int32(matrix)
    return matrix.astype(np.int32)
