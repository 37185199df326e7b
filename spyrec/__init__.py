"""spyrec: a compiler from torch.export programs to IBM Spyre SpyreCode, with an emulator.

`spyrec.compile(program)` and `spyrec.load(path)` return an `Executable`; they import torch
lazily, so tools that only need the IR (spyre-opt) start fast. `spyrec.ktir` (the KTIR
reference interpreter's API) is imported on first use, for the same reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for static tools; at run time __getattr__ imports them on first use
    from spyrec.api import Executable, compile, load

__version__ = "0.1.0"
__all__ = ["Executable", "compile", "load"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from spyrec import api

        return getattr(api, name)
    if name == "ktir":
        import importlib

        return importlib.import_module("spyrec.ktir")
    raise AttributeError(f"module 'spyrec' has no attribute {name!r}")
