"""The emulator's clock: instruction costs and a discrete-event schedule of one kernel.

Each core has one DMA engine and, per corelet, a PT array and an SFU. An instruction starts
when its engine has finished the engine's previous instruction (engines run their instructions
in program order) and all its dependencies have finished. Engines of a core run concurrently.

Costs come from the `SpyreTarget` only:
* pt.matmul and pt.matmul_nt: ceil(2 * m' * k' * n' / pt_flops_per_cycle_per_corelet), where
  m', k', n' are m, k, n rounded up to 8 (the 8x8 PE array works on whole 8-row, 8-deep,
  8-wide blocks);
* sfu.*: ceil(rows * row bytes / sfu_bytes_per_cycle_per_corelet), rows padded to whole
  sticks at the widest operand type, times sfu_transcendental_factor for transcendental
  functions. sfu.scalar and sfu.mask are unary passes (src, dst), sfu.colwise a binary pass
  (src0, the per-row src1's type, dst), and sfu.reduce one pass over the source rows alone
  (the one stick it writes per row is not counted);
* dma.*: dma_setup_cycles, then the transfer of rows * row bytes (rounded up to whole sticks)
  over LPDDR.

LPDDR is one channel shared by all cores (`lpddr_bytes_per_cycle`), served fairly: the
transfers in flight share it equally (processor sharing), so n concurrent transfers each
progress at bandwidth / n and no time window ever moves more than bandwidth * window bytes.
The channel is implemented with a virtual clock that advances at bandwidth / n: a transfer
joining at virtual time V with B bytes finishes when the virtual clock reaches V + B, so
completions come off a heap in O(log n).

With the present ISA every dependency points backwards, so a program cannot deadlock; the
check below guards programs built in memory with forward or dangling dependencies.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from spyrec.runtime.isa import TRANSCENDENTAL, DType, Engine, Instr
from spyrec.target import SpyreTarget, round_up

PE_BLOCK = 8  # rows, depth and width of the PT array's work unit

_FINISH, _JOIN = 0, 1


class DeadlockError(RuntimeError):
    """Instructions remain whose dependencies can never finish."""


@dataclass(frozen=True)
class Cost:
    """What one instruction occupies: its engine track, busy cycles and LPDDR bytes."""

    track: int  # 0 = DMA, 1 + unit = PT of corelet `unit`, 1 + corelets + unit = SFU
    cycles: int  # busy cycles on the engine (for a DMA: the setup before the transfer)
    lpddr_bytes: int  # bytes through the shared LPDDR channel (DMA only)


def track_names(target: SpyreTarget) -> list[str]:
    """Display names of a core's engine tracks, indexed like `Cost.track`."""
    units = range(target.corelets_per_core)
    return ["dma"] + [f"pt{u}" for u in units] + [f"sfu{u}" for u in units]


def track_kind(track: int, target: SpyreTarget) -> str:
    if track == 0:
        return "dma"
    return "pt" if track <= target.corelets_per_core else "sfu"


def _sfu_row_bytes(cols: int, dtypes: tuple[int, ...], target: SpyreTarget) -> int:
    widest = max(DType(d).itemsize for d in dtypes)
    return round_up(cols * widest, target.stick_bytes)


def instr_cost(instr: Instr, target: SpyreTarget) -> Cost:
    """The cost of one (validated) instruction on `target`."""
    a = instr.named_args()
    engine = instr.spec.engine
    if engine is Engine.DMA:
        moved = a["rows"] * round_up(a["row_bytes"], target.stick_bytes)
        return Cost(0, target.dma_setup_cycles, moved)
    if engine is Engine.PT:
        m, k, n = (round_up(a[x], PE_BLOCK) for x in ("m", "k", "n"))
        cycles = math.ceil(2 * m * k * n / target.pt_flops_per_cycle_per_corelet)
        return Cost(1 + instr.unit, cycles, 0)
    factor = 1
    if instr.op == "sfu.unary":
        row = _sfu_row_bytes(a["cols"], (a["src_dtype"], a["dst_dtype"]), target)
        if a["fn"] in TRANSCENDENTAL:
            factor = target.sfu_transcendental_factor
    elif instr.op in ("sfu.scalar", "sfu.mask"):
        row = _sfu_row_bytes(a["cols"], (a["src_dtype"], a["dst_dtype"]), target)
    elif instr.op == "sfu.reduce":
        row = _sfu_row_bytes(a["cols"], (a["src_dtype"],), target)
    else:  # sfu.binary, sfu.colwise
        row = _sfu_row_bytes(a["cols"], (a["src0_dtype"], a["src1_dtype"], a["dst_dtype"]), target)
    cycles = math.ceil(a["rows"] * row / target.sfu_bytes_per_cycle_per_corelet) * factor
    return Cost(1 + target.corelets_per_core + instr.unit, max(cycles, 1), 0)


class _Channel:
    """The shared LPDDR channel under processor sharing, driven by a virtual clock."""

    def __init__(self, bytes_per_cycle: float) -> None:
        self.rate = bytes_per_cycle
        self.virtual = 0.0
        self.updated = 0.0
        self.flows: list[tuple[float, int, int, int]] = []  # (virtual finish, seq, core, pc)
        self.seq = 0

    def _advance(self, now: float) -> None:
        if self.flows:
            self.virtual += (now - self.updated) * self.rate / len(self.flows)
        self.updated = now

    def join(self, now: float, nbytes: int, core: int, pc: int) -> None:
        self._advance(now)
        self.seq += 1
        heapq.heappush(self.flows, (self.virtual + nbytes, self.seq, core, pc))

    def next_finish(self) -> float:
        if not self.flows:
            return math.inf
        return self.updated + (self.flows[0][0] - self.virtual) * len(self.flows) / self.rate

    def finish(self, now: float) -> list[tuple[int, int]]:
        """Remove and return the transfers complete at `now` (the time `next_finish` gave)."""
        self._advance(now)
        # The head is due by construction (whatever the rounding); others finishing within
        # rounding error of it finish now too.
        tag, _, core, pc = heapq.heappop(self.flows)
        self.virtual = max(self.virtual, tag)
        done = [(core, pc)]
        while self.flows and self.flows[0][0] <= self.virtual + 1e-9 * max(1.0, self.virtual):
            _, _, core, pc = heapq.heappop(self.flows)
            done.append((core, pc))
        return done


@dataclass
class Schedule:
    """When every instruction of a kernel ran, in cycles from the start of the run."""

    start_cycle: float
    end_cycle: float
    start: dict[int, list[float]]  # core -> per pc
    end: dict[int, list[float]]
    busy: dict[str, float] = field(default_factory=dict)  # engine kind -> summed busy cycles
    lpddr_bytes: int = 0


def schedule(
    programs: dict[int, list[Instr]],
    target: SpyreTarget,
    start_cycle: float = 0.0,
    costs: dict[int, list[Cost]] | None = None,
    name: str = "kernel",
) -> Schedule:
    """Run the discrete-event model of one kernel; raises DeadlockError if it cannot finish."""
    if costs is None:
        costs = {core: [instr_cost(i, target) for i in prog] for core, prog in programs.items()}
    num_tracks = 1 + 2 * target.corelets_per_core
    queues: dict[int, list[list[int]]] = {}
    for core, program in programs.items():
        per_track: list[list[int]] = [[] for _ in range(num_tracks)]
        for pc, cost in enumerate(costs[core]):
            per_track[cost.track].append(pc)
        queues[core] = per_track
    heads = {core: [0] * num_tracks for core in programs}
    busy_track = {core: [False] * num_tracks for core in programs}
    start = {core: [math.nan] * len(p) for core, p in programs.items()}
    end = {core: [math.nan] * len(p) for core, p in programs.items()}
    done = {core: [False] * len(p) for core, p in programs.items()}
    events: list[tuple[float, int, int, int, int]] = []
    channel = _Channel(target.lpddr_bytes_per_cycle)
    seq = 0
    busy = {"dma": 0.0, "pt": 0.0, "sfu": 0.0}
    kinds = [track_kind(t, target) for t in range(num_tracks)]

    def try_start(core: int, now: float) -> None:
        nonlocal seq
        program = programs[core]
        finished = done[core]
        for track in range(num_tracks):
            if busy_track[core][track]:
                continue
            queue = queues[core][track]
            head = heads[core][track]
            if head == len(queue):
                continue
            pc = queue[head]
            deps = program[pc].deps
            if deps and not all(0 <= d < len(finished) and finished[d] for d in deps):
                continue
            heads[core][track] = head + 1
            busy_track[core][track] = True
            start[core][pc] = now
            cost = costs[core][pc]
            seq += 1
            kind = _JOIN if track == 0 else _FINISH
            heapq.heappush(events, (now + cost.cycles, seq, kind, core, pc))

    def finish(core: int, pc: int, now: float) -> None:
        end[core][pc] = now
        done[core][pc] = True
        track = costs[core][pc].track
        busy_track[core][track] = False
        busy[kinds[track]] += now - start[core][pc]

    for core in programs:
        try_start(core, start_cycle)
    now = start_cycle
    while True:
        next_event = events[0][0] if events else math.inf
        next_transfer = channel.next_finish()
        if next_event == math.inf and next_transfer == math.inf:
            break
        touched: set[int] = set()
        if next_transfer <= next_event:
            now = next_transfer
            for core, pc in channel.finish(now):
                finish(core, pc, now)
                touched.add(core)
        else:
            now, _, kind, core, pc = heapq.heappop(events)
            if kind == _JOIN:
                channel.join(now, costs[core][pc].lpddr_bytes, core, pc)
                continue
            finish(core, pc, now)
            touched.add(core)
        for core in touched:
            try_start(core, now)

    _check_complete(programs, done, queues, heads, name)
    lpddr = sum(c.lpddr_bytes for per_core in costs.values() for c in per_core)
    end_cycle = max(now, start_cycle)
    return Schedule(start_cycle, end_cycle, start, end, busy, lpddr)


def _check_complete(
    programs: dict[int, list[Instr]],
    done: dict[int, list[bool]],
    queues: dict[int, list[list[int]]],
    heads: dict[int, list[int]],
    name: str,
) -> None:
    stuck: list[str] = []
    for core, program in sorted(programs.items()):
        if all(done[core]):
            continue
        for track, queue in enumerate(queues[core]):
            head = heads[core][track]
            if head == len(queue):
                continue
            pc = queue[head]
            waits = []
            for d in program[pc].deps:
                if not 0 <= d < len(program):
                    waits.append(f"pc {d}, which does not exist")
                elif not done[core][d]:
                    waits.append(f"pc {d} ({program[d].op})")
            stuck.append(f"core {core}: pc {pc} ({program[pc].disassemble()}) waits for "
                         + ", ".join(waits))
    if stuck:
        shown = "; ".join(stuck[:4]) + (f"; and {len(stuck) - 4} more" if len(stuck) > 4 else "")
        raise DeadlockError(f"deadlock in kernel '{name}': {shown}")
