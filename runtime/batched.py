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

from collections.abc import Callable

import numpy as np

from spyrec.runtime import ops
from spyrec.runtime.dl16 import HalfCodec
from spyrec.runtime.isa import INDIRECT_DMA_OPS, Engine, Instr, ddr_region, lx_access
from spyrec.runtime.memory import CoreStack, DeviceFault, DeviceMemory, LocalMemory

Action = Callable[[], None]

# LX bytes of the largest tile times the cores of one batched call, at most (see _group_size)
BATCH_BYTES = 64 * 1024


def _stack_of(cores: list[int]) -> tuple[int, int] | None:
    """(first, step) when the cores step evenly (a single core has step 1)."""
    step = cores[1] - cores[0] if len(cores) > 1 else 1
    if step <= 0 or any(b - a != step for a, b in zip(cores, cores[1:], strict=False)):
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
    lx_all: np.ndarray, codec: HalfCodec,
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
            actions += [ops.bind(i, memory, lx[c], codec)
                        for c, i in zip(cores, instrs, strict=True)]
            continue
        group = _group_size(instrs[0])
        for start in range(0, len(cores), group):
            part = instrs[start:start + group]
            stacked = CoreStack(lx_all, first + start * step, step, len(part))
            if part[0].spec.engine is not Engine.DMA:
                actions.append(ops.bind(part[0], memory, stacked, codec))
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
