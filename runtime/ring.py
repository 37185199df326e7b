"""Instructions between cores: ring transfers, ring reductions and barriers.

They are rendezvous: an instruction of this kind takes part in a *group* of instructions on
several cores and none of them does anything until every member has been issued (its engine
is free and its dependencies have finished); then they all start together and finish
together. The groups are fixed by the programs alone, independent of timing:

* the k-th `ring.send` of core a to core b with tag t pairs with the k-th `ring.recv` of
  core b from core a with tag t;
* the k-th `ring.reduce` (or `sync.barrier`) of a core with a given group and tag (and, for
  reductions, root) joins the k-th one of every other member of that group.

`match` (`spyrec.target.rendezvous`, which the compiler's guard analysis shares) computes
the groups when a kernel is loaded, so the emulator can check that the
members agree (sizes, types) and bind their numerics before anything runs; a member whose
partner is missing is left in an incomplete group, and the schedule reports the deadlock.
Costs (`spyrec.target.timing.rendezvous_cycles`) come from the target's ring figures: a transfer of
B bytes over h hops takes h * ring_hop_cycles + B / ring_bytes_per_cycle (cut-through, the full
per-direction bandwidth; link contention between concurrent transfers is not modelled).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spyrec.runtime.dl16 import HalfCodec
from spyrec.runtime.memory import DeviceFault, LocalMemory
from spyrec.target import SpyreTarget
from spyrec.target.isa import DType, Instr, group_members, lx_access
from spyrec.target.rendezvous import Rendezvous


def validate(instr: Instr, core: int, target: SpyreTarget) -> None:
    """Check the core numbers, group and tag of a ring or sync instruction (DeviceFault)."""
    a = instr.named_args()
    if a["tag"] < 0:
        raise DeviceFault(f"tag={a['tag']} must not be negative")
    if instr.op in ("ring.send", "ring.recv"):
        name = "dst_core" if instr.op == "ring.send" else "src_core"
        peer = a[name]
        if not 0 <= peer < target.num_cores:
            raise DeviceFault(f"{name}={peer} is not a core (the target has "
                              f"{target.num_cores})")
        if peer == core:
            raise DeviceFault(f"{name}={peer} is this core; a ring transfer goes to another core")
        return
    if a["count"] < 1 or a["stride"] < 1:
        raise DeviceFault(f"group count={a['count']} stride={a['stride']} must be positive")
    members = group_members(a["first"], a["count"], a["stride"])
    if members[0] < 0 or members[-1] >= target.num_cores:
        raise DeviceFault(f"group {members} has cores outside 0..{target.num_cores - 1}")
    if core not in members:
        raise DeviceFault(f"core {core} is not in its group {members}")
    if instr.op == "ring.reduce":
        if a["dtype"] not in (DType.DL16, DType.F32):
            raise DeviceFault(f"dtype={a['dtype']}: ring.reduce sums DL16 or F32 tiles")
        if a["root"] != -1 and a["root"] not in members:
            raise DeviceFault(f"root={a['root']} is neither -1 (all) nor in the group {members}")


def check_agreement(rendezvous: Rendezvous, programs: dict[int, list[Instr]]) -> None:
    """The members of each group must move the same tile; DeviceFault at the later member."""
    for members in rendezvous.members:
        (core0, pc0), rest = members[0], members[1:]
        first = programs[core0][pc0]
        for core, pc in rest:
            instr = programs[core][pc]
            if instr.op in ("ring.send", "ring.recv"):
                shape = (instr.arg("rows"), instr.arg("row_bytes"))
                other = (first.arg("rows"), first.arg("row_bytes"))
                if shape != other:
                    raise DeviceFault(
                        f"{instr.op} of {shape[0]} rows x {shape[1]} bytes, but its matching "
                        f"{first.op} (core {core0}, pc {pc0}) has {other[0]} rows x {other[1]} "
                        "bytes").at(core, pc, instr)
            elif instr.op == "ring.reduce":
                shape = tuple(instr.arg(f) for f in ("rows", "cols", "dtype"))
                other = tuple(first.arg(f) for f in ("rows", "cols", "dtype"))
                if shape != other:
                    raise DeviceFault(
                        f"ring.reduce of rows, cols, dtype = {shape}, but core {core0} (pc "
                        f"{pc0}) reduces {other} in the same group").at(core, pc, instr)


def noop() -> None:
    """The action of a ring member whose work another member's action does (the emulator
    leaves it out of a kernel's action list)."""
    return None


def bind(
    rendezvous: Rendezvous, programs: dict[int, list[Instr]], lx: list[LocalMemory],
    codec: HalfCodec,
) -> dict[tuple[int, int], Callable[[], None]]:
    """Full-mode actions of every ring and sync instruction, keyed by (core, pc).

    A transfer's copy is bound to its ring.recv, a reduction to the group's first member in
    group order; every other member does nothing (they all start at the same cycle, and the
    hazard checker makes sure no one touches the tiles meanwhile).
    """
    actions: dict[tuple[int, int], Callable[[], None]] = {
        (core, pc): noop for core, per_pc in rendezvous.group.items() for pc in per_pc}
    for gid, members in enumerate(rendezvous.members):
        if len(members) != rendezvous.expected[gid]:
            continue  # the schedule reports the deadlock before anything runs
        op = rendezvous.ops[gid]
        if op in ("ring.send", "ring.recv"):
            by_op = {programs[c][p].op: (c, p) for c, p in members}
            (send_core, send_pc), (recv_core, recv_pc) = by_op["ring.send"], by_op["ring.recv"]
            (src,), _ = lx_access(programs[send_core][send_pc])
            _, (dst,) = lx_access(programs[recv_core][recv_pc])
            actions[(recv_core, recv_pc)] = _copy(lx[send_core].view(src, np.dtype(np.uint8), 1),
                                                  lx[recv_core].view(dst, np.dtype(np.uint8), 1))
        elif op == "ring.reduce":
            order = {core: i for i, core in enumerate(group_members(*rendezvous.keys[gid][:3]))}
            ordered = sorted(members, key=lambda m: order[m[0]])
            actions[ordered[0]] = _bind_reduce(ordered, programs, lx, codec)
    return actions


def _copy(source: np.ndarray, target: np.ndarray) -> Callable[[], None]:
    return lambda: np.copyto(target, source)


def _bind_reduce(
    members: list[tuple[int, int]], programs: dict[int, list[Instr]], lx: list[LocalMemory],
    codec: HalfCodec,
) -> Callable[[], None]:
    first = programs[members[0][0]][members[0][1]]
    dtype = DType(first.arg("dtype"))
    storage = np.dtype(np.uint16) if dtype is DType.DL16 else np.dtype(np.float32)
    sources: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    for core, pc in members:
        (src,), writes = lx_access(programs[core][pc], core)
        sources.append(lx[core].view(src, storage, storage.itemsize))
        targets += [lx[core].view(region, storage, storage.itemsize) for region in writes]

    def decode(view: np.ndarray) -> np.ndarray:
        return codec.decode(view) if dtype is DType.DL16 else view.astype(np.float32)

    def run() -> None:
        total = decode(sources[0])
        for source in sources[1:]:
            total += decode(source)
        value = codec.encode(total) if dtype is DType.DL16 else total
        for view in targets:
            view[...] = value

    return run
