"""The on-disk compile cache: a finished `.spyre` per program, options and compiler.

A compile is a pure function of its input program, its options and the compiler itself, so
its `.spyre` can be reused. The key is a SHA-256 over

* the program: a `.pt2` or `.mlir` file's bytes, or for an ExportedProgram in memory its
  graph node by node (op, target, arguments, the shape, dtype and strides of every value,
  the source line), its signature, the ranges of its symbolic sizes and the bytes of every
  weight, buffer and constant (a tensor tied to several names is read once);
* the options (`stop_after` is always the binary; pass options, the KTIR function);
* the compiler: the bytes of every Python file of the spyrec packages and the versions of
  torch, xDSL and NumPy, so an edited pass never sees a stale entry.

Entries are `.spyre` files named by their key, written with `write_atomically` (a temporary
file renamed into place), so concurrent compiles of the same program each leave a complete
file and an interrupted one leaves none. A read checks the container's checksums; an entry
that fails them is deleted and the program recompiled.

The cache lives in `$SPYREC_CACHE_DIR` (default `~/.cache/spyrec`); `SPYREC_CACHE=0`
switches it off. `spyrec cache info` and `spyrec cache clear` show and empty it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from spyrec.target.container import ContainerError, SpyreBinary, read_spyre, write_atomically

# every package whose source decides a compiled binary (a change to any of them is a new compiler)
PACKAGES = ("spyrec", "spyrec.frontend", "spyrec.target", "spyrec.dialects", "spyrec.passes",
            "spyrec.passes.graph", "spyrec.passes.graph.legalize", "spyrec.passes.planning",
            "spyrec.passes.ktir", "spyrec.passes.spyrecode", "spyrec.runtime", "spyrec.tools")


def default_directory() -> Path:
    configured = os.environ.get("SPYREC_CACHE_DIR")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "spyrec"


def enabled_by_default() -> bool:
    return os.environ.get("SPYREC_CACHE", "1").lower() not in ("0", "off", "false", "no")


@functools.cache
def compiler_fingerprint() -> str:
    """The spyrec sources and the versions of what they run on."""
    import numpy
    import xdsl

    digest = hashlib.sha256()
    for name in PACKAGES:
        for directory in importlib.import_module(name).__path__:
            for path in sorted(Path(directory).glob("*.py")):
                digest.update(f"{name}/{path.name}\0".encode())
                digest.update(path.read_bytes())
    versions = (torch.__version__, str(getattr(xdsl, "__version__", "?")), numpy.__version__)
    digest.update(repr(versions).encode())
    return digest.hexdigest()


def _tensor_bytes(t: torch.Tensor) -> memoryview:
    t = t.detach().cpu().contiguous()
    # flattened first: a 0-dim tensor (a scalar constant) cannot be viewed as bytes
    return t.reshape(-1).view(torch.uint8).numpy().data if t.numel() else memoryview(b"")


def _value_signature(value: Any) -> str:
    """Shape, dtype and strides of an FX value (a fake tensor, a SymInt, a list of them)."""
    if isinstance(value, torch.Tensor):
        return f"{value.dtype}{list(value.shape)}{list(value.stride())}"
    if isinstance(value, (list, tuple)):
        return "(" + ",".join(_value_signature(v) for v in value) + ")"
    return repr(value)


def program_fingerprint(program: torch.export.ExportedProgram) -> str:
    """A digest of everything in an ExportedProgram that a compile reads."""
    digest = hashlib.sha256()
    for node in program.graph.nodes:
        line = (node.op, node.name, str(node.target), str(node.args), str(node.kwargs),
                _value_signature(node.meta.get("val")), node.meta.get("stack_trace") or "")
        digest.update(repr(line).encode())
    digest.update(str(program.graph_signature).encode())
    digest.update(repr(sorted((str(k), str(v)) for k, v in
                              program.range_constraints.items())).encode())
    seen: dict[tuple[object, ...], str] = {}  # storage, offset, shape, strides
    tensors = {**program.state_dict, **program.constants}
    for name in sorted(tensors):
        t = tensors[name]
        if not isinstance(t, torch.Tensor):  # a script object constant: its repr
            digest.update(f"{name}\0{t!r}".encode())
            continue
        view = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape),
                tuple(t.stride()))
        if view not in seen:  # a tied weight is hashed once, then named by its first name
            seen[view] = name
            tensor_digest = hashlib.sha256(_tensor_bytes(t)).hexdigest()
            digest.update(f"{name}\0{t.dtype}{list(t.shape)}\0{tensor_digest}".encode())
        else:
            digest.update(f"{name}\0= {seen[view]}".encode())
    return digest.hexdigest()


def file_fingerprint(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class CompileCache:
    """`.spyre` files by key under `directory`."""

    directory: Path

    def __post_init__(self) -> None:
        self.directory = Path(self.directory)

    @classmethod
    def default(cls) -> CompileCache:
        return cls(default_directory())

    def key(self, program: torch.export.ExportedProgram | Path, options: dict[str, Any]) -> str:
        source = (program_fingerprint(program) if isinstance(program, torch.export.ExportedProgram)
                  else file_fingerprint(program))
        text = repr((source, sorted((k, repr(v)) for k, v in options.items()),
                     compiler_fingerprint()))
        return hashlib.sha256(text.encode()).hexdigest()

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.spyre"

    def get(self, key: str) -> SpyreBinary | None:
        """The cached binary, or None; a damaged entry is removed."""
        path = self.path(key)
        if not path.exists():
            return None
        try:
            return read_spyre(path)
        except (ContainerError, OSError):
            path.unlink(missing_ok=True)
            return None

    def put(self, key: str, write: Any) -> None:
        """Store the entry that `write(path)` writes (atomically) at `path`."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path)

    def copy_to(self, key: str, output: str | Path) -> None:
        """Write the entry to `output`, atomically."""
        with open(self.path(key), "rb") as source:
            write_atomically(output, lambda stream: shutil.copyfileobj(source, stream, 1 << 24))

    def entries(self) -> Iterator[Path]:
        if self.directory.is_dir():
            yield from sorted(self.directory.glob("??/*.spyre"))

    def clear(self) -> int:
        """Remove every entry (and leftover temporary files); return how many entries."""
        count = 0
        for path in self.entries():
            path.unlink(missing_ok=True)
            count += 1
        if self.directory.is_dir():
            for leftover in self.directory.glob("??/.*.tmp"):
                leftover.unlink(missing_ok=True)
        return count


def resolve_cache(cache: CompileCache | bool | str | Path | None) -> CompileCache | None:
    """A compile's `cache` option: None means the default (on unless `SPYREC_CACHE=0`)."""
    if isinstance(cache, CompileCache):
        return cache
    if cache is None:
        return CompileCache.default() if enabled_by_default() else None
    if isinstance(cache, bool):
        return CompileCache.default() if cache else None
    return CompileCache(Path(cache))
