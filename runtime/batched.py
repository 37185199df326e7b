"""Core-batched execution: one NumPy call runs an instruction on every core of a kernel.

The compiler's kernels are SPMD: every core runs the same instructions on the same LX
offsets and only the LPDDR addresses of the DMAs differ. For such a kernel the emulator
executes pc by pc, each instruction once over a `CoreStack` (tiles with a leading core
axis) instead of once per core, which divides the per-instruction Python overhead by the
number of cores.

Executing in program order instead of the schedule's start order gives the same bytes when
the kernel has no LX hazard (each core's program order then agrees with its data order) and
no ring or sync instruction (cores then share nothing but LPDDR, where a kernel's cores
only read what earlier kernels wrote and write disjoint bytes; the emulator does not check
LPDDR races between cores). The emulator uses this path only for such kernels, and only
when the hazard checker ran; a test holds both paths to bit-identical results.

Per pc, the instruction runs batched when every core's instance has the same fields apart
from the LPDDR address, and the addresses step evenly through one allocation (a load may
step by 0: every core reads the same weights; a store must not overlap another core's);
otherwise that pc runs core by core. A batched call serves as many cores as keep its tiles
within BATCH_BYTES, so large tiles run in several calls whose temporaries stay in cache.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from spyrec.runtime import ops
from spyrec.runtime.constant_tiles import Site
from spyrec.runtime.dl16 import HalfCodec
from spyrec.runtime.memory import CoreStack, DeviceFault, DeviceMemory, LocalMemory
from spyrec.target.isa import INDIRECT_DMA_OPS, Engine, Instr, Region, ddr_region, lx_access

Action = Callable[[], None]
MemosOf = Callable[[list[Site]], ops.Memos]  # an action's memos, by the (core, pc) it runs


def _no_memos(sites: list[Site]) -> ops.Memos:
    return None

# LX bytes of the largest tile times the cores of one batched call, at most (see _group_size)
BATCH_BYTES = 64 * 1024


def _stack_of(cores: list[int]) -> tuple[int, int] | None:
    """(first, step) when the cores step evenly (a single core has step 1)."""
    step = cores[1] - cores[0] if len(cores) > 1 else 1
    if step <= 0 or any(b - a != step for a, b in itertools.pairwise(cores)):
        return None
    return cores[0], step


def _ddr_stack(instrs: list[Instr], memory: DeviceMemory) -> np.ndarray | None:
    """A (cores, rows, row_bytes) view of the DMAs' LPDDR regions, if they step evenly
    through one allocation (and, for stores, do not overlap)."""
    regions = [ddr_region(i) for i in instrs]
    first = regions[0]
    assert first is not None
    stride = regions[1].base - first.base if len(regions) > 1 else 0  # type: ignore[union-attr]
    if stride < 0 or any(r.base != first.base + i * stride  # type: ignore[union-attr]
                         for i, r in enumerate(regions)):
        return None
    if instrs[0].op == "dma.store" and len(regions) > 1 and stride < first.end - first.base:
        return None
    last = regions[-1]
    assert last is not None
    try:
        allocation = memory.locate(first.base, last.end)
    except DeviceFault:  # the cores' regions lie in different allocations
        return None
    assert allocation.buffer is not None
    return np.lib.stride_tricks.as_strided(
        allocation.buffer[first.base - allocation.base:],
        shape=(len(regions), first.rows, first.row_bytes), strides=(stride, first.pitch, 1))


def _same_but_ddr(instrs: list[Instr]) -> bool:
    first = instrs[0]
    if any(i.op != first.op or i.unit != first.unit for i in instrs):
        return False
    if first.spec.engine is not Engine.DMA:
        return all(i.args == first.args for i in instrs)
    keep = [k for k, name in enumerate(first.spec.fields) if name != "ddr"]
    return all(all(i.args[k] == first.args[k] for k in keep) for i in instrs)


def pc_order_actions(
    programs: dict[int, list[Instr]], memory: DeviceMemory, lx: list[LocalMemory],
    lx_all: np.ndarray, codec: HalfCodec, memos_of: MemosOf = _no_memos,
) -> list[Action] | None:
    """The kernel's actions in program order, batched over cores where the instructions
    agree; None if the programs are not the same length on every core or the cores do not
    step evenly (the caller then runs the kernel in the schedule's order)."""
    cores = sorted(programs)
    if not cores:
        return []
    stack = _stack_of(cores)
    length = len(programs[cores[0]])
    if stack is None or any(len(programs[c]) != length for c in cores):
        return None
    first, step = stack
    actions: list[Action] = []
    for pc in range(length):
        instrs = [programs[c][pc] for c in cores]
        if instrs[0].op in INDIRECT_DMA_OPS:  # data-dependent rows: one call per core
            actions += [ops.bind(i, memory, lx[c], codec, where=(c, pc))
                        for c, i in zip(cores, instrs, strict=True)]
            continue
        if not _same_but_ddr(instrs):
            actions += [ops.bind(i, memory, lx[c], codec, memos=memos_of([(c, pc)]))
                        for c, i in zip(cores, instrs, strict=True)]
            continue
        group = _group_size(instrs[0])
        for start in range(0, len(cores), group):
            part = instrs[start:start + group]
            stacked = CoreStack(lx_all, first + start * step, step, len(part))
            if part[0].spec.engine is not Engine.DMA:
                sites = [(c, pc) for c in cores[start:start + group]]
                actions.append(ops.bind(part[0], memory, stacked, codec,
                                        memos=memos_of(sites)))
                continue
            ddr = _ddr_stack(part, memory)
            if ddr is not None:
                actions.append(ops.bind(part[0], memory, stacked, codec, ddr))
                continue
            actions += [ops.bind(i, memory, lx[c], codec)
                        for c, i in zip(cores[start:start + group], part, strict=True)]
    return actions


def _group_size(instr: Instr) -> int:
    """How many cores one call serves: enough to amortise the call, few enough that the
    temporaries of a call stay in cache (measured: a GELU over 32 stacked 64x64 fp32 tiles
    ran 1.5x slower than 32 single-tile calls)."""
    reads, writes = lx_access(instr)
    tile = max(r.rows * r.row_bytes for r in reads + writes)
    return max(1, BATCH_BYTES // tile)


# kernels of more instructions than this run in start order unbatched: the grouping scan is
# Python per instruction, and such kernels' tiles are large enough to amortise their calls
START_ORDER_BATCH_LIMIT = 20_000


Touch = tuple[int, int, int, bool]  # core, first LX byte, one past the last, written
WHOLE_LX = 1 << 62


@dataclass
class _Group:
    """Pending instances of one instruction (a compute op, a ring copy of one geometry from
    one core offset, or a dma.load but for its LPDDR address), one per core; run together
    when something needs their bytes."""

    key: tuple[object, ...]
    instr: Instr  # a compute instruction, or the ring.recv of a copy
    members: dict[int, int] = field(default_factory=dict)  # core -> pc
    cores: set[int] = field(default_factory=set)  # every core whose LX it touches
    born: int = 0
    copy: tuple[Region, Region, int] | None = None  # ring copy: source, target, core offset
    load: bool = False  # dma.loads alike but for their LPDDR addresses


def start_order_actions(
    programs: dict[int, list[Instr]], actions: dict[int, list[Action]],
    order: list[tuple[int, int]], touches: Callable[[int, int], list[Touch]],
    memory: DeviceMemory, lx_all: np.ndarray, codec: HalfCodec, memos_of: MemosOf = _no_memos,
    sender_of: Callable[[int, int], tuple[int, int] | None] = lambda core, pc: None,
) -> list[Action]:
    """The actions of a kernel with ring or sync instructions, in the schedule's start
    `order`, with the same PT or SFU instruction of several cores run as one batched call,
    and likewise the ring copies of one geometry between cores the same distance apart and
    the dma.loads that differ in their LPDDR address alone.

    Walking the start order, each compute instruction waits in a pending group of its
    instruction (same op, unit and fields; one per core) instead of running, and each ring
    copy (run at its ring.recv, `sender_of` naming the matching ring.send) in a group of
    copies with the same source and target regions and the same receiver - sender offset.
    An instruction that writes bytes a pending one touches, or touches bytes a pending one
    writes (`touches(core, pc)`: the LX byte ranges, on every core, that the action at
    that position reads or writes; a copy reads the sender's LX), first runs that group,
    batched over its cores. So every pair of actions of which one writes bytes the other
    touches keeps its order, and the results are the same bytes as in start order (a test
    compares both); a group also runs when it is full or has waited `patience` positions.
    Pending loads also run before any dma.store or dma.scatter, which may write the LPDDR
    bytes they read."""
    ncores = len(programs)
    patience = 16 * ncores
    out: list[Action] = []
    groups: dict[int, _Group] = {}
    by_key: dict[tuple[object, ...], int] = {}
    pending: dict[int, list[tuple[int, int, bool, int]]] = {}  # core: lo, hi, written, id
    next_id = 0

    def flush(gid: int) -> None:
        group = groups.pop(gid)
        by_key.pop(group.key, None)
        for core in group.cores:
            pending[core] = [t for t in pending[core] if t[3] != gid]
        members = sorted(group.members.items())
        if group.copy is not None:
            out.extend(_grouped_copies(group.copy, members, actions, lx_all))
        elif group.load:
            out.extend(_grouped_loads(programs, members, actions, memory, lx_all, codec))
        else:
            out.extend(_grouped(group.instr, members, actions, memory, lx_all, codec,
                                memos_of))

    for position, (c, p) in enumerate(order):
        instr = programs[c][p]
        mine = touches(c, p)
        conflicts = {gid for core, lo, hi, written in mine
                     for a, b, w, gid in pending.get(core, ())
                     if a < hi and lo < b and (w or written)}
        if instr.op in ("dma.store", "dma.scatter"):
            conflicts |= {gid for gid, group in groups.items() if group.load}
        for gid in sorted(conflicts):  # ids grow with arrival: the older group first
            flush(gid)
        copy = None
        key: tuple[object, ...]
        if instr.op == "dma.load":
            key = ("load", *(v for name, v in zip(instr.spec.fields, instr.args, strict=True)
                             if name != "ddr"))
        elif instr.op == "ring.recv":
            sender = sender_of(c, p)
            if sender is None:
                out.append(actions[c][p])
                continue
            (src,), _ = lx_access(programs[sender[0]][sender[1]])
            _, (dst,) = lx_access(instr)
            copy = (src, dst, c - sender[0])
            key = ("copy", *copy)
        elif instr.spec.engine in (Engine.PT, Engine.SFU):
            key = (instr.op, instr.unit, instr.args)
        else:
            out.append(actions[c][p])
            continue
        gid = by_key.get(key)
        if gid is not None and c in groups[gid].members:
            flush(gid)
            gid = None
        if gid is None:
            gid, next_id = next_id, next_id + 1
            groups[gid] = _Group(key, instr, born=position, copy=copy,
                                 load=instr.op == "dma.load")
            by_key[key] = gid
        group = groups[gid]
        group.members[c] = p
        for core, lo, hi, w in mine:
            pending.setdefault(core, []).append((lo, hi, w, gid))
            group.cores.add(core)
        if len(group.members) == ncores:
            flush(gid)
        for old in [g for g, grp in groups.items() if position - grp.born > patience]:
            flush(old)
    for gid in sorted(groups):
        flush(gid)
    return out


def instruction_touches(programs: dict[int, list[Instr]], core: int, pc: int,
                        partners: list[tuple[int, int]] | None) -> list[Touch]:
    """The LX byte ranges instruction pc of core touches when its action runs: its own
    reads and writes; a ring.recv also the sender's source (its copy runs there); a
    reduction or a synchronisation all of its members' LX (`partners`: the (core, pc) of
    its ring or sync group, None outside one)."""
    instr = programs[core][pc]
    if instr.spec.engine is Engine.SYNC or instr.op == "ring.reduce":
        return [(m, 0, WHOLE_LX, True) for m, _ in (partners or [(core, pc)])]
    reads, writes = lx_access(instr, core)
    out = [(core, r.base, r.end, False) for r in reads if r.rows > 0]
    out += [(core, r.base, r.end, True) for r in writes if r.rows > 0]
    if instr.op == "ring.recv" and partners:
        for m, q in partners:
            if programs[m][q].op == "ring.send":
                (src,), _ = lx_access(programs[m][q])
                out.append((m, src.base, src.end, False))
    return out


def _runs(cores: list[int], size: int) -> list[tuple[int, int, int]]:
    """The cores as (first, step, count) runs that step evenly, at most `size` cores each
    (count 1: a core alone)."""
    return [(first + start * step, step, min(size, count - start))
            for first, step, count in _progressions(sorted(cores))
            for start in range(0, count, size)]


def _grouped(instr: Instr, group: list[tuple[int, int]], actions: dict[int, list[Action]],
             memory: DeviceMemory, lx_all: np.ndarray, codec: HalfCodec,
             memos_of: MemosOf) -> list[Action]:
    """One instruction of the cores of `group` ((core, pc), by core): batched calls over
    CoreStacks of evenly stepping cores, each core's own action for the rest."""
    pcs = dict(group)
    out: list[Action] = []
    for first, step, n in _runs(list(pcs), _group_size(instr)):
        if n == 1:
            out.append(actions[first][pcs[first]])
            continue
        sites = [(c, pcs[c]) for c in range(first, first + n * step, step)]
        out.append(ops.bind(instr, memory, CoreStack(lx_all, first, step, n), codec,
                            memos=memos_of(sites)))
    return out


def _grouped_copies(copy: tuple[Region, Region, int], group: list[tuple[int, int]],
                    actions: dict[int, list[Action]], lx_all: np.ndarray) -> list[Action]:
    """Ring copies of one geometry into the receivers of `group` ((core, pc), by core), each
    from the core `offset` below it: one strided copy per evenly stepping run of receivers
    (their senders step alike), each receiver's own action for the rest."""
    src, dst, offset = copy
    pcs = dict(group)
    out: list[Action] = []
    byte = np.dtype(np.uint8)
    size = max(1, BATCH_BYTES // max(1, dst.rows * dst.row_bytes))
    for first, step, n in _runs(list(pcs), size):
        if n == 1:
            out.append(actions[first][pcs[first]])
            continue
        target = CoreStack(lx_all, first, step, n).view(dst, byte, 1)
        source = CoreStack(lx_all, first - offset, step, n).view(src, byte, 1)
        out.append(functools.partial(np.copyto, target, source))
    return out


def _grouped_loads(programs: dict[int, list[Instr]], group: list[tuple[int, int]],
                   actions: dict[int, list[Action]], memory: DeviceMemory, lx_all: np.ndarray,
                   codec: HalfCodec) -> list[Action]:
    """dma.loads alike but for their LPDDR addresses, of the cores of `group` ((core, pc),
    by core): one call per evenly stepping run of cores whose addresses step evenly through
    one allocation, each core's own action for the rest."""
    pcs = dict(group)
    out: list[Action] = []
    for first, step, n in _runs(list(pcs), _group_size(programs[group[0][0]][group[0][1]])):
        cores = list(range(first, first + n * step, step))
        instrs = [programs[c][pcs[c]] for c in cores]
        ddr = _ddr_stack(instrs, memory) if n > 1 else None
        if ddr is None:
            out += [actions[c][pcs[c]] for c in cores]
            continue
        out.append(ops.bind(instrs[0], memory, CoreStack(lx_all, first, step, n), codec, ddr))
    return out


def _progressions(cores: list[int]) -> list[tuple[int, int, int]]:
    """Sorted cores as (first, step, count) runs: greedily the longest evenly stepping run
    from the lowest core left (cores 0 4 5 8 9 12 -> 0 4 8 12, then 5 9)."""
    left = list(cores)
    runs = []
    while left:
        first = left[0]
        best = (first, 1, 1)
        present = set(left)
        for other in left[1:]:
            step = other - first
            count = 1
            while first + count * step in present:
                count += 1
            if count > best[2]:
                best = (first, step, count)
        runs.append(best)
        taken = {best[0] + k * best[1] for k in range(best[2])}
        left = [c for c in left if c not in taken]
    return runs
