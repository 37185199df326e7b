"""LX occupancy over time: the bytes of a core's LX that hold a value someone still reads.

An approximation at stick (128-byte) granularity, from the program and its schedule alone:
a stick becomes live when an instruction that writes it (a DMA load, a ring receive, a
compute) finishes, and stays live until the last instruction that reads that value (before
the next write of the stick, in program order) finishes. A value never read counts as dead
at once, so a core's occupancy is what its buffers must hold, not what its addresses span.
Program order stands in for data order, which the hazard checker guarantees for programs
without hazards.
"""

from __future__ import annotations

import numpy as np

from spyrec.runtime.hazards import _sticks
from spyrec.target.isa import Instr, lx_access


def lx_live_bytes(
    program: list[Instr], core: int, start: list[float], end: list[float], lx_bytes: int,
    stick: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(times, live bytes from each time on) for one core, times ascending and distinct."""
    sticks = -(-lx_bytes // stick)
    born = np.full(sticks, np.nan)  # when the stick's current value was written
    last = np.full(sticks, np.nan)  # when its last reader so far finished
    times: list[np.ndarray] = []
    signs: list[np.ndarray] = []

    def close(index: slice | np.ndarray) -> None:
        b, r = born[index], last[index]
        live = r > b  # NaN compares false: never written or never read
        if live.any():
            times.extend((b[live], r[live]))
            count = int(live.sum())
            signs.extend((np.ones(count), -np.ones(count)))

    for pc, instr in enumerate(program):
        reads, writes = lx_access(instr, core)
        for region in reads:
            index = _sticks(region, stick)
            last[index] = np.fmax(last[index], end[pc])
        for region in writes:
            index = _sticks(region, stick)
            close(index)
            born[index] = end[pc]
            last[index] = np.nan
    close(slice(None))
    if not times:
        return np.zeros(0), np.zeros(0)
    all_times = np.concatenate(times)
    unique, inverse = np.unique(all_times, return_inverse=True)
    change = np.bincount(inverse, weights=np.concatenate(signs)) * stick
    return unique, np.cumsum(change)
