"""spyre-place-guards: trip-count guards skip the work only padded rows need (design note 49).

Expects: a module after spyre-schedule-dataflow whose `spyre.symbols` (recorded by the
frontend, `dialects/spyre_symbolic.py`) names one symbolic size; any other module is left
as it is. Guarantees: every `spyrecode.core` holds its guarded program (packed cores stay
packed), and every `spyrecode.program` with a guard lists them in `spyre.guards`, which
spyre-emit-spyrecode writes as the `.spyre`'s patch table.

A program with a symbolic size is compiled at its upper bound (note 32), and the host pads
the inputs and crops the outputs. Most of the device's work then goes to padded rows. This
pass finds, for every instruction of every launch, the smallest value of the symbol at
which its result can reach a real output element (its *need*), wraps each run of
instructions of the same need above the lower bound in a guard `loop.begin trips=1 ...
loop.end`, and lists the guards in a patch table: launch (kernel), core, pc of the
`loop.begin`, symbol, threshold. Before a call the host's program correction writes
`trips = 1 if size >= threshold else 0` into each guard, so the device skips the work whose
results only padded positions would read.

The need of an instruction is a backward dataflow over the whole program, exact at the
granularity of 128-byte sticks of LPDDR and of the instructions' dependences:

- an output stick is needed from (1 + the largest index along the symbolic dims among the
  real elements it holds); a stick of a weight or buffer (state that outlives the call) at
  every size;
- a `dma.store` is needed from the smallest need of the later reads of the sticks it
  writes, before another store overwrites them (a store whose region is whole sticks kills
  the earlier writers' reads, which is what lets a reused activation arena's padding rows
  be skipped);
- every other instruction is needed from the smallest need of the instructions that depend
  on it (the compiler derives dependences from every LX slot read and written, so a value
  read in LX is always ordered after its producer, directly or through a chain whose needs
  are no larger);
- a `dma.load` adds its sticks as reads with its own need.

So when the device runs at size s, every instruction it runs reads only bytes whose last
writer also ran: the outputs' real elements are bit-identical to the padded run's. Kernels
with ring or sync instructions, and programs that already hold loops (loops do not nest),
are not guarded: they run whole, and their reads count at every size.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block
from xdsl.ir import Region as IRRegion
from xdsl.passes import ModulePass

from spyrec.dialects.spyre_plan import symbolic_signature
from spyrec.dialects.spyre_symbolic import Guard, record_guards
from spyrec.dialects.spyrecode import CoreOp, InstrOp
from spyrec.passes.spyrecode.program_tensors import program_tensors, weight_layout
from spyrec.passes.spyrecode.spyre_schedule_dataflow import addr_of
from spyrec.target.container import EncodedPrograms, TensorBinding
from spyrec.target.isa import (
    LOOP_OPS,
    Engine,
    Expanded,
    Instr,
    Region,
    ddr_region,
    encode_program,
    expand_loops,
)
from spyrec.target.layout import STICK_BYTES, DeviceLayout
from spyrec.target.rendezvous import match

_NEVER = np.iinfo(np.int64).max
MAX_STICKS = 1 << 27  # activations up to 16 GiB: a larger program is left unguarded
# the analysis is Python per instruction (about 20 us each): a larger program is left
# unguarded rather than add minutes to its compile
MAX_INSTRUCTIONS = 1 << 20


def output_stick_needs(layout: DeviceLayout, symbolic: Mapping[int, str], lower: int) -> np.ndarray:
    """Per stick of an output (device order), the least symbol value at which it holds a
    real element."""
    device_shape = layout.device_shape
    perm = layout.perm or tuple(range(len(device_shape)))
    need = np.full(device_shape, lower, dtype=np.int64)
    for device_dim, host_dim in enumerate(perm):
        if host_dim in symbolic:
            index = np.arange(device_shape[device_dim], dtype=np.int64) + 1
            shape = [1] * len(device_shape)
            shape[device_dim] = -1
            need = np.maximum(need, index.reshape(shape))
    matrix = need.reshape(layout.rows, layout.cols)
    padded = np.full((layout.rows, layout.padded_cols), _NEVER, dtype=np.int64)
    padded[:, : layout.cols] = matrix
    per_stick = layout.elems_per_stick
    return padded.reshape(layout.rows, -1, per_stick).min(axis=2).reshape(-1)


class _Sticks:
    """The need of the pending reads of every activation stick."""

    def __init__(self, lo: int, hi: int):
        self.lo = lo
        self.need = np.full((hi - lo) // STICK_BYTES + 1, _NEVER, dtype=np.int64)

    def inside(self, base: int, end: int) -> bool:
        return self.lo <= base and end <= self.lo + self.need.size * STICK_BYTES

    def indices(self, instr: Instr) -> tuple[np.ndarray, bool]:
        """The sticks a DMA's LPDDR region touches, and whether it covers them whole."""
        region = ddr_region(instr)
        assert region is not None
        starts = region.base - self.lo + np.arange(region.rows, dtype=np.int64) * region.pitch
        first = starts // STICK_BYTES
        last = -(-(starts + region.row_bytes) // STICK_BYTES)
        width = int((last - first).max()) if region.rows else 0
        index = first[:, None] + np.arange(width, dtype=np.int64)
        index = index[index < last[:, None]]
        whole = region.row_bytes % STICK_BYTES == 0 and (region.base - self.lo) % STICK_BYTES == 0 \
            and region.pitch % STICK_BYTES == 0
        return np.unique(index), whole


@dataclass(frozen=True)
class GuardInput:
    """What the guard analysis reads of a compiled program: its symbols, where its tensors
    are, and each launch's per-core programs."""

    symbols: Mapping[str, tuple[int, int]]  # name -> (lower, upper), inclusive
    outputs: Sequence[TensorBinding]  # with their symbolic dims
    activations: Sequence[TensorBinding]  # the inputs, outputs and intermediates
    state: Sequence[tuple[int, int]]  # (address, bytes) of the weights and buffers
    kernels: Sequence[Mapping[int, list[Instr]]]  # per launch: core -> program

    def instructions(self) -> int:
        return sum(k.instructions(c) if isinstance(k, EncodedPrograms) else len(k[c])
                   for k in self.kernels for c in k)


def _region_bounds(instr: Instr) -> tuple[int, int]:
    region = ddr_region(instr)
    assert region is not None
    return region.base, region.base + max(region.rows - 1, 0) * region.pitch + region.row_bytes


def instruction_needs(program: GuardInput, lx_bytes: int = 2 << 20
                      ) -> dict[tuple[int, int], tuple[Expanded, np.ndarray]] | None:
    """Per (kernel, core), the unrolled program and the size from which each of its
    instructions must run (its run need); None when the program has no single symbol."""
    if len(program.symbols) != 1:
        return None
    (_, (lower, upper)), = program.symbols.items()
    activations = program.activations
    if not activations:
        return None
    lo = min(b.addr for b in activations)
    hi = max(b.addr + b.layout.nbytes for b in activations)
    if (hi - lo) // STICK_BYTES > MAX_STICKS or program.instructions() > MAX_INSTRUCTIONS:
        return None
    sticks = _Sticks(lo, hi)
    for binding in program.outputs:
        start = (binding.addr - lo) // STICK_BYTES
        needs = output_stick_needs(binding.layout, binding.symbolic, lower)
        view = sticks.need[start: start + needs.size]
        np.minimum(view, needs, out=view)
    for addr, size in program.state:  # state that outlives the call, if it lies in the span
        first = max(addr, lo) - lo
        last = min(addr + size, hi) - lo
        if first < last:
            sticks.need[first // STICK_BYTES: -(-last // STICK_BYTES)] = lower
    out: dict[tuple[int, int], tuple[Expanded, np.ndarray]] = {}
    for k in range(len(program.kernels) - 1, -1, -1):
        kernel = program.kernels[k]
        expanded = {core: expand_loops(kernel[core]) for core in sorted(kernel)}
        flat = {core: e.instrs for core, e in expanded.items()}
        needs = _kernel_needs(sticks, expanded, match(flat), lower, upper, lx_bytes)
        out.update({(k, core): (expanded[core], n) for core, n in needs.items()})
    return out


_G = 16  # LX granule in bytes


def _granules(region, inner: bool = False) -> np.ndarray:
    """The LX granules a region touches, row by row (rows x granules per row); `inner`:
    only those it covers whole (what a write overwrites for sure). The cores of a kernel
    use the same LX regions, so the arrays are shared (never written)."""
    return _granules_of(region.base, region.rows, region.row_bytes, region.pitch, inner)


@functools.lru_cache(maxsize=1 << 14)
def _granules_of(base: int, rows: int, row_bytes: int, pitch: int, inner: bool) -> np.ndarray:
    if rows <= 0 or row_bytes <= 0:
        return np.zeros((0, 0), dtype=np.int64)
    region = Region(base, rows, row_bytes, pitch)
    starts = region.base + np.arange(region.rows, dtype=np.int64) * region.pitch
    if inner:
        first, end = -(-starts // _G), (starts + region.row_bytes) // _G
    else:
        first, end = starts // _G, -(-(starts + region.row_bytes) // _G)
    width = int((end - first).max())
    if width <= 0:
        return np.zeros((region.rows, 0), dtype=np.int64)
    return first[:, None] + np.arange(width, dtype=np.int64)


@dataclass
class _Access:
    """One instruction's LX reads and writes (as granules) and LPDDR sticks per row."""

    reads: np.ndarray  # flat (a broadcast row repeats its granules)
    writes: np.ndarray  # rows x granules touched
    kills: np.ndarray  # flat: the granules it overwrites whole
    # a DMA inside the activations: its sticks, rows x sticks per row (`mask`: which are
    # real, the rows of an unaligned region may touch one stick more or less) and flat
    sticks: np.ndarray | None
    mask: np.ndarray | None
    flat: np.ndarray | None
    whole: bool  # a dma.store covering its sticks whole


def _accesses(sticks: _Sticks, core: int, program: list[Instr]) -> list[_Access]:
    from spyrec.target.isa import lx_access

    out = []
    for instr in program:
        reads, writes = lx_access(instr, core)
        r = np.concatenate([_granules(x).reshape(-1) for x in reads]) if reads \
            else np.zeros(0, dtype=np.int64)
        w = _granules(writes[0]) if writes else np.zeros((0, 0), dtype=np.int64)
        kill = _granules(writes[0], inner=True).reshape(-1) if writes \
            else np.zeros(0, dtype=np.int64)
        per_row = mask = flat = None
        whole = False
        if instr.spec.engine is Engine.DMA:
            base, end = _region_bounds(instr)
            if sticks.inside(base, end):
                region = ddr_region(instr)
                assert region is not None
                first = (region.base - sticks.lo + np.arange(region.rows, dtype=np.int64)
                         * region.pitch)
                lo, hi = first // STICK_BYTES, -(-(first + region.row_bytes) // STICK_BYTES)
                per_row = lo[:, None] + np.arange(max(int((hi - lo).max()), 0), dtype=np.int64)
                mask = per_row < hi[:, None]
                flat = per_row[mask]
                whole = instr.op == "dma.store" and region.row_bytes % STICK_BYTES == 0 and \
                    (region.base - sticks.lo) % STICK_BYTES == 0 and \
                    region.pitch % STICK_BYTES == 0
        out.append(_Access(r, w, kill, per_row, mask, flat, whole))
    return out


def _kernel_needs(sticks: _Sticks, expanded: dict[int, Expanded], rendezvous,
                  lower: int, upper: int, lx_bytes: int) -> dict[int, np.ndarray]:
    """The size from which each pc of one kernel's programs must run, then the kernel's
    effect on the pending reads (its whole stores kill, its loads add, row by row).

    The *value need* of an instruction is the least size at which its result can reach a
    real output: the least need of the later reads of the LX bytes it writes (before they
    are overwritten), per row for a dma.load, so a load of a whole K block needs a row of
    K only from where a query row reads it; for a store, that of the LPDDR reads it serves,
    including every load of the same kernel that overlaps it; the members of a ring or sync
    group (which exchange data) the least of the group. Cores exchange needs through the
    groups, so this is a fixpoint. The *run need* is at most the value need, and at most
    the run need of every instruction that depends on it (an instruction never runs
    without its dependences, so the ordering the hazard check proved holds), equal over a
    ring or sync group (its members run together), and equal over an iteration of a loop,
    whose iterations run as a prefix (`_loop_prefixes`). An instruction that runs
    without being needed computes on stale bytes that no needed instruction reads.
    dma.gather and dma.scatter are needed at every size: their indices must be real ones
    (a stale index could fault)."""
    programs = {core: e.instrs for core, e in expanded.items()}
    access = {core: _accesses(sticks, core, p) for core, p in programs.items()}
    group_of = {(c, pc): g for g, members in enumerate(rendezvous.members) for c, pc in members}
    group_need = np.full(len(rendezvous.members), _NEVER, dtype=np.int64)
    lx = np.full(lx_bytes // _G + 1, _NEVER, dtype=np.int64)
    local = np.full(sticks.need.size, _NEVER, dtype=np.int64)
    while True:
        value: dict[int, np.ndarray] = {}
        rows_need: dict[tuple[int, int], np.ndarray] = {}
        for core, program in programs.items():
            lx.fill(_NEVER)
            v = np.full(len(program), _NEVER, dtype=np.int64)
            for pc in range(len(program) - 1, -1, -1):
                instr, acc = program[pc], access[core][pc]
                n = _NEVER
                if instr.op in ("dma.gather", "dma.scatter"):
                    n = lower
                elif instr.op == "dma.store":
                    if acc.sticks is None:
                        n = lower  # a weight or buffer: state that outlives the call
                    else:
                        if acc.flat.size:  # type: ignore[union-attr]
                            n = min(n, int(sticks.need[acc.flat].min()),
                                    int(local[acc.flat].min()))
                g = group_of.get((core, pc))
                if g is not None:
                    n = min(n, int(group_need[g]))
                if acc.writes.size:
                    per_row = lx[acc.writes].min(axis=1)
                    n = min(n, int(per_row.min()))
                    if instr.op == "dma.load":
                        rows_need[(core, pc)] = per_row
                    lx[acc.kills] = _NEVER
                if acc.reads.size:
                    lx[acc.reads] = np.minimum(lx[acc.reads], n)
                v[pc] = n
            value[core] = v
        changed = False
        for g, members in enumerate(rendezvous.members):
            least = min(int(value[c][pc]) for c, pc in members)
            if least < group_need[g]:
                group_need[g] = least
                changed = True
        fresh = np.full(sticks.need.size, _NEVER, dtype=np.int64)
        for (core, pc), per_row in rows_need.items():
            acc = access[core][pc]
            if acc.sticks is None:
                continue
            assert acc.flat is not None  # set with `sticks`
            values = np.broadcast_to(per_row[:, None], acc.sticks.shape)[acc.mask]
            np.minimum.at(fresh, acc.flat, values)
        if not np.array_equal(fresh, local):
            local = fresh
            changed = True
        if not changed:
            break
    for accs in access.values():
        for acc in accs:
            if acc.whole and acc.flat is not None:
                sticks.need[acc.flat] = _NEVER
    np.minimum(sticks.need, local, out=sticks.need)
    run = {core: np.clip(v, lower, upper) for core, v in value.items()}
    edges = {core: _closure_edges(e) for core, e in expanded.items()}
    iterations = {core: _iterations(e) for core, e in expanded.items()}
    while True:
        changed = _settle(edges, rendezvous, run)
        for core, loops in iterations.items():
            changed |= _loop_prefixes(loops, run[core])
        if not changed:
            return run


def _closure_edges(expanded: Expanded) -> list[tuple[int, ...]]:
    """Per flat instruction, the instructions it cannot run without: its dependences,
    except those on an instance of another loop's body (which, with fewer trips, mean the
    latest instance that ran, or none)."""
    loop_of = _loop_of(expanded)
    return [tuple(d for d in instr.deps if loop_of[d] < 0 or loop_of[d] == loop_of[i])
            for i, instr in enumerate(expanded.instrs)]


def _loop_of(expanded: Expanded) -> list[int]:
    """Per flat instruction, the pc of the loop.begin of the body it comes from (-1: none)."""
    from spyrec.target.isa import loop_spans

    spans = loop_spans(expanded.program)
    return [-1 if spans[pc] is None else spans[pc][0]  # type: ignore[index]
            for pc, _ in expanded.origin]


def _iterations(expanded: Expanded) -> list[list[np.ndarray]]:
    """Per loop, per iteration, the flat instructions of that iteration."""
    loops: dict[tuple[int, int], list[int]] = {}
    for i, (loop, (_, iteration)) in enumerate(zip(_loop_of(expanded), expanded.origin,
                                                     strict=True)):
        if loop >= 0:
            loops.setdefault((loop, iteration), []).append(i)
    out: dict[int, list[np.ndarray]] = {}
    for (loop, _), flats in sorted(loops.items()):
        out.setdefault(loop, []).append(np.asarray(flats, dtype=np.int64))
    return list(out.values())


def _loop_prefixes(loops: list[list[np.ndarray]], run: np.ndarray) -> bool:
    """An iteration runs whole, and only after every earlier one (a patched trip count
    runs a prefix): each iteration's need is the least need of it and every later one."""
    changed = False
    for iterations in loops:
        least = _NEVER
        for flats in reversed(iterations):
            least = min(least, int(run[flats].min()))
            if (run[flats] != least).any():
                run[flats] = least
                changed = True
    return changed


def _settle(edges: dict[int, list[tuple[int, ...]]], rendezvous,
            need: dict[int, np.ndarray]) -> bool:
    """Lower each instruction's need to the needs of those that cannot run without it, and
    each ring or sync group's to its least member's; whether anything changed."""
    changed = False
    for core, deps_of in edges.items():
        n_of = need[core]
        for pc in range(len(deps_of) - 1, -1, -1):
            n = n_of[pc]
            for d in deps_of[pc]:
                if n_of[d] > n:
                    n_of[d] = n
                    changed = True
    for members in rendezvous.members:
        least = min(need[c][pc] for c, pc in members)
        for c, pc in members:
            if need[c][pc] != least:
                need[c][pc] = least
                changed = True
    return changed


def guard(expanded: Expanded, run: np.ndarray, lower: int
          ) -> tuple[list[Instr], list[tuple[int, tuple[int, ...]]]]:
    """The program of `expanded` with each run of pcs outside loops of equal need above
    `lower` wrapped in `loop.begin trips=1 ... loop.end`; returns it and the patch table
    entries as (loop.begin pc, thresholds): one per guard, and one per loop whose
    iterations are not all needed at `lower`."""
    from spyrec.target.isa import loop_spans

    program = list(expanded.program)
    spans = loop_spans(program)
    pc_need = np.full(len(program), lower, dtype=np.int64)
    per_loop: dict[int, dict[int, int]] = {}
    for i, (pc, iteration) in enumerate(expanded.origin):
        if spans[pc] is None:
            pc_need[pc] = run[i]
        else:
            begin = spans[pc][0]  # type: ignore[index]
            per_loop.setdefault(begin, {})[iteration] = int(run[i])
    out: list[Instr] = []
    new_pc: list[int] = []
    entries: list[tuple[int, tuple[int, ...]]] = []
    open_need = None
    for pc, instr in enumerate(program):
        inside = spans[pc] is not None or instr.op in LOOP_OPS
        n = int(pc_need[pc]) if not inside else lower
        if open_need is not None and n != open_need:
            out.append(Instr("loop.end", ()))
            open_need = None
        if n > lower and open_need is None:
            entries.append((len(out), (n,)))
            out.append(Instr("loop.begin", (1,)))
            open_need = n
        if instr.op == "loop.begin" and instr.arg("trips") > 0:
            thresholds = tuple(per_loop.get(pc, {}).get(t, lower)
                               for t in range(instr.arg("trips")))
            if thresholds[-1] > lower:
                entries.append((len(out), thresholds))
        new_pc.append(len(out))
        out.append(instr)
    if open_need is not None:
        out.append(Instr("loop.end", ()))
    remapped = []
    for old in out:
        instr = old
        if instr.op == "loop.incr":
            args = list(instr.args)
            field = instr.spec.fields.index("pc")
            args[field] = new_pc[args[field]]
            instr = Instr(instr.op, tuple(args), instr.unit, instr.deps)
        elif instr.op not in LOOP_OPS:
            instr = Instr(instr.op, instr.args, instr.unit, tuple(new_pc[d] for d in instr.deps))
        remapped.append(instr)
    return remapped, entries


def place_guards(program: GuardInput) -> list[tuple[int, int, list[Instr], list[Guard]]]:
    """Guard the work of `program` that only padded positions need: per guarded (kernel,
    core), in that order, its guarded program and its guards (core, pc of the loop.begin,
    symbol, thresholds); nothing for a program without one symbol or too large to analyse."""
    needs = instruction_needs(program)
    if not needs:
        return []
    (symbol, (lower, _)), = program.symbols.items()
    out = []
    for k, kernel in enumerate(program.kernels):
        for core in sorted(kernel):
            expanded, run = needs[(k, core)]
            if (run > lower).any():
                guarded, entries = guard(expanded, run, lower)
                out.append((k, core, guarded, [(core, pc, symbol, t) for pc, t in entries]))
    return out


@dataclass(frozen=True)
class SpyrePlaceGuards(ModulePass):
    """Guard the work only padded rows need in the programs of a one-symbol module."""

    name = "spyre-place-guards"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        signature = symbolic_signature(op)
        if signature is None or len(signature.symbols) != 1:
            return  # static sizes, or several symbols (not guarded, note 49)
        tensors = program_tensors(op)
        if len(set(tensors.programs)) < len(tensors.programs):
            return  # a program launched twice: one record could not hold both launches' guards
        kernels: list[Mapping[int, list[Instr]]] = []
        for prog in tensors.programs:
            codes = {c.id.value.data: c.encoded() for c in prog.cores()}
            if all(code is not None for code in codes.values()):
                kernels.append(EncodedPrograms(codes))  # type: ignore[arg-type]
            else:
                kernels.append({c.id.value.data: c.instrs() for c in prog.cores()})
        state = [(addr_of(p.result), weight_layout(p).nbytes) for p in tensors.params]
        placed = place_guards(GuardInput(tensors.symbols, tensors.outputs,
                                         tensors.inputs + tensors.outputs + tensors.intermediates,
                                         state, kernels))
        guards: dict[int, list[Guard]] = {}
        for k, core, guarded, entries in placed:
            prog = tensors.programs[k]
            old = next(c for c in prog.cores() if c.id.value.data == core)
            new = (CoreOp(core, IRRegion(Block()), encode_program(guarded)) if old.code is not None
                   else CoreOp(core, IRRegion(Block([InstrOp.from_instr(i) for i in guarded]))))
            prog.body.block.insert_op_before(new, old)
            old.detach()
            old.erase()
            guards.setdefault(k, []).extend(entries)
        for k, entries in guards.items():
            record_guards(tensors.programs[k], entries)
