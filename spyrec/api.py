"""The Python API: `spyrec.compile`, `spyrec.load` and `Executable`.

    exe = spyrec.compile(torch.export.export(model, (x,)))
    y = exe(x)                       # runs on the Spyre emulator, returns torch tensors
    exe.last_profile.to_dict()       # emulated_us, roofline_ratio, bytes_ratio, program_flops, ...
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import torch

from spyrec.diagnostics import RunError
from spyrec.target.container import SpyreBinary, read_spyre

TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
                "int32": torch.int32, "int64": torch.int64, "bool": torch.bool}


def to_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def to_torch(a: np.ndarray) -> torch.Tensor:
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a))


class Executable:
    """A compiled program bound to the emulator; call it with torch tensors."""

    def __init__(self, binary: SpyreBinary, numerics: str = "dl16", mode: str = "full"):
        self.binary = binary
        self.numerics = numerics
        self.mode = mode
        self.last_profile: Any = None
        self._emulator: Any = None  # built on first call: weights converted and checked once

    def _check(self, tensors: Sequence[torch.Tensor]) -> None:
        """Count, type, dtype and static sizes of the caller's inputs (not the key masks
        the host makes); symbolic sizes are the emulator's to check."""
        sig = self.binary.user_inputs
        if len(tensors) != len(sig):
            raise RunError(f"the program takes {len(sig)} input(s) "
                           f"({', '.join(b.name for b in sig)}), got {len(tensors)}")
        for t, b in zip(tensors, sig):
            want = TORCH_DTYPES[b.layout.host_dtype]
            if not isinstance(t, torch.Tensor):
                raise RunError(f"input '{b.name}': expected a torch.Tensor, got {type(t).__name__}")
            shape = [b.symbolic.get(d, n) for d, n in enumerate(b.layout.shape)]
            static = len(t.shape) == len(shape) and all(
                n == s for n, s in zip(t.shape, shape) if isinstance(s, int))
            if not static or t.dtype != want:
                raise RunError(
                    f"input '{b.name}': expected shape [{', '.join(map(str, shape))}] {want}, "
                    f"got {list(t.shape)} {t.dtype}; the program was compiled for that shape")

    def buffer(self, name: str) -> torch.Tensor:
        """The current value of weight or buffer `name` as the device holds it: a buffer the
        program updates in place (a KV cache) shows every call made so far, as the torch
        module's buffer does after the same calls."""
        from spyrec.runtime.layout import from_device

        match = [(b, data) for b, data in self.binary.weights if b.name == name]
        if not match:
            names = ", ".join(b.name for b, _ in self.binary.weights)
            raise RunError(f"no weight or buffer '{name}' in the program (it has {names})")
        binding, data = match[0]
        if self._emulator is None or self.mode != "full":
            return to_torch(data)
        raw = self._emulator.memory.read(binding.addr, binding.layout.nbytes)
        return to_torch(from_device(binding.layout, raw, self.numerics))

    def __call__(self, *tensors: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        from spyrec.runtime.emulator import Emulator

        self._check(tensors)
        if self._emulator is None:
            self._emulator = Emulator(self.binary, numerics=self.numerics, mode=self.mode)
        outputs, profile = self._emulator.run([to_numpy(t) for t in tensors])
        self.last_profile = profile
        results = tuple(to_torch(o) for o in outputs)
        return results[0] if len(results) == 1 else results


def compile(program: torch.export.ExportedProgram | str | Path, output: str | Path | None = None,
            **options: Any) -> Executable:
    """Compile an ExportedProgram or a .pt2 path for Spyre; optionally write the .spyre.

    Options: `numerics` ("dl16" or "ieee"), the switches of `spyrec.pipelines.
    compile_options` (`fuse`, `double_buffer`, `resident`, `share`, `tail`, `ring_reduce`,
    `keep_in_lx`, `target`),
    `cache` (True: the
    default on-disk compile cache, unless `SPYREC_CACHE=0`; False: none; a directory: a
    cache there), and `compile_program`'s (`function` and `constants` for a KTIR .mlir:
    `spyrec.compile("k.mlir", function="add_kernel", constants={"BLOCK_SIZE": 128})` binds
    the kernel's scalar arguments at compile time; `masked_tails=True` masks its access
    tiles, docs/ktir.md §7; `grid=(32,)` launches it on that grid instead of its `grid`
    attribute)."""
    from spyrec.cache import resolve_cache
    from spyrec.driver import compile_program
    from spyrec.pipelines import compile_options

    numerics = options.pop("numerics", "dl16")
    options["cache"] = resolve_cache(options.pop("cache", None))
    switches = {k: options.pop(k) for k in ("fuse", "double_buffer", "resident", "share",
                                            "tail", "ring_reduce", "keep_in_lx", "target")
                if k in options}
    if switches:
        options["pass_options"] = compile_options(**switches)
    result = compile_program(program, output, **options)
    assert result.binary is not None
    return Executable(result.binary, numerics=numerics)


def load(path: str | Path, numerics: str = "dl16") -> Executable:
    """Load a .spyre file written by `spyrec compile`."""
    return Executable(read_spyre(path), numerics=numerics)
