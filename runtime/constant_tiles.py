"""Operand tiles that hold the same bytes on every call: decoded once, kept across calls.

Most of what a kernel's compute instructions read is weights: a `dma.load` brings a weight
tile from LPDDR into LX, ring transfers pass it on to other cores, and a matmul or an SFU
op reads it and converts it to float32 (for DL16, a table gather per element). The weights
do not change between calls, and neither does the order in which a kernel's instructions
run, so such an operand decodes to the same array on every call. The emulator decodes it
on the first call and keeps the array (`Memo`); later calls skip the decode. On the demo
models this is 84-88 % of all decoded elements.

Which operands qualify is decided once per kernel, when its actions are bound, by walking
the kernel's instructions in the order the emulator runs them (`ConstantWalk`) and
following, per core and per 128-byte stick of LX, where the stick's bytes came from: the
weight a `dma.load` read them from, carried along by ring transfers, and anything else
(another DMA, a compute result, a reduction) marking them as varying. An operand whose
every stick came from weights is constant. A weight that some kernel writes (a buffer
updated in place, such as a KV cache) is not constant: `ConstantTiles.finalize` learns
those from the loaded programs before anything runs and disables the memos that depend on
them. The arrays kept are capped at `budget` bytes; past it operands decode every call.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

from spyrec.target.isa import STICK_BYTES, Instr, Region, ddr_region, lx_access

# the float32 arrays kept for constant operands, at most (past it they decode every call)
DEFAULT_BUDGET_BYTES = 512 * 1024 * 1024

# instructions whose read operands an action converts to float32 (the ones worth keeping)
DECODING_OPS = frozenset({"pt.matmul", "pt.matmul_nt", "sfu.unary", "sfu.binary",
                          "sfu.scalar", "sfu.colwise", "sfu.mask", "sfu.reduce"})

Site = tuple[int, int]  # (core, pc)


class Memo:
    """One action's operand that is the same on every call: its float32 value once known."""

    __slots__ = ("deps", "enabled", "table", "value")

    def __init__(self, table: ConstantTiles, deps: frozenset[int]) -> None:
        self.table = table
        self.deps = deps  # the weights (indices) its bytes come from
        self.enabled = table.allows(deps)
        self.value: np.ndarray | None = None

    def keep(self, value: np.ndarray) -> None:
        if self.enabled and self.table.charge(value.nbytes):
            self.value = value


class ConstantTiles:
    """The weights' LPDDR ranges, which of them programs write, and the memos' budget."""

    def __init__(self, weights: Sequence[tuple[int, int]], lx_bytes: int,
                 budget: int = DEFAULT_BUDGET_BYTES) -> None:
        self.weights = sorted((base, end, i) for i, (base, end) in enumerate(weights))
        self._bases = [base for base, _, _ in self.weights]
        self.lx_sticks = -(-lx_bytes // STICK_BYTES)
        self.budget = budget
        self.mutated: frozenset[int] | None = None  # None until finalize
        self._memos: list[Memo] = []

    def weight_of(self, region: Region) -> int | None:
        """The weight whose range holds all of an LPDDR region, if one does (weights do not
        overlap: the one that starts last at or before the region is the only candidate)."""
        at = bisect.bisect_right(self._bases, region.base) - 1
        if at < 0:
            return None
        _, end, index = self.weights[at]
        return index if region.end <= end else None

    def allows(self, deps: frozenset[int]) -> bool:
        return self.mutated is not None and not deps & self.mutated

    def charge(self, nbytes: int) -> bool:
        if nbytes > self.budget:
            return False
        self.budget -= nbytes
        return True

    def memo(self, deps: frozenset[int]) -> Memo:
        memo = Memo(self, deps)
        if self.mutated is None:
            self._memos.append(memo)
        return memo

    def finalize(self, programs: Sequence[Sequence[Instr]]) -> None:
        """Learn which weights the loaded `programs` write (those are not constant) and
        enable the memos made so far that depend on none of them."""
        written = set()
        for program in programs:
            for instr in program:
                if instr.op in ("dma.store", "dma.scatter"):
                    region = ddr_region(instr)
                    assert region is not None
                    written.update(i for base, end, i in self.weights
                                   if base < region.end and region.base < end)
        self.mutated = frozenset(written)
        for memo in self._memos:
            memo.enabled = self.allows(memo.deps)
        self._memos.clear()


class ConstantWalk:
    """Per core and LX stick, the weight its bytes came from (index + 1; 0: varying), followed
    through a kernel's instructions in execution order. `step` returns, for an instruction
    that decodes operands, which of its reads are constant (their weights) or None."""

    def __init__(self, table: ConstantTiles) -> None:
        self.table = table
        self._sticks: dict[int, np.ndarray] = {}
        self.constant: dict[Site, tuple[frozenset[int] | None, ...]] = {}

    def _of(self, core: int) -> np.ndarray:
        sticks = self._sticks.get(core)
        if sticks is None:
            sticks = self._sticks[core] = np.zeros(self.table.lx_sticks, dtype=np.int32)
        return sticks

    def memos(self, sites: Sequence[Site]) -> tuple[Memo | None, ...] | None:
        """Memos for the read operands of one action that runs the instruction at `sites`
        (one per core it serves): an operand is kept if it is constant at every site."""
        found = [self.constant.get(site) for site in sites]
        if any(f is None for f in found):
            return None
        out: list[Memo | None] = []
        for operand in zip(*found, strict=True):
            if any(deps is None for deps in operand):
                out.append(None)
            else:
                out.append(self.table.memo(frozenset().union(*operand)))
        return tuple(out) if any(m is not None for m in out) else None

    def step(self, core: int, pc: int, instr: Instr,
             sender: tuple[int, Instr] | None = None) -> None:
        """Account for one instruction (a ring.recv with its `sender`'s core and ring.send)."""
        if instr.op in _NO_LX_WRITES:
            return
        sticks = self._of(core)
        reads, writes = lx_access(instr, core)
        if instr.op in DECODING_OPS:
            found = [_weights(sticks[_sticks(region)]) for region in reads]
            if any(f is not None for f in found):
                self.constant[(core, pc)] = tuple(found)
        if instr.op == "dma.load":
            (region,) = writes
            ddr = ddr_region(instr)
            assert ddr is not None
            weight = self.table.weight_of(ddr)
            touched = _sticks(region)
            if weight is None:
                sticks[touched] = 0
                return
            # a stick the load covers only in part keeps its other bytes: it is still this
            # weight's only if it was before
            mark = weight + 1
            sticks[touched] = np.where(sticks[touched] == mark, mark, 0)
            sticks[_sticks(region, whole=True)] = mark
            return
        if instr.op == "ring.recv" and sender is not None:
            (dst,) = writes
            (src,), _ = lx_access(sender[1], sender[0])
            if _aligned(src) and _aligned(dst) and (src.distinct_rows, src.row_bytes) == (
                    dst.distinct_rows, dst.row_bytes):
                sticks[_sticks(dst)] = self._of(sender[0])[_sticks(src)]
                return
        for region in writes:
            sticks[_sticks(region)] = 0


# what neither writes LX nor converts operands: nothing to follow
_NO_LX_WRITES = frozenset({"dma.store", "dma.scatter", "ring.send", "sync.barrier",
                           "loop.begin", "loop.incr", "loop.end"})


def _weights(ids: np.ndarray) -> frozenset[int] | None:
    """The weights sticks with these marks came from, None if any stick varies."""
    if not ids.size:
        return None
    low, high = int(ids.min()), int(ids.max())
    if low <= 0:
        return None
    return frozenset({low - 1}) if low == high else frozenset((np.unique(ids) - 1).tolist())


def _aligned(region: Region) -> bool:
    return all(v % STICK_BYTES == 0 for v in (region.base, region.row_bytes, region.pitch))


def _sticks(region: Region, whole: bool = False) -> slice | np.ndarray:
    """An index of the LX sticks any byte of `region` lies in (with `whole`: the sticks one
    of its rows, or its one run of bytes, covers entirely; never a stick it leaves partly
    uncovered), in row order: a slice when the region is one run of bytes."""
    if region.rows <= 0 or region.row_bytes <= 0:
        return slice(0, 0)
    if region.distinct_rows == 1 or region.pitch == region.row_bytes:
        start, end = region.base, region.end if region.pitch else region.base + region.row_bytes
        first = -(-start // STICK_BYTES) if whole else start // STICK_BYTES
        stop = end // STICK_BYTES if whole else -(-end // STICK_BYTES)
        return slice(first, max(first, stop))
    starts = region.base + np.arange(region.rows, dtype=np.int64) * region.pitch
    if whole:
        first, stop = -(-starts // STICK_BYTES), (starts + region.row_bytes) // STICK_BYTES
    else:
        first = starts // STICK_BYTES
        stop = (starts + region.row_bytes - 1) // STICK_BYTES + 1
    width = int((stop - first).max())
    if width <= 0:
        return slice(0, 0)
    index = first[:, None] + np.arange(width, dtype=np.int64)[None, :]
    return index[index < stop[:, None]]
