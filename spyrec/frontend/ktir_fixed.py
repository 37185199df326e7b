"""Memory views at hard-coded addresses (the RFC 0682 examples: `ktdp.construct_memory_view
%c1024` with no pointer argument) made views of pointer arguments, so the kernel's memory
image becomes the binary's allocation.

`pin_fixed_views(kernel, where)` finds every LPDDR view whose offset is an integer constant
(in elements of the view's type, as KTIR counts them), works out the bytes it spans, and
gives each tensor a pointer argument of its own appended to the kernel, named after its view
(`%A_view` -> `A`), the view rebuilt on it. Views at the same address with the same type,
sizes and strides share one argument; views whose bytes overlap otherwise are refused, naming
both (the binary places each argument on its own). The byte address of each new argument is
returned, recorded in the binary (`FIXED_KEY`), so `spyrec run --check` gives the
interpreter the same memory image: the binary's arrays at those addresses, zeros between.
"""

from __future__ import annotations

import re

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FunctionType, IndexType, IntegerAttr, MemRefType

from spyrec.diagnostics import CompileError
from spyrec.dialects.ktdp import ConstructMemoryViewOp
from spyrec.dialects.ktdp_values import view_reach

# the key of a binary's provenance that records {argument: byte address}, as JSON
FIXED_KEY = "ktir_fixed_addresses"
# the module attribute that carries them from the frontend to the binary
FIXED_ATTR = "spyre.ktir_fixed"


def pin_fixed_views(kernel: func.FuncOp, where: str) -> dict[str, int]:
    """Rebuild the views of `kernel` at constant addresses on new pointer arguments;
    {argument name: byte address}, empty when the kernel has no such view."""
    spans: list[tuple[int, int, ConstructMemoryViewOp, int]] = []
    for view in [o for o in kernel.walk() if isinstance(o, ConstructMemoryViewOp)]:
        owner = view.offset.owner
        if view.memory_space.kind == "ct_local" or not isinstance(owner, arith.ConstantOp) \
                or not isinstance(owner.value, IntegerAttr) or view.sizes or view.strides:
            continue
        mtype = view.result.type
        assert isinstance(mtype, MemRefType)
        itemsize = max(mtype.element_type.bitwidth // 8, 1)  # type: ignore[attr-defined]
        low, high = view_reach([int(n) for n in view.static_sizes.get_values()],
                               [int(s) for s in view.static_strides.get_values()])
        offset = owner.value.value.data
        spans.append(((offset + low) * itemsize, (offset + high + 1) * itemsize, view,
                      offset * itemsize))
    if not spans:
        return {}
    spans.sort(key=lambda s: (s[0], s[1]))
    block = kernel.body.block
    taken = {a.name_hint for a in block.args}
    pinned: dict[str, int] = {}
    previous: tuple[int, int, ConstructMemoryViewOp] | None = None
    arg = None
    for start, end, view, address in spans:
        if previous is not None and start < previous[1]:
            same = (start, end) == previous[:2] and _shape(view) == _shape(previous[2])
            if not same:
                raise CompileError(
                    f"{where}: the views %{previous[2].result.name_hint} (bytes {previous[0]} "
                    f"to {previous[1]}) and %{view.result.name_hint} (bytes {start} to {end}) "
                    "at fixed addresses overlap; the compiler places each tensor on its own: "
                    "view one tensor once (the same address, type, sizes and strides), or "
                    "pass pointer arguments")
        else:
            name = _name(view, taken, address)
            taken.add(name)
            arg = block.insert_arg(IndexType(), len(block.args))
            arg.name_hint = name
            pinned[name] = address
            previous = (start, end, view)
        assert arg is not None
        view.operands[0] = arg
    inputs = [a.type for a in block.args]
    outputs = list(kernel.function_type.outputs.data)
    kernel.function_type = FunctionType.from_lists(inputs, outputs)
    return pinned


def _shape(view: ConstructMemoryViewOp) -> tuple[object, ...]:
    return (view.result.type, tuple(view.static_sizes.get_values()),
            tuple(view.static_strides.get_values()))


def _name(view: ConstructMemoryViewOp, taken: set[str | None], start: int) -> str:
    """The view's name without a `_view` / `_mem_view` suffix, if it is a free identifier;
    else `at_<byte address>`."""
    hint = view.result.name_hint or ""
    name = re.sub(r"(_mem)?_?view$", "", hint) or hint
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name in taken:
        name = f"at_{start}"
    return name
