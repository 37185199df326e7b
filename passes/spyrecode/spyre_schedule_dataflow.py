"""spyre-schedule-dataflow: per-core SpyreCode streams from placed KTIR kernels.

Expects: KTIR kernels with `lx_slots` on their tile ops and a graph whose launches and
tensors carry `spyre.addr` (after spyre-place-memory). Guarantees: one
`spyrecode.program @kN` per launch, holding a `spyrecode.core` per core of the grid with the
kernel's loops unrolled for that core: `ktdp.load`/`ktdp.store` become DMA instructions at
the tile's byte address, the matmul generics PT instructions (`matmul`: pt.matmul,
`matmul_nt`: pt.matmul_nt with B as stored), each epilogue generic an SFU instruction
(`causal_mask`: sfu.mask whose diagonal is the tile's first query row, an index operand of
the generic; `index_mask`: its condition evaluated for the core's rows, one sfu.mask per
run of rows whose limits step by one, note 109). A tile whose leading dims do not merge
into evenly spaced rows moves in one DMA per index of the outer dims; a fill is written
(keep 0, add the value) before a read other than a matmul's or `acc + x`'s first
accumulation or a reduction into it. Dependences are derived from the LX slots each
instruction reads and writes (read-after-write, write-after-read, write-after-write),
nothing else, so the DMA of the next tile overlaps the compute of the current one wherever
the ping-pong slots allow it.
Tile ops of 16 or more rows are split by rows over the two corelets, which share the
core's LX. A kernel whose `spyre.tiling` ledger says `share = "ring"` has the tiles
several of its cores load read from LPDDR once and forwarded over the ring
(`ring_sharing.share_loads`, note 38); `spyre.ring` on its program says what was shared.
A resident block loaded in pieces (`spyre.load_pieces`, column slices, or row slices with
`spyre.load_pieces_dim = 0`) is a DMA per piece, and a `tensor.extract_slice` within one
piece is a view that depends on that piece's DMA; a store split in row pieces
(`spyre.store_pieces`) is a DMA per piece, spread over the matmuls that follow it (notes
54, 57). A `ktdp.inter_tile_produce` / `ktdp.inter_tile_reduce` pair summing a partial over
a group of cores is one `ring.reduce` on each of them, in place in the partial's slot (an
all-reduce when the consumers are the producers, else to the one consumer), and an `scf.if`
on the core's coordinates runs the branch that core takes (note 59). An attention kernel's
program is ordered by earliest start rather than as unrolled, so the next query tile's
Q K^T runs on the PT while this tile's softmax runs on the SFU (note 60). A tensor kept in
LX between kernels (a distributed view of `ct_local` parts, note 61) is read and written in
the core's own part: a load from it is no instruction (the SFU reads the tile where it is,
at the part's row pitch), and the generic whose one use stores to it writes its result
there, so the store is none either (else an SFU copy); a tile outside the core's own part
is refused.

The walk of a kernel's ops for one core is `core_walk.py` (`CoreWalk`), which reads views,
grid coordinates and inter-tile groups by KTIR's rules (`dialects/ktdp_values.py`); this
module orders each core's program (`prefetch_order`) and builds the programs of a module.

    ktdp.load %t {lx_slots = array<i64: 0, 32768>}          // before (KTIR)
    spyrecode.dma_load {ddr = ..., lx = 0, rows = 64, ...}   // after, one per iteration
"""

from __future__ import annotations

import functools
import heapq
import math
from collections import deque
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from spyrec.diagnostics import CompileError
from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.ktdp_values import core_coords
from spyrec.dialects.spyre import LaunchOp
from spyrec.dialects.spyrecode import program_from_encoded, program_from_instrs
from spyrec.passes.spyrecode.core_walk import CoreWalk
from spyrec.passes.spyrecode.ring_sharing import share_loads
from spyrec.passes.spyrecode.schedule_templates import TemplateCache, default_jobs, prebuild
from spyrec.progress import report as report_progress
from spyrec.target import SpyreTarget
from spyrec.target.isa import Instr, encode_program
from spyrec.target.timing import instr_cost


def kernel_grid(fn: func.FuncOp) -> tuple[int, int]:
    """The kernel's `[gm, gn]` (`spyre_plan.grid`); a CompileError for a func without one."""
    grid = plan.grid(fn)
    if grid is None:
        raise CompileError(f"@{fn.sym_name.data} has no grid: it is not a kernel")
    return grid


def interpret_core(fn: func.FuncOp, core: tuple[object, object], args: list[object],
                   target: SpyreTarget) -> list[Instr]:
    """One core's program in issue order; core and arguments may be ints or `Affine`."""
    interpreter = CoreWalk(fn, core, args, kernel_grid(fn))
    program = interpreter.run()
    return prefetch_order(program, target, interpreter.paced, interpreter.paced_loads,
                          "spyre.pt_lookahead" in fn.attributes)


def schedule_kernel(fn: func.FuncOp, args: list[int],
                    target: SpyreTarget) -> dict[int, list[Instr]]:
    """Per-core instruction lists of kernel `fn` launched on tensors at byte addresses `args`,
    by the plain interpreter: once per core, no templates."""
    grid = kernel_grid(fn)
    return {core: interpret_core(fn, core_coords(core, grid), list(args), target)  # type: ignore[arg-type]
            for core in range(math.prod(grid))}


def prefetch_order(program: list[Instr], target: SpyreTarget,
                   paced: frozenset[int] | set[int] = frozenset(),
                   paced_loads: frozenset[int] | set[int] = frozenset(),
                   lookahead: bool = False) -> list[Instr]:
    """Reorder a core's program so each load is issued as soon as its dependences allow.

    Engines execute their instructions in program order, so in the order the kernel was
    unrolled the next tile's loads sat behind this tile's store on the DMA engine, which
    waits for this tile's epilogue: no overlap. A topological order that always prefers a
    ready load (then the original order) issues loads ahead; the ping-pong slots bound how
    far ahead, through the write-after-read dependences already recorded. Every dependence
    is kept, so the meaning of the program is unchanged.

    The `paced` instructions (the row pieces of a split store, note 54) are held once ready
    and released one per `_store_strides` PT instructions of corelet 0 placed after them,
    each with a dependence on that instruction: a tile's store then spreads over the next
    tile's K steps (or a tail's row pieces, note 57), in time as well as in order (a core
    whose loads became ring receives has nothing else on its DMA engine, and would send all
    pieces at once). A released piece goes behind the loads released with it: on the
    in-order DMA engine a load queued behind a piece would wait for the piece's matmul.
    When nothing else is ready (the last tile), the held pieces go. The `paced_loads` (the
    K slices of a resident block) are held likewise and released one per other load
    placed: each slice goes next to the streamed tile its K step multiplies it with,
    instead of the whole block ahead of the first streamed tile. Where no other load
    streams (a tail's B block), two slices go per K step, and two when nothing else is
    ready, so the next slice is always on its way.

    With `lookahead` (an attention kernel, `spyre.pt_lookahead`, note 60) a ready store
    goes first (it frees the slot the next tile's epilogue writes) and every other
    instruction, loads included, by its earliest start along its dependences
    (`_earliest_starts`), then program order: the next query tile's Q K^T, which needs only
    its Q tile, goes ahead of this tile's P V, which waits for the softmax, so the PT works
    while the SFU does.
    """
    users: list[list[int]] = [[] for _ in program]
    waiting = [len(instr.deps) for instr in program]
    for index, instr in enumerate(program):
        for dep in instr.deps:
            users[dep].append(index)
    rank = _earliest_starts(program, target) if lookahead else list(range(len(program)))

    def key(index: int) -> tuple[int, float, int]:
        if lookahead:  # a store as soon as it is ready (it frees a slot), then every
            # instruction by its earliest start, loads included
            return (0 if program[index].op == "dma.store" else 1, rank[index], index)
        return (0 if program[index].op == "dma.load" else 1, rank[index], index)

    def released(priority: int, index: int) -> tuple[int, float, int]:
        """A held piece or slice, ranked among the ready instructions by program order."""
        return (priority, rank[index], index)

    ready = [key(index) for index, instr in enumerate(program)
             if not instr.deps and index not in paced_loads]
    heapq.heapify(ready)
    position: dict[int, int] = {}
    order: list[Instr] = []
    held: deque[int] = deque()
    held_loads = deque(i for i, instr in enumerate(program)
                       if not instr.deps and i in paced_loads)
    paced_by: dict[int, int] = {}  # a released piece -> the PT instruction it waits for
    stride = _store_strides(program, paced)
    credit = 0  # matmuls placed since the last store piece was released
    streamed = False  # a load that is not a held slice was placed since the last matmul
    while ready or held or held_loads:
        if not ready:  # nothing else can go: two held slices (one to compute on, one
            if held_loads:  # coming), else a store piece
                for _ in range(min(2, len(held_loads))):
                    heapq.heappush(ready, released(0, held_loads.popleft()))
            else:
                heapq.heappush(ready, released(0, held.popleft()))
        *_, index = heapq.heappop(ready)
        instr = program[index]
        position[index] = len(order)
        deps = {position[d] for d in instr.deps}
        if index in paced_by:
            deps.add(position[paced_by[index]])
        order.append(Instr(instr.op, instr.args, instr.unit, tuple(sorted(deps))))
        if instr.op.startswith("pt.") and instr.unit == 0:
            if not streamed:  # a tail's B block: two slices per K step, so they run ahead
                for _ in range(min(2, len(held_loads))):
                    heapq.heappush(ready, released(0, held_loads.popleft()))
            streamed = False
            credit += 1
            if held and credit >= stride[held[0]]:
                credit = 0
                paced_by[held[0]] = index
                heapq.heappush(ready, released(1, held.popleft()))  # behind the loads it releases
        if instr.op == "dma.load" and index not in paced_loads:
            streamed = True
            if held_loads:
                heapq.heappush(ready, released(0, held_loads.popleft()))
        for user in users[index]:
            waiting[user] -= 1
            if waiting[user] == 0:
                if user in paced:
                    held.append(user)
                elif user in paced_loads:
                    held_loads.append(user)
                else:
                    heapq.heappush(ready, key(user))
    assert len(order) == len(program), "dependences of a core's program form a cycle"
    return order


def _earliest_starts(program: list[Instr], target: SpyreTarget) -> list[float]:
    """Each instruction's earliest start along its dependences, every instruction taking
    its engine's cycles (a DMA its setup and its bytes over the whole channel; a ring
    instruction none: its time depends on the other cores)."""
    start: list[float] = []
    end: list[float] = []
    loads_free = 0.0  # the one DMA engine takes the loads in program order (ahead of the
    # stores, as this ordering places them)
    for instr in program:
        begin = max((end[d] for d in instr.deps), default=0.0)
        cycles = 0.0
        if not instr.op.startswith(("ring.", "sync.")):
            cost = instr_cost(instr, target)
            cycles = cost.cycles + cost.lpddr_bytes / target.lpddr_bytes_per_cycle
        if instr.op in ("dma.load", "dma.gather"):
            begin = max(begin, loads_free)
            loads_free = begin + cycles
        start.append(begin)
        end.append(begin + cycles)
    return start


def _store_strides(program: list[Instr], paced: frozenset[int] | set[int]) -> dict[int, int]:
    """Matmuls (of corelet 0) per released piece of each split store: its pieces (emitted
    one after another) spread evenly over the matmuls between it and the next split store
    in program order, i.e. the next tile's K loop, or all of a tail's row pieces (note
    57)."""
    groups: list[list[int]] = []
    for index in sorted(paced):
        if groups and groups[-1][-1] == index - 1:
            groups[-1].append(index)
        else:
            groups.append([index])
    stride: dict[int, int] = {}
    for g, group in enumerate(groups):
        end = groups[g + 1][0] if g + 1 < len(groups) else len(program)
        matmuls = sum(1 for instr in program[group[-1]:end]
                      if instr.op.startswith("pt.") and instr.unit == 0)
        for index in group:
            stride[index] = max(1, matmuls // len(group))
    return stride


@dataclass(frozen=True)
class SpyreScheduleDataflow(ModulePass):
    """Unroll each launched KTIR kernel per core into SpyreCode instruction streams.

    With `templates` (the default) each structurally distinct kernel is interpreted once
    with its address arguments and core coordinates as symbols and every launch and core
    instantiates that template (`passes/spyrecode/schedule_templates.py`); each program records how
    it was made in `spyre.schedule` (`symbolic`, `per-core` or `plain`) and the first
    kernel of its structure in `spyre.template`. `templates=false` interprets every core
    of every launch, the reference the templates are tested against. With `packed` each
    core holds its instructions encoded (`spyrecode.core` with `code`), which is how the
    compile driver runs it: building an op per instruction costs more than the schedule.
    """

    name = "spyre-schedule-dataflow"

    templates: bool = True
    packed: bool = False
    jobs: int = 0
    """Processes that build the distinct kernels' templates (0: `$SPYREC_JOBS`, else one
    per CPU, for modules of at least PREBUILD_MIN_STRUCTURES distinct kernels; 1: none
    forked)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernels = {f.sym_name.data: f for f in op.body.block.ops
                   if isinstance(f, func.FuncOp) and plan.is_kernel(f)}
        target = plan.target_of(op)
        cache = TemplateCache(functools.partial(interpret_core, target=target))
        first_of: dict[object, str] = {}
        launches = []
        for launch in [o for o in op.walk() if isinstance(o, LaunchOp)]:
            name = launch.callee.string_value()
            fn = kernels[name]
            args = [addr_of(v) for v in launch.operands] + [
                a.value.data for a in launch.attributes["spyre.addr"].data]  # type: ignore[attr-defined]
            order = launch.attributes.get("spyre.kernel_args")
            if isinstance(order, DenseArrayBase):  # hand-written KTIR: its own argument order
                args = [args[i] for i in order.get_values()]
            launches.append((name, fn, args, plan.ring_shared(fn),
                             cache.structure(fn) if self.templates else None))
        if self.templates:
            firsts: dict[object, tuple] = {}
            for _, fn, args, share, key in launches:
                firsts.setdefault(key, (fn, kernel_grid(fn), args, key, share))
            # forking pays for itself from a few hundred milliseconds of template building;
            # with `jobs` unset, only modules of many distinct kernels are worth it
            if self.jobs or len(firsts) >= PREBUILD_MIN_STRUCTURES:
                prebuild(cache, list(firsts.values()), self.packed,
                         self.jobs or default_jobs())
        for done, (name, fn, args, share, key) in enumerate(launches):
            report_progress("kernels scheduled", done, len(launches))
            report = None
            if self.templates:
                if share:
                    programs, how, report = cache.shared_programs(fn, kernel_grid(fn), args,
                                                                  key, self.packed)
                else:
                    programs, how = cache.programs(fn, kernel_grid(fn), args, key, self.packed)
                template = first_of.setdefault(key, name)
            else:
                programs, how, template = schedule_kernel(fn, args, target), "plain", name
                if share:
                    programs, report = share_loads(programs)
                if self.packed:
                    programs = {c: encode_program(p) for c, p in programs.items()}
            if self.packed:
                program = program_from_encoded(name, programs, len(programs))  # type: ignore[arg-type]
            else:
                program = program_from_instrs(name, programs, len(programs))  # type: ignore[arg-type]
            program.attributes["spyre.schedule"] = StringAttr(how)
            program.attributes["spyre.template"] = StringAttr(template)
            if report is not None:
                program.attributes["spyre.ring"] = StringAttr(
                    f"{report.groups} tiles shared over the ring in {report.transfers} "
                    f"transfers, {report.saved_bytes} B of LPDDR reads saved" if report.groups
                    else f"not shared: {report.reason}")
            for attr in ("spyre.cost", "spyre.decisions"):
                if attr in fn.attributes:
                    program.attributes[attr] = fn.attributes[attr]
            op.body.block.add_op(program)


PREBUILD_MIN_STRUCTURES = 12


def addr_of(value: SSAValue) -> int:
    owner = value.owner
    if isinstance(owner, Operation):
        attr = owner.attributes.get("spyre.addr")
        if isinstance(attr, ArrayAttr):
            attr = attr.data[value.index]  # type: ignore[attr-defined]
    else:
        fn = owner.parent_op()
        assert isinstance(fn, func.FuncOp) and fn.arg_attrs is not None
        attr = fn.arg_attrs.data[value.index].data.get("spyre.addr")  # type: ignore[attr-defined]
    if not isinstance(attr, IntegerAttr):
        raise CompileError(f"%{value.name_hint} has no spyre.addr; run spyre-place-memory first")
    return attr.value.data

