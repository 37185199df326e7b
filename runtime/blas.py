"""Run NumPy's BLAS on one thread while the emulator executes.

The emulator's matrix products are tiles (at most an LX, usually a few KiB), far too small
for OpenBLAS's threads to pay off, and when the machine is busy threaded OpenBLAS collapses:
measured on the 2-core development machine with another test suite running, one call of the
demo decoder FFN took 6-8 ms single-threaded and 0.2-1 s with two BLAS threads. So the
emulator switches NumPy's OpenBLAS to one thread for the duration of a run and restores the
previous count afterwards (the caller's own NumPy work is not affected outside the run).

The switch uses OpenBLAS's `*_set_num_threads` entry points in the library NumPy loaded
(found through /proc/self/maps); where there is no such library (another BLAS, another OS)
it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
from collections.abc import Callable, Iterator

_PREFIXES = ("scipy_openblas", "openblas")
_SUFFIXES = ("64_", "")


@functools.cache
def _openblas_threads() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """OpenBLAS's (get, set) thread-count functions in this process, if it has OpenBLAS."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = sorted({line.split()[-1] for line in maps
                            if "openblas" in line.lower() and ".so" in line})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in _PREFIXES:
            for suffix in _SUFFIXES:
                get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                set_ = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and set_ is not None:
                    get.restype = ctypes.c_int
                    set_.argtypes = [ctypes.c_int]
                    return get, set_
    return None


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Within the block, NumPy's OpenBLAS (if any) uses one thread."""
    threads = _openblas_threads()
    if threads is None:
        yield
        return
    get, set_ = threads
    before = get()
    set_(1)
    try:
        yield
    finally:
        set_(before)
