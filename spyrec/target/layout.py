"""Device layouts of tensors: how a host tensor is laid out in Spyre memory (the target's
layout rules; `spyrec.runtime.layout` converts host data to and from them).

The layout used today is the row-sticked one: a tensor of logical shape (d0, ..., dn-1) is
viewed as `rows = d0 * ... * dn-2` rows of `cols = dn-1` elements; the last (stick) dimension
is padded with zeros to whole 128-byte sticks, and rows follow each other at `row_pitch`
bytes. fp16 and bf16 data are stored as DL16, fp32 as fp32, int32 as int32, and int64 (token
ids, positions) as int32: copying an int64 tensor in checks that every value fits.

The compiler (spyre-stickify, the emitter) chooses layouts and the runtime converts host data
to and from them with `spyrec.runtime.layout.to_device` / `from_device`; both read the rules
here, so they agree by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from spyrec.target.isa import STICK_BYTES, DType


def stick_padded(nbytes: int) -> int:
    """The bytes of whole sticks that hold `nbytes`: a row's width on the device (rows are
    padded to sticks), and what a DMA moves for a part of a stick."""
    return -(-nbytes // STICK_BYTES) * STICK_BYTES


# MLIR element type name (what the IR says) -> device storage dtype
ELEMENT_DEVICE_DTYPE: dict[str, DType] = {
    "f16": DType.DL16,
    "bf16": DType.DL16,
    "f32": DType.F32,
    "i32": DType.I32,
    "i64": DType.I32,  # int64 tensors are int32 on the device
}

# MLIR element type name -> host dtype name (the keys of DEVICE_DTYPE and HOST_DTYPE)
ELEMENT_HOST_DTYPE: dict[str, str] = {
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "i32": "int32", "i64": "int64"}

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
    # the last (permuted) dim split into blocks of `block` elements, each padded to whole
    # sticks on its own: a hand-written kernel's tiles narrower than a stick at multiples
    # of their width (spyrec.frontend.ktir_blocks); a row-major split is a host reshape
    block: int | None = None

    @property
    def permuted_shape(self) -> tuple[int, ...]:
        """The host shape in device dim order (before any block split)."""
        if self.perm is None:
            return self.shape
        return tuple(self.shape[p] for p in self.perm)

    @property
    def device_shape(self) -> tuple[int, ...]:
        shape = self.permuted_shape
        if self.block is None:
            return shape
        *lead, last = shape or (1,)
        return (*lead, last // self.block, self.block)

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
        if self.block is not None:
            out["block"] = self.block
        return out

    @staticmethod
    def from_dict(data: dict[str, object]) -> DeviceLayout:
        perm, block = data.get("perm"), data.get("block")
        return DeviceLayout(tuple(int(s) for s in data["shape"]), str(data["dtype"]),  # type: ignore[union-attr]
                            None if perm is None else tuple(int(p) for p in perm),  # type: ignore[union-attr]
                            None if block is None else int(block))  # type: ignore[call-overload]
