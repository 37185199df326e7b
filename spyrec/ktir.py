"""Run KTIR kernels directly: `spyrec.ktir.execute(source, function, **args)`.

`source` is a path or MLIR text of a module with KTIR kernels (`func.func` with a `grid`
attribute). Index arguments that receive NumPy arrays are placed in LPDDR at 128-byte
aligned addresses (the kernel gets their element offsets, as KTIR specifies); scalar
arguments pass through. The result maps every array argument's name to its contents after
the run. An array whose dtype or shape does not fit the kernel's views of its parameter is
refused (`KtirError`) before anything runs. Torch tensors are accepted for arrays and come
back as tensors. The reference interpreter behind it runs all
cores of the grid concurrently and treats out-of-bounds accesses as errors (docs/ktir.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from spyrec.runtime.ktir_interpreter import Device, KtirError, run_kernel

__all__ = ["Device", "ImageOverlap", "KtirError", "execute", "parse_arg", "place_image",
           "run_kernel"]


class ImageOverlap(ValueError):
    """Two arrays of a memory image overlap: `name` starts at `address`, inside `previous`,
    which ends at byte `end`."""

    def __init__(self, name: str, address: int, previous: str, end: int):
        self.name, self.address, self.previous, self.end = name, address, previous, end
        super().__init__(f"{name} at byte {address} starts inside {previous}, which ends at "
                         f"byte {end}")


def place_image(device: Device, arrays: dict[str, tuple[int, np.ndarray]]) -> None:
    """Place each array of a kernel with hard-coded addresses at its byte address in
    `device`'s LPDDR ({name: (address, array)}), zeros between; `ImageOverlap` when one
    would start inside another."""
    end, previous = 0, ""
    for name, (address, array) in sorted(arrays.items(), key=lambda item: item[1][0]):
        if address < end:
            raise ImageOverlap(name, address, previous, end)
        if address > end:
            device.place(np.zeros(address - end, dtype=np.uint8), align=1, name="padding")
        placed = device.place(np.ascontiguousarray(array), align=1, name=name)
        assert placed == address, (name, placed, address)
        end, previous = address + array.nbytes, name


def execute(source: str | Path, function: str, **args: Any) -> dict[str, Any]:
    """Run `@function` of `source`; return every array argument after the run.

    Arguments may be NumPy arrays or torch tensors (CPU; bfloat16 included); an argument
    passed as a tensor comes back as a tensor of its dtype, an array as an array.
    (`run_kernel(..., masked_tails=True)` runs it with every access tile masked.)
    """
    tensors = {name for name, value in args.items() if _is_tensor(value)}
    if tensors:
        from spyrec.api import to_numpy

        args = {k: to_numpy(v) if k in tensors else v for k, v in args.items()}
    outputs = run_kernel(source, function, args).outputs
    if not tensors:
        return dict(outputs)
    from spyrec.api import to_torch

    return {k: to_torch(v) if k in tensors else v for k, v in outputs.items()}


def _is_tensor(value: Any) -> bool:
    """A torch tensor, without importing torch for callers that pass NumPy only."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def parse_arg(spec: str, seed: int = 0) -> tuple[str, Any]:
    """`NAME=FILE.npy`, `NAME=rand:64x128xfloat16` or `NAME=INT` as a (name, value) pair."""
    name, sep, value = spec.partition("=")
    if not sep or not name:
        raise ValueError(f"--arg {spec!r}: expected NAME=FILE.npy, NAME=rand:SHAPExDTYPE or "
                         "NAME=INT")
    if value.startswith("rand:"):
        *dims, dtype = value.removeprefix("rand:").split("x")
        try:
            shape = tuple(int(d) for d in dims)
            np_dtype = np.dtype(dtype)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"--arg {spec!r}: expected rand:SHAPExDTYPE such as "
                             "rand:64x128xfloat16") from exc
        rng = np.random.default_rng(seed)
        if np.issubdtype(np_dtype, np.integer):
            return name, rng.integers(0, 16, size=shape).astype(np_dtype)
        return name, rng.standard_normal(shape).astype(np_dtype)
    if value.endswith(".npy"):
        path = Path(value)
        if not path.exists():
            raise ValueError(f"--arg {spec!r}: {path} does not exist")
        return name, np.load(path)
    try:
        return name, int(value)
    except ValueError:
        try:
            return name, float(value)
        except ValueError:
            raise ValueError(f"--arg {spec!r}: {value!r} is not a .npy file, rand:SHAPExDTYPE "
                             "or a number") from None
