"""Decomposition to core ATen, without torch's per-call walk of every operator.

`ExportedProgram.run_decompositions` asks `torch._export.utils._collect_all_valid_cia_ops`
twice per call for the set of functional CompositeImplicitAutograd operators: it
materializes every such operator the C++ dispatcher knows and walks every operator
namespace again, because a custom operator registered since the last call would change the
answer (torch does not cache it for that reason). For a small program that walk is half of
the whole compile's CPU (measured: 0.36 s of 0.71 s per case of the op matrix).

`decompose` answers the question from a cache whose key changes whenever the answer can:
the number of CompositeImplicitAutograd registrations in the C++ dispatcher and the
operator namespaces with the number of operators each holds. A custom operator registered
between two compiles changes the key, and the set is computed again. Only the lookup is
cached: torch still decides, per call, what to preserve and what to decompose.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator

import torch
import torch._export.utils as export_utils
import torch.export.decomp_utils as decomp_utils
import torch.export.exported_program as exported_program

_LOOKUP = "_collect_all_valid_cia_ops"  # the call being cached, as torch's modules name it
_UNCACHED = getattr(export_utils, _LOOKUP)
_CACHE: dict[tuple, frozenset] = {}


def _registry_key() -> tuple:
    """What the set of valid CIA operators depends on, cheaply: the C++ registrations and
    the Python namespaces with their operator counts."""
    registered = torch._C._dispatch_get_registrations_for_dispatch_key(
        "CompositeImplicitAutograd")
    namespaces = tuple(sorted(torch.ops._dir))
    sizes = tuple(len(list(getattr(torch.ops, name))) for name in namespaces
                  if hasattr(torch.ops, name))
    return len(registered), namespaces, sizes


def _cached_cia_ops() -> set:
    key = _registry_key()
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = frozenset(_UNCACHED())
    return set(_CACHE[key])  # callers may modify their copy (torch's own code removes ops)


_OVERRIDE = "_override_composite_implicit_decomp"  # torch's per-call patching of CIA ops
_UNTRIMMED = getattr(exported_program, _OVERRIDE)


def _own_kernel(decomposition: object) -> bool:
    """Whether `decomposition` is torch's stand-in for an operator's own
    CompositeImplicitAutograd kernel (`_get_decomp_for_cia`): calling it is what the
    dispatcher does for that operator anyway."""
    return isinstance(decomposition, functools.partial) and \
        getattr(decomposition.func, "__name__", "") == "_special_op_to_decompose_cia"


@contextlib.contextmanager
def _trimmed_override(cia_ops_to_callable: dict) -> Iterator[None]:
    """torch's override of the CIA operators, for those whose decomposition is not their
    own kernel: the ones to preserve and the custom decompositions."""
    kept = {op: fn for op, fn in cia_ops_to_callable.items() if not _own_kernel(fn)}
    with _UNTRIMMED(kept):
        yield


@contextlib.contextmanager
def _cia_cache() -> Iterator[None]:
    """The cached lookup in the two torch modules that call it, and the trimmed override,
    for one decomposition."""
    modules = (exported_program, decomp_utils)
    saved = [getattr(module, _LOOKUP) for module in modules]
    for module in modules:
        setattr(module, _LOOKUP, _cached_cia_ops)
    trim = os.environ.get("SPYREC_UNTRIMMED_CIA") != "1"
    if trim:
        setattr(exported_program, _OVERRIDE, _trimmed_override)
    try:
        yield
    finally:
        for module, function in zip(modules, saved, strict=True):
            setattr(module, _LOOKUP, function)
        setattr(exported_program, _OVERRIDE, _UNTRIMMED)


def decompose(ep: torch.export.ExportedProgram,
              keep_whole: list[torch._ops.OpOverload]) -> torch.export.ExportedProgram:
    """Decompose to core ATen, but keep `keep_whole` (composites Spyre lowers better
    whole)."""
    with _cia_cache():
        table = torch.export.default_decompositions()
        for op in keep_whole:
            table.pop(op, None)
        return ep.run_decompositions(table)
