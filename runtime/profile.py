"""What an emulator run measured: times, work, traffic, utilisation, warnings and a timeline.

Times are emulated device cycles converted at the target clock; host transfers (the plans'
DataTransfer steps) are not timed. Two rooflines, labelled apart (design note 70):

- the program's, the headline (`roofline_us`, `roofline_ratio`, `bytes_ratio`): the larger of
  the source program's flops at the card's peak and its least off-chip bytes (every input,
  weight and output moved once, unpadded) at the LPDDR bandwidth, as the frontend computed
  them from the program as written (`ProgramCost` in the `.spyre`, at the run's symbolic
  sizes). A compiler that moves a weight twice, or runs a depthwise convolution as a dense
  one, shows here as a lower ratio. A binary without a program cost (a KTIR input program,
  or a file written before the field existed) falls back to the kernels' figures, and
  `roofline_source` says which was used;
- the compiled kernels' own (`kernel_roofline_us`, `flops`, `min_offchip_bytes`, and each
  kernel's entry): the sum over kernels of each kernel's roofline from the compiler's figures
  in the KernelImage (its own operands read once). A kernel's ratio is at most 1 unless those
  figures overstate what the kernel does (the profile then carries a warning).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spyrec.runtime.occupancy import lx_live_bytes
from spyrec.runtime.timing import Schedule, track_names
from spyrec.target import SpyreTarget
from spyrec.target.container import ProgramCost
from spyrec.target.isa import Instr
from spyrec.target.rendezvous import RENDEZVOUS_OPS
from spyrec.target.timing import ring_hops

ENGINE_KINDS = ("dma", "pt", "sfu", "ring")


@dataclass(frozen=True)
class TraceEvent:
    """One instruction's run: which kernel, core, engine track, from when to when (cycles).

    `pc` is the instruction's index in the core's program as encoded; an instruction of a
    loop body runs once per iteration (`iteration`, -1 outside loops).
    """

    kernel: int
    core: int
    engine: str  # "dma", "pt", "sfu", "ring" or "sync"
    unit: int
    pc: int
    op: str
    start: float
    end: float
    track: str  # the engine track: dma, pt0, sfu1, ring_tx, ring_rx, ring_reduce, sync
    iteration: int = -1
    args: dict[str, int] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Timeline:
    """A kernel's programs (loops unrolled) with their schedule, from which trace events are
    made on demand (keeping one object per instruction alive would dominate memory on large
    models). `origins[core][i]` is the (pc, iteration) instruction i comes from, `tracks`
    the engine track of each instruction; times are `schedule`'s plus `offset`."""

    programs: dict[int, list[Instr]]
    schedule: Schedule  # cycles from the kernel's start
    offset: float  # the kernel's start cycle in the run
    origins: dict[int, list[tuple[int, int]]]
    tracks: dict[int, list[int]]


def _ring_args(instr: Instr, core: int, target: SpyreTarget) -> dict[str, int]:
    a = instr.named_args()
    if instr.op == "ring.send":
        return {"to": a["dst_core"], "bytes": a["rows"] * a["row_bytes"], "tag": a["tag"],
                "hops": ring_hops(core, a["dst_core"], target.num_cores)}
    if instr.op == "ring.recv":
        return {"from": a["src_core"], "bytes": a["rows"] * a["row_bytes"], "tag": a["tag"],
                "hops": ring_hops(core, a["src_core"], target.num_cores)}
    if instr.op == "ring.reduce":
        return {"first": a["first"], "count": a["count"], "stride": a["stride"],
                "root": a["root"], "tag": a["tag"]}
    return {}


@dataclass
class KernelProfile:
    """The measurements of one ComputeOnDevice."""

    name: str
    cores: int
    start_cycle: float
    end_cycle: float
    flops: int  # declared by the compiler for the kernel as compiled
    pt_flops: int  # executed by pt.matmul instructions (2*m*k*n each)
    offchip_bytes: int  # moved by DMA between LPDDR and LX
    min_offchip_bytes: int  # declared by the compiler: the compiled kernel's operands once
    lx_peak_bytes: int  # highest LX byte touched on any core, plus one
    instructions: int  # instructions run (a loop body counts once per iteration)
    busy_cycles: dict[str, float] = field(default_factory=dict)  # engine kind -> summed busy cycles
    timeline: Timeline | None = field(default=None, repr=False, compare=False)

    def events(self, index: int, target: SpyreTarget) -> list[TraceEvent]:
        """This kernel's per-instruction events (`index` is its position in the run)."""
        if self.timeline is None:
            return []
        timeline = self.timeline
        offset = timeline.offset
        names = track_names(target)
        events = []
        for core, program in sorted(timeline.programs.items()):
            starts, ends = timeline.schedule.start[core], timeline.schedule.end[core]
            origins, tracks = timeline.origins[core], timeline.tracks[core]
            for flat, instr in enumerate(program):
                pc, iteration = origins[flat]
                args = _ring_args(instr, core, target) if instr.op in RENDEZVOUS_OPS else {}
                events.append(TraceEvent(index, core, instr.spec.engine.value, instr.unit, pc,
                                         instr.op, offset + starts[flat], offset + ends[flat],
                                         names[tracks[flat]], iteration, args))
        return events

    def lx_occupancy(self, target: SpyreTarget) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Per core, (cycles, live LX bytes from then on); see `occupancy.lx_live_bytes`."""
        if self.timeline is None:
            return {}
        schedule, offset = self.timeline.schedule, self.timeline.offset
        result = {}
        for core, program in sorted(self.timeline.programs.items()):
            times, live = lx_live_bytes(program, core, schedule.start[core], schedule.end[core],
                                        target.lx_bytes, target.stick_bytes)
            result[core] = (times + offset, live)
        return result

    @property
    def cycles(self) -> float:
        return self.end_cycle - self.start_cycle

    def emulated_us(self, target: SpyreTarget) -> float:
        return target.cycles_to_us(self.cycles)

    def roofline_us(self, target: SpyreTarget) -> float:
        return _roofline_us(self.flops, self.min_offchip_bytes, target)

    def utilisation(self, target: SpyreTarget) -> dict[str, float]:
        """Busy fraction of each engine kind over the kernel's cores, and of the LPDDR channel."""
        return _utilisation(self.busy_cycles, self.offchip_bytes, self.cycles, self.cores, target)

    def to_dict(self, target: SpyreTarget) -> dict[str, Any]:
        emulated = self.emulated_us(target)
        roofline = self.roofline_us(target)
        return {
            "name": self.name, "cores": self.cores, "instructions": self.instructions,
            "emulated_us": emulated, "roofline_us": roofline,
            "roofline_ratio": roofline / emulated if emulated else 1.0,
            "flops": self.flops, "pt_flops": self.pt_flops,
            "offchip_bytes": self.offchip_bytes, "min_offchip_bytes": self.min_offchip_bytes,
            "lx_peak_bytes": self.lx_peak_bytes,
            "utilisation": self.utilisation(target),
        }


def _roofline_us(flops: int, offchip_bytes: int, target: SpyreTarget) -> float:
    """The larger of `flops` at the card's peak and `offchip_bytes` at the LPDDR bandwidth."""
    return max(flops / target.peak_flops, offchip_bytes / target.lpddr_bytes_per_s) * 1e6


def _utilisation(
    busy: dict[str, float], lpddr_bytes: int, cycles: float, cores: int, target: SpyreTarget
) -> dict[str, float]:
    if cycles <= 0:
        return dict.fromkeys((*ENGINE_KINDS, "lpddr"), 0.0)
    instances = {"dma": cores, "pt": cores * target.corelets_per_core,
                 "sfu": cores * target.corelets_per_core, "ring": 3 * cores}
    result = {kind: busy.get(kind, 0.0) / (instances[kind] * cycles) for kind in ENGINE_KINDS}
    result["lpddr"] = lpddr_bytes / (target.lpddr_bytes_per_cycle * cycles)
    return result


@dataclass
class Profile:
    """The profile of one `Emulator.run`: its kernels, and the source program's cost at the
    run's symbolic sizes (`sizes`, every symbol) when the binary records one."""

    target: SpyreTarget
    kernels: list[KernelProfile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    program: ProgramCost | None = None
    sizes: dict[str, int] = field(default_factory=dict)

    def events(self) -> list[TraceEvent]:
        """Every instruction's run, kernel by kernel, core by core, in program order."""
        return [e for index, k in enumerate(self.kernels) for e in k.events(index, self.target)]

    @property
    def emulated_cycles(self) -> float:
        return sum(k.cycles for k in self.kernels)

    @property
    def emulated_us(self) -> float:
        return self.target.cycles_to_us(self.emulated_cycles)

    @property
    def kernel_roofline_us(self) -> float:
        """The sum of the kernels' own rooflines (the compiler's per-kernel figures)."""
        return sum(k.roofline_us(self.target) for k in self.kernels)

    @property
    def roofline_us(self) -> float:
        """The program's roofline (its source figures); the kernels' without them."""
        if self.program is None:
            return self.kernel_roofline_us
        return _roofline_us(self.program_flops, self.program_min_offchip_bytes, self.target)

    @property
    def roofline_ratio(self) -> float:
        return self.roofline_us / self.emulated_us if self.emulated_us else 1.0

    @property
    def program_flops(self) -> int:
        """The source program's flops as written (the kernels' sum without a program cost)."""
        return self.flops if self.program is None else self.program.flops(self.sizes)

    @property
    def program_min_offchip_bytes(self) -> int:
        """Every input, weight and output of the source program moved once, unpadded (the
        kernels' sum without a program cost)."""
        if self.program is None:
            return self.min_offchip_bytes
        return self.program.min_offchip_bytes(self.sizes)

    @property
    def bytes_ratio(self) -> float:
        """The off-chip bytes moved over the program's least (1.0: each moved once)."""
        least = self.program_min_offchip_bytes
        return self.offchip_bytes / least if least else 0.0

    @property
    def flops(self) -> int:
        """The compiled kernels' flops (the compiler's per-kernel figures, summed)."""
        return sum(k.flops for k in self.kernels)

    @property
    def offchip_bytes(self) -> int:
        return sum(k.offchip_bytes for k in self.kernels)

    @property
    def min_offchip_bytes(self) -> int:
        """The compiled kernels' least traffic (each kernel's operands once, summed)."""
        return sum(k.min_offchip_bytes for k in self.kernels)

    @property
    def lx_peak_bytes(self) -> int:
        return max((k.lx_peak_bytes for k in self.kernels), default=0)

    def utilisation(self) -> dict[str, float]:
        """Busy fraction of each engine kind over all cores of the card for the whole run."""
        busy = {kind: sum(k.busy_cycles.get(kind, 0.0) for k in self.kernels)
                for kind in ENGINE_KINDS}
        return _utilisation(busy, self.offchip_bytes, self.emulated_cycles,
                            self.target.num_cores, self.target)

    def to_dict(self) -> dict[str, Any]:
        """The summary as plain data (JSON-ready); the event list is left to `trace_events`."""
        program = self.program
        kernel_roofline = self.kernel_roofline_us
        return {
            "target": self.target.name,
            "emulated_cycles": self.emulated_cycles,
            "emulated_us": self.emulated_us,
            # the headline: the source program's figures (design note 70)
            "roofline_source": "kernels" if program is None else "program",
            "roofline_us": self.roofline_us,
            "roofline_ratio": self.roofline_ratio,
            "program_flops": self.program_flops,
            "program_min_offchip_bytes": self.program_min_offchip_bytes,
            "program_padded_offchip_bytes": (None if program is None
                                             else program.padded_offchip_bytes(self.sizes)),
            "program_uncounted_ops": {} if program is None else dict(program.uncounted),
            "bytes_ratio": self.bytes_ratio,
            "offchip_bytes": self.offchip_bytes,
            # the compiled kernels' own figures, summed
            "kernel_roofline_us": kernel_roofline,
            "kernel_roofline_ratio": (kernel_roofline / self.emulated_us
                                      if self.emulated_us else 1.0),
            "flops": self.flops,
            "min_offchip_bytes": self.min_offchip_bytes,
            "lx_peak_bytes": self.lx_peak_bytes,
            "utilisation": self.utilisation(),
            "kernels": [k.to_dict(self.target) for k in self.kernels],
            "warnings": list(self.warnings),
        }

    def trace_events(self) -> list[dict[str, Any]]:
        """Chrome trace-event dicts (Perfetto / chrome://tracing).

        A "kernels" process with one slice per kernel and an "LX bytes" counter of each
        kernel's LX footprint while it runs; a process per core with a thread per engine track
        (dma, pt0, pt1, sfu0, sfu1, and ring_tx, ring_rx, ring_reduce, sync when used) holding
        a slice per instruction run (ring slices carry the peer core, bytes and hops), and an
        "LX live bytes" counter of the core's LX occupancy (`occupancy.lx_live_bytes`).
        """
        us = self.target.cycles_to_us
        out: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "kernels"}},
        ]
        named: set[tuple[int, int]] = set()
        for kernel in self.kernels:
            out.append({"ph": "X", "name": kernel.name, "pid": 0, "tid": 0,
                        "ts": us(kernel.start_cycle), "dur": us(kernel.cycles)})
            # LX occupancy counter: the kernel's footprint (highest LX byte any core touches)
            # while it runs, zero between kernels
            out.append({"ph": "C", "name": "LX bytes", "pid": 0, "ts": us(kernel.start_cycle),
                        "args": {"footprint": kernel.lx_peak_bytes}})
            out.append({"ph": "C", "name": "LX bytes", "pid": 0,
                        "ts": us(kernel.start_cycle + kernel.cycles), "args": {"footprint": 0}})
        tids = {name: tid for tid, name in enumerate(track_names(self.target))}
        for event in self.events():
            pid = event.core + 1
            tid = tids[event.track]
            if (pid, -1) not in named:
                named.add((pid, -1))
                out.append({"ph": "M", "name": "process_name", "pid": pid,
                            "args": {"name": f"core {event.core}"}})
            if (pid, tid) not in named:
                named.add((pid, tid))
                out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                            "args": {"name": event.track}})
            args: dict[str, Any] = {"kernel": self.kernels[event.kernel].name, "pc": event.pc}
            if event.iteration >= 0:
                args["iteration"] = event.iteration
            out.append({
                "ph": "X", "name": event.op, "pid": pid, "tid": tid,
                "ts": us(event.start), "dur": us(event.end - event.start),
                "args": {**args, **event.args},
            })
        out += self._occupancy_counters()
        return out

    def _occupancy_counters(self) -> list[dict[str, Any]]:
        us = self.target.cycles_to_us
        out: list[dict[str, Any]] = []
        for kernel in self.kernels:
            for core, (times, live) in kernel.lx_occupancy(self.target).items():
                pid = core + 1
                points = [(kernel.start_cycle, 0.0), *zip(times.tolist(), live.tolist()),
                          (kernel.end_cycle, 0.0)]
                out += [{"ph": "C", "name": "LX live bytes", "pid": pid, "ts": us(t),
                         "args": {"bytes": int(v)}} for t, v in points]
        return out
