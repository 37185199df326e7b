"""The per-core span rule: a core's off-chip accesses to one tensor lie within 256 MB.

Spyre addresses a tensor from a core through a window of `per_core_span_bytes`, so within
a kernel the LPDDR bytes one core's DMAs touch in one tensor, from the lowest to the
highest, may span at most that much (the work division rule "<= 256 MB DDR span per tensor
per core"). `SpanChecker` follows each (core, tensor) span over a kernel's instructions and
raises a DeviceFault at the first DMA that widens one beyond the limit.

The tensor of an access is the binding whose bytes hold the whole access; where activations
share bytes (placed by liveness), the one starting last. An access that no single binding
holds is a DeviceFault: it would run from one tensor into the next one of its arena (the
activations placed back to back) and read or write that tensor's bytes, so a kernel whose
tile reaches past its tensor fails on the device instead of computing on its neighbour.
"""

from __future__ import annotations

import bisect

import numpy as np

from spyrec.runtime.memory import DeviceFault, DeviceMemory
from spyrec.target import MIB
from spyrec.target.isa import Region


class TensorTable:
    """The tensor bindings by address, to find the tensor of an LPDDR access."""

    def __init__(self, tensors: list[tuple[str, int, int]], memory: DeviceMemory) -> None:
        """`tensors`: (name, base, end) of every tensor binding."""
        self._tensors = sorted(tensors, key=lambda t: (t[1], t[2]))
        self._bases = [base for _, base, _ in self._tensors]
        self._base_array = np.asarray(self._bases, dtype=np.int64)
        self._end_array = np.asarray([end for _, _, end in self._tensors], dtype=np.int64)
        self._memory = memory
        self._names = [name for name, _, _ in self._tensors]  # binding i has id i
        self._ids = {name: i for i, name in enumerate(self._names)}

    def tensor_of(self, start: int, end: int) -> str:
        """The name of the tensor [start, end) belongs to (see the module docstring); a
        DeviceFault naming the tensors involved if no tensor holds all of it."""
        name = self._holder(start, end)
        if name is not None:
            return name
        self._memory.locate(start, end)  # outside every allocation: that fault first
        raise DeviceFault(self._straddle(start, end), start)

    def _holder(self, start: int, end: int) -> str | None:
        """The binding holding [start, end) that starts last, if any."""
        for index in range(bisect.bisect_right(self._bases, start) - 1, -1, -1):
            name, _, tensor_end = self._tensors[index]
            if end <= tensor_end:
                return name
        return None

    def _straddle(self, start: int, end: int) -> str:
        """Why no tensor holds [start, end): which tensor it starts in and runs out of, and
        the one it runs into."""
        span = f"LPDDR range [{start:#x}, {end:#x})"
        last = bisect.bisect_right(self._bases, start)
        holders = [t for t in self._tensors[:last] if t[2] > start]
        if not holders:
            return f"{span} starts in no tensor (in padding of its allocation)"
        name, base, tensor_end = max(holders, key=lambda t: t[2])
        into = [n for n, b, e in self._tensors if b < end and e > tensor_end and b >= tensor_end]
        beyond = f" into tensor '{into[0]}'" if into else ""
        return (f"{span} runs past the end of tensor '{name}' [{base:#x}, {tensor_end:#x})"
                f"{beyond}; a DMA may only touch the tensor it addresses")

    def name(self, tensor_id: int) -> str:
        """The tensor name of an id `tensor_ids` gave."""
        return self._names[tensor_id]

    def tensor_ids(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """An id per access of the name `tensor_of` gives it (equal names, equal ids): the
        bindings are probed backwards from the last one starting at or before each access,
        in NumPy for all accesses a few steps at a time (what is left after that is looked
        up one by one); -1 for an access no binding holds (`tensor_of` faults on it)."""
        ids = np.full(starts.size, -1, dtype=np.int64)
        index = np.searchsorted(self._base_array, starts, side="right") - 1
        open_ = np.arange(starts.size)
        for _ in range(_PROBES):
            if open_.size == 0:
                break
            at = index[open_]
            valid = at >= 0
            found = valid & (ends[open_] <= self._end_array[np.maximum(at, 0)])
            ids[open_[found]] = at[found]
            open_ = open_[valid & ~found]
            index[open_] -= 1
        for i in open_[index[open_] >= 0].tolist():  # a holder further back, or none
            holder = self._holder(int(starts[i]), int(ends[i]))
            ids[i] = -1 if holder is None else self._ids[holder]
        return ids


_PROBES = 16  # backward steps taken in NumPy before the one-by-one lookup


class SpanChecker:
    """Checks the per-core span of one kernel's DMAs, tensor by tensor."""

    def __init__(self, tensors: TensorTable, limit: int) -> None:
        self._table = tensors
        self._limit = limit
        self._spans: dict[tuple[int, str], tuple[int, int]] = {}

    def check(self, core: int, region: Region) -> None:
        """Record a (validated) DMA's LPDDR region for `core`; DeviceFault if the span of
        its tensor on that core grows beyond the limit."""
        start, end = region.base, region.end
        tensor = self._table.tensor_of(start, end)
        low, high = self._spans.get((core, tensor), (start, end))
        low, high = min(low, start), max(high, end)
        if high - low > self._limit:
            raise DeviceFault(
                f"LPDDR range [{start:#x}, {end:#x}) of tensor '{tensor}' widens this core's "
                f"span of it to [{low:#x}, {high:#x}), {(high - low) / MIB:.1f} MiB, beyond "
                f"the {self._limit // MIB} MiB a core may span in one tensor", start)
        self._spans[(core, tensor)] = (low, high)

    def fits(self, cores: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bool:
        """Whether `check` would accept all these accesses (on a checker that has seen
        nothing else): spans only grow, so it is each (core, tensor)'s final span that
        counts. One NumPy pass; a False is followed by `check` for the fault."""
        if cores.size == 0:
            return True
        ids = self._table.tensor_ids(starts, ends)
        if (ids < 0).any():
            return False  # an access no tensor holds: `check` names the fault
        _, group = np.unique(cores * (ids.max() + 1) + ids, return_inverse=True)
        low = np.full(group.max() + 1, np.iinfo(np.int64).max)
        high = np.full(group.max() + 1, np.iinfo(np.int64).min)
        np.minimum.at(low, group, starts)
        np.maximum.at(high, group, ends)
        return bool((high - low <= self._limit).all())
