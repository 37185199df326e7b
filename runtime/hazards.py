"""The LX hazard checker: finds unordered accesses to the same LX bytes within a core.

An instruction j is ordered after an instruction i when i happens-before j: j depends on i,
directly or through a chain of dependencies and engine order (an engine runs its instructions
one after another, so an instruction follows everything earlier on its own engine). The checker
reports, in program order:
* a read of bytes whose last writer does not happen-before the reader (read after write:
  the read may see the bytes before the write);
* a write of bytes whose last writer, or any reader since that write, does not happen-before
  the writer (write after write / write after read: the write may clobber bytes still needed).

Ring receives and reductions write LX like DMA loads do, and sends read it like stores; a
program with loops is checked unrolled, and messages name the pc and loop iteration.

The check is static, so it holds for every timing, and it works at stick (128-byte)
granularity because LX traffic moves whole sticks: two buffers sharing a stick conflict.

Happens-before is tracked with vector clocks, one component per engine of the core: clock[j][e]
is the position on engine e of the last engine-e instruction that happens-before j. Because an
engine's instructions are totally ordered, "readers since the last write" reduces to the
latest reader per engine, so the shadow state is a few integer arrays per stick.
"""

from __future__ import annotations

import numpy as np

from spyrec.runtime.timing import Cost, num_tracks
from spyrec.target import SpyreTarget
from spyrec.target.isa import Expanded, Instr, Region, plain

MAX_REPORTED = 20  # per kernel; the rest are counted


def _sticks(region: Region, stick: int) -> slice | np.ndarray:
    if region.distinct_rows == 1 or region.pitch <= region.row_bytes:
        return slice(region.base // stick, (region.end - 1) // stick + 1)
    starts = region.base + np.arange(region.rows, dtype=np.int64) * region.pitch
    first = starts // stick
    last = (starts + region.row_bytes - 1) // stick
    span = int((last - first).max()) + 1
    return np.minimum(first[:, None] + np.arange(span), last[:, None]).reshape(-1)


def _describe(region: Region) -> str:
    if region.distinct_rows == 1 or region.pitch == region.row_bytes:
        return f"LX [{region.base:#x}, {region.end:#x})"
    return (f"LX [{region.base:#x}, {region.end:#x}) ({region.rows} rows of "
            f"{region.row_bytes} bytes, pitch {region.pitch})")


def _clocks(
    program: list[Instr], costs: list[Cost], num_tracks: int
) -> tuple[np.ndarray, list[int], list[list[int]]]:
    """Vector clocks, each instruction's position on its engine, and the engines' pc lists."""
    clocks = np.full((len(program), num_tracks), -1, dtype=np.int64)
    positions = [0] * len(program)
    by_track: list[list[int]] = [[] for _ in range(num_tracks)]
    for pc, (instr, cost) in enumerate(zip(program, costs, strict=True)):
        track_list = by_track[cost.track]
        preds = [d for d in instr.deps if 0 <= d < pc]
        if track_list:
            preds.append(track_list[-1])
        if preds:
            clocks[pc] = clocks[preds].max(axis=0)
        positions[pc] = len(track_list)
        clocks[pc, cost.track] = len(track_list)
        track_list.append(pc)
    return clocks, positions, by_track


Access = tuple[tuple[Region, ...], tuple[Region, ...]]  # LX regions read, written


def check_core(
    core: int, program: list[Instr], costs: list[Cost], accesses: list[Access],
    target: SpyreTarget, origin: Expanded | None = None,
) -> list[str]:
    """Hazard messages for one core's (validated) program, in program order; `origin` maps
    an unrolled program back to its pcs and loop iterations for the messages."""
    names = origin or plain(program)
    tracks = num_tracks(target)
    stick = target.stick_bytes
    sticks = -(-target.lx_bytes // stick)
    clocks, positions, by_track = _clocks(program, costs, tracks)
    writer_pc = np.full(sticks, -1, dtype=np.int64)
    writer_track = np.zeros(sticks, dtype=np.int64)
    writer_pos = np.full(sticks, -1, dtype=np.int64)
    reader_pos = np.full((tracks, sticks), -1, dtype=np.int64)
    found: list[str] = []

    def report(pc: int, what: str, region: Region, other: int, why: str) -> None:
        found.append(
            f"core {core}, {names.where(pc)} ({names.shown(pc).disassemble()}): {what} "
            f"{_describe(region)} {why} {names.where(other)} "
            f"({names.shown(other).disassemble()}), which it does not depend on")

    def unordered_writer(index: slice | np.ndarray, clock: np.ndarray) -> int | None:
        positions_here = writer_pos[index]
        bad = (positions_here >= 0) & (positions_here > clock[writer_track[index]])
        return int(writer_pc[index][bad][0]) if bad.any() else None

    for pc, (read_regions, write_regions) in enumerate(accesses):
        clock = clocks[pc]
        reads = [(r, _sticks(r, stick)) for r in read_regions]
        writes = [(w, _sticks(w, stick)) for w in write_regions]
        for region, index in reads:
            other = unordered_writer(index, clock)
            if other is not None:
                report(pc, "reads", region, other, "last written by")
        for region, index in writes:
            other = unordered_writer(index, clock)
            if other is not None:
                report(pc, "overwrites", region, other, "last written by")
            late = reader_pos[:, index] > clock[:, None]
            if late.any():
                track, column = np.argwhere(late)[0]
                reader = by_track[track][int(reader_pos[track, index][column])]
                report(pc, "overwrites", region, reader, "still read by")
        track = costs[pc].track
        for _, index in writes:
            writer_pc[index] = pc
            writer_track[index] = track
            writer_pos[index] = positions[pc]
            reader_pos[:, index] = -1
        for _, index in reads:
            reader_pos[track, index] = positions[pc]
    return found


def check_kernel(
    programs: dict[int, list[Instr]], costs: dict[int, list[Cost]],
    accesses: dict[int, list[Access]], target: SpyreTarget, name: str,
    origins: dict[int, Expanded] | None = None,
) -> list[str]:
    """Hazard messages of a kernel, at most MAX_REPORTED plus a count of the rest."""
    found: list[str] = []
    for core in sorted(programs):
        found += check_core(core, programs[core], costs[core], accesses[core], target,
                            (origins or {}).get(core))
    return reported(found, name)


def reported(found: list[str], name: str) -> list[str]:
    """`check_core` messages of kernel `name`, at most MAX_REPORTED plus a count of the
    rest."""
    shown = [f"kernel '{name}': {message}" for message in found[:MAX_REPORTED]]
    if len(found) > MAX_REPORTED:
        shown.append(f"kernel '{name}': and {len(found) - MAX_REPORTED} more hazards")
    return shown
