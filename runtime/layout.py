"""Device layouts of tensors: how a host tensor is laid out in Spyre memory.

The layout used today is the row-sticked one: a tensor of logical shape (d0, ..., dn-1) is
viewed as `rows = d0 * ... * dn-2` rows of `cols = dn-1` elements; the last (stick) dimension
is padded with zeros to whole 128-byte sticks, and rows follow each other at `row_pitch`
bytes. fp16 and bf16 data are stored as DL16, fp32 as fp32, int32 as int32, and int64 (token
ids, positions) as int32: copying an int64 tensor in checks that every value fits.

The compiler (spyre-stickify) chooses layouts and the runtime converts host data to and from
them with `to_device` / `from_device`, so both sides agree by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from spyrec.runtime.dl16 import half_codec
from spyrec.runtime.isa import DType

STICK_BYTES = 128

# host dtype name -> device storage dtype
DEVICE_DTYPE: dict[str, DType] = {
    "float16": DType.DL16,
    "bfloat16": DType.DL16,
    "float32": DType.F32,
    "int32": DType.I32,
    "int64": DType.I32,  # ids and positions: int32 on device, range-checked on the way in
    "bool": DType.F32,  # a predicate: 0.0 / 1.0 on device (design note 28c)
}

# host dtype name -> NumPy dtype of host arrays
HOST_DTYPE: dict[str, np.dtype] = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "bool": np.dtype(np.bool_),
}


@dataclass(frozen=True)
class DeviceLayout:
    """Row-sticked layout of one tensor."""

    shape: tuple[int, ...]  # logical (host) shape
    host_dtype: str  # "float16", "bfloat16", "float32", "int32", "int64"
    # device dim i is host dim perm[i] (a channels-last image: (0, 2, 3, 1)); the host
    # permutes when it copies in and out, as it pads sticks and rounds to DL16
    perm: tuple[int, ...] | None = None

    @property
    def device_shape(self) -> tuple[int, ...]:
        if self.perm is None:
            return self.shape
        return tuple(self.shape[p] for p in self.perm)

    @property
    def device_dtype(self) -> DType:
        return DEVICE_DTYPE[self.host_dtype]

    @property
    def rows(self) -> int:
        shape = self.device_shape
        return math.prod(shape[:-1]) if len(shape) > 1 else 1

    @property
    def cols(self) -> int:
        shape = self.device_shape
        return shape[-1] if shape else 1

    @property
    def elems_per_stick(self) -> int:
        return STICK_BYTES // self.device_dtype.itemsize

    @property
    def padded_cols(self) -> int:
        e = self.elems_per_stick
        return -(-self.cols // e) * e

    @property
    def row_pitch(self) -> int:
        return self.padded_cols * self.device_dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.rows * self.row_pitch

    @property
    def logical_nbytes(self) -> int:
        """Bytes of the unpadded host tensor at device item size (the minimum traffic)."""
        return self.rows * self.cols * self.device_dtype.itemsize

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"shape": list(self.shape), "dtype": self.host_dtype}
        if self.perm is not None:
            out["perm"] = list(self.perm)
        return out

    @staticmethod
    def from_dict(data: dict[str, object]) -> DeviceLayout:
        perm = data.get("perm")
        return DeviceLayout(tuple(int(s) for s in data["shape"]), str(data["dtype"]),  # type: ignore[union-attr]
                            None if perm is None else tuple(int(p) for p in perm))  # type: ignore[union-attr]


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
    return np.ascontiguousarray(np.array(matrix).reshape(layout.device_shape).transpose(inverse))


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
