"""The emulator's clock: a discrete-event schedule of one kernel's instructions.

Each core has one DMA engine and, per corelet, a PT array and an SFU. An instruction starts
when its engine has finished the engine's previous instruction (engines run their instructions
in program order) and all its dependencies have finished. Engines of a core run concurrently.

Instruction costs (engine, busy cycles, LPDDR bytes) come from the target layer,
`spyrec.target.timing.instr_cost`, which the compiler's scheduler uses too; this module
schedules them.

LPDDR is one channel shared by all cores (`lpddr_bytes_per_cycle`), served fairly: the
transfers in flight share it equally (processor sharing), so n concurrent transfers each
progress at bandwidth / n and no time window ever moves more than bandwidth * window bytes.
The channel is implemented with a virtual clock that advances at bandwidth / n: a transfer
joining at virtual time V with B bytes finishes when the virtual clock reaches V + B, so
completions come off a heap in O(log n).

Ring and sync instructions (ring.py) are rendezvous: each waits, holding its engine, until
every member of its group has been issued, then all start together and finish after
`spyrec.target.timing.rendezvous_cycles`. A core has four engines for them besides DMA, PT and SFU:
ring send, ring receive, the reduce ring, and sync. Cores that wait for each other forever (a
ring.recv whose ring.send sits behind it, a barrier one member never reaches) end the
schedule with a DeadlockError naming every blocked core, its pc and what it waits for.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from spyrec.target import SpyreTarget
from spyrec.target.isa import Expanded, Instr, plain
from spyrec.target.rendezvous import Rendezvous, match

# re-exported: the clock's users read them here too
from spyrec.target.timing import PE_BLOCK, Cost, instr_cost, num_tracks, track_kind, track_names  # noqa: F401

_FINISH, _JOIN = 0, 1


class DeadlockError(RuntimeError):
    """Instructions remain whose dependencies can never finish."""


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
    rendezvous: Rendezvous | None = None,
    origins: dict[int, Expanded] | None = None,
) -> Schedule:
    """Run the discrete-event model of one kernel; raises DeadlockError if it cannot finish.

    `rendezvous` groups the ring and sync instructions (`spyrec.target.rendezvous.match`); `origins`
    map unrolled programs back to their pcs and loop iterations for a deadlock report.
    """
    if costs is None:
        costs = {core: [instr_cost(i, target, core) for i in prog]
                 for core, prog in programs.items()}
    if rendezvous is None:
        rendezvous = match(programs)
    tracks = num_tracks(target)
    queues: dict[int, list[list[int]]] = {}
    for core in programs:
        per_track: list[list[int]] = [[] for _ in range(tracks)]
        for pc, cost in enumerate(costs[core]):
            per_track[cost.track].append(pc)
        queues[core] = per_track
    # the tracks each core uses (most use 3-5 of the 9)
    used = {core: [t for t, queue in enumerate(per_track) if queue]
            for core, per_track in queues.items()}
    heads = {core: [0] * tracks for core in programs}
    busy_track = {core: [False] * tracks for core in programs}
    start = {core: [math.nan] * len(p) for core, p in programs.items()}
    end = {core: [math.nan] * len(p) for core, p in programs.items()}
    done = {core: [False] * len(p) for core, p in programs.items()}
    events: list[tuple[float, int, int, int, int]] = []
    channel = _Channel(target.lpddr_bytes_per_cycle)
    posted = [0] * len(rendezvous.members)
    issued: set[tuple[int, int]] = set()  # rendezvous members holding their engine
    seq = 0
    busy = {"dma": 0.0, "pt": 0.0, "sfu": 0.0, "ring": 0.0, "sync": 0.0}
    kinds = [track_kind(t, target) for t in range(tracks)]
    group = rendezvous.group

    def begin(core: int, pc: int, now: float) -> None:
        nonlocal seq
        start[core][pc] = now
        cost = costs[core][pc]
        seq += 1
        kind = _JOIN if cost.track == 0 else _FINISH
        heapq.heappush(events, (now + cost.cycles, seq, kind, core, pc))

    def try_start(core: int, now: float) -> None:
        program = programs[core]
        finished = done[core]
        groups = group.get(core, {})
        for track in used[core]:
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
            gid = groups.get(pc)
            if gid is None:
                begin(core, pc, now)
                continue
            # a rendezvous: hold the engine until the whole group is here, then start it all
            issued.add((core, pc))
            posted[gid] += 1
            if posted[gid] == rendezvous.expected[gid]:
                for member_core, member_pc in rendezvous.members[gid]:
                    begin(member_core, member_pc, now)

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

    _check_complete(programs, done, start, queues, heads, busy_track, rendezvous, issued, name,
                    {core: (origins or {}).get(core) or plain(p) for core, p in programs.items()})
    lpddr = sum(c.lpddr_bytes for per_core in costs.values() for c in per_core)
    end_cycle = max(now, start_cycle)
    return Schedule(start_cycle, end_cycle, start, end, busy, lpddr)


MAX_STUCK_REPORTED = 8


def _full(names: dict[int, Expanded], core: int, pc: int) -> str:
    return f"{names[core].where(pc)} ({names[core].shown(pc).disassemble()})"


def _check_complete(
    programs: dict[int, list[Instr]],
    done: dict[int, list[bool]],
    start: dict[int, list[float]],
    queues: dict[int, list[list[int]]],
    heads: dict[int, list[int]],
    busy_track: dict[int, list[bool]],
    rendezvous: Rendezvous,
    issued: set[tuple[int, int]],
    name: str,
    names: dict[int, Expanded],
) -> None:
    """Raise DeadlockError if instructions remain: first every instruction holding its engine
    for a rendezvous that cannot happen, then every queue head waiting for dependencies."""
    waiting: list[str] = []
    blocked: list[str] = []
    for core, program in sorted(programs.items()):
        if all(done[core]):
            continue
        for track, queue in enumerate(queues[core]):
            head = heads[core][track]
            if busy_track[core][track]:
                pc = queue[head - 1]
                if math.isnan(start[core][pc]):  # issued, its group never completed
                    waiting.append(f"core {core}: {_full(names, core, pc)} waits for "
                                   + _partners(core, pc, rendezvous, programs, issued, names))
                continue
            if head == len(queue):
                continue
            pc = queue[head]
            waits = []
            for d in program[pc].deps:
                if not 0 <= d < len(program):
                    waits.append(f"pc {d}, which does not exist")
                elif not done[core][d]:
                    waits.append(f"{names[core].where(d)} ({program[d].op})")
            blocked.append(f"core {core}: {_full(names, core, pc)} waits for "
                           + ", ".join(waits))
    stuck = waiting + blocked
    if stuck:
        shown = "; ".join(stuck[:MAX_STUCK_REPORTED])
        if len(stuck) > MAX_STUCK_REPORTED:
            shown += f"; and {len(stuck) - MAX_STUCK_REPORTED} more"
        raise DeadlockError(f"deadlock in kernel '{name}': {shown}")


def _partners(
    core: int, pc: int, rendezvous: Rendezvous, programs: dict[int, list[Instr]],
    issued: set[tuple[int, int]], names: dict[int, Expanded],
) -> str:
    """The members of (core, pc)'s group that never arrived, in words."""
    gid = rendezvous.group[core][pc]
    parts = [f"core {other_core} {names[other_core].where(other_pc)} "
             f"({programs[other_core][other_pc].op}), which core {other_core} never reaches"
             for other_core, other_pc in rendezvous.members[gid]
             if (other_core, other_pc) not in issued]
    if len(rendezvous.members[gid]) < rendezvous.expected[gid]:
        parts += rendezvous.missing(gid, programs)
    return ", ".join(parts)
