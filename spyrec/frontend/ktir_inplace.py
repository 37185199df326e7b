"""Kernel arguments updated in place: when the compiled program computes what the kernel says.

A KTIR kernel may load an argument and store to it (ktir-cpu's reduce_generic: a row
replaced by its sum). The compiled program's tensor is then both an input and an output
(`spyre.inplace` on the launch: the result is stored where the input lives, and the host
copies it in and out). That is the interpreter's meaning when nothing can observe the
update before the kernel has read what it needs. `check_in_place(kernel, arg, where)`
proves it or refuses the kernel with a `CompileError` naming the op:

- the kernel runs on one core: on several, one core could read what another has already
  written (the interpreter runs the cores in some order; the device in parallel);
- every load of the argument comes before every store to it in program order, and none of
  them is in a loop with a store to it (a later iteration would read an earlier one's write);
- every store's value depends on every load of the argument (through the ops computing
  it), so the device cannot issue a store before the loads it would overwrite complete.
"""

from __future__ import annotations

import math

from xdsl.dialects import func, scf
from xdsl.ir import BlockArgument, Operation, SSAValue

from spyrec.diagnostics import CompileError
from spyrec.dialects.ktdp import (
    ConstructAccessTileOp,
    ConstructMemoryViewOp,
    LoadOp,
    StoreOp,
)
from spyrec.dialects.spyre_plan import ktir_grid

REWRITE = ("pass the input and the output as two arguments (load one, store the other), "
           "or run the kernel in the KTIR interpreter")


def check_in_place(kernel: func.FuncOp, arg: BlockArgument, where: str) -> None:
    """Refuse `kernel` unless updating `arg` in place computes what the interpreter
    computes (module docstring)."""
    name = f"%{arg.name_hint or f'arg{arg.index}'}"
    cores = math.prod(ktir_grid(kernel))
    if cores != 1:
        raise CompileError(f"{where}: argument {name} is both loaded and stored (updated in "
                           f"place) on {cores} cores; a core could read what another has "
                           f"written: {REWRITE}")
    accesses = [op for op in kernel.walk() if isinstance(op, LoadOp | StoreOp)
                and _argument_of(op) is arg]
    loads = [op for op in accesses if isinstance(op, LoadOp)]
    stores = [op for op in accesses if isinstance(op, StoreOp)]
    for store in stores:
        early = next((load for load in loads if accesses.index(load) > accesses.index(store)),
                     None)
        if early is not None:
            raise CompileError(f"{where}: ktdp.load (%{early.results[0].name_hint}) reads "
                               f"argument {name} after a ktdp.store to it; the compiler takes "
                               f"an argument updated in place when all its loads come first: "
                               f"{REWRITE}")
        loop = next((o for o in _loops(store) if any(o.is_ancestor(a) for a in loads)), None)
        if loop is not None:
            raise CompileError(f"{where}: argument {name} is loaded and stored in one scf.for; "
                               f"a later iteration would read what an earlier one stored: "
                               f"{REWRITE}")
        read = _reaches(store.operands[0])
        missing = next((load for load in loads if load.results[0] not in read), None)
        if missing is not None:
            raise CompileError(f"{where}: the value ktdp.store writes to argument {name} does "
                               f"not depend on ktdp.load (%{missing.results[0].name_hint}), so "
                               f"the store could overwrite it before it is read: {REWRITE}")


def _argument_of(access: LoadOp | StoreOp) -> SSAValue | None:
    """The kernel argument whose view the access's direct tile is built on."""
    tile = access.operands[0 if isinstance(access, LoadOp) else 1].owner
    if not isinstance(tile, ConstructAccessTileOp):
        return None
    view = tile.operands[0].owner
    return view.offset if isinstance(view, ConstructMemoryViewOp) else None


def _loops(op: Operation) -> list[scf.ForOp]:
    loops = []
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, scf.ForOp):
            loops.append(parent)
        parent = parent.parent_op()
    return loops


def _reaches(value: SSAValue) -> set[SSAValue]:
    """Every value `value` is computed from, transitively: an op's operands, and for an op
    with regions (a loop, a branch, a linalg body) the values its regions yield and the
    values they read from outside; a loop's block argument is computed from its loop."""
    seen: set[SSAValue] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        owner = v.owner
        op = owner.parent_op() if isinstance(v, BlockArgument) else owner
        if not isinstance(op, Operation) or isinstance(op, func.FuncOp):
            continue
        todo.extend(op.operands)
        for inner in op.walk():
            if inner is op:
                continue
            yields = inner.parent_op() is op and inner.next_op is None  # a region's terminator
            todo.extend(v for v in inner.operands if yields or not op.is_ancestor(v.owner))
    return seen
