"""The per-core span rule: a core's off-chip accesses to one tensor lie within 256 MB.

Spyre addresses a tensor from a core through a window of `per_core_span_bytes`, so within
a kernel the LPDDR bytes one core's DMAs touch in one tensor, from the lowest to the
highest, may span at most that much (the work division rule "<= 256 MB DDR span per tensor
per core"). `SpanChecker` follows each (core, tensor) span over a kernel's instructions and
raises a DeviceFault at the first DMA that widens one beyond the limit.

The tensor of an access is the binding whose bytes hold the whole access; where activations
share bytes (placed by liveness), the one starting last. An access that no single binding
holds (it spans two tensors of an arena) counts against its allocation.
"""

from __future__ import annotations

import bisect

import numpy as np

from spyrec.runtime.isa import Region
from spyrec.runtime.memory import DeviceFault, DeviceMemory
from spyrec.target import MIB


class TensorTable:
    """The tensor bindings by address, to find the tensor of an LPDDR access."""

    def __init__(self, tensors: list[tuple[str, int, int]], memory: DeviceMemory) -> None:
        """`tensors`: (name, base, end) of every tensor binding."""
        self._tensors = sorted(tensors, key=lambda t: (t[1], t[2]))
        self._bases = [base for _, base, _ in self._tensors]
        self._base_array = np.asarray(self._bases, dtype=np.int64)
        self._end_array = np.asarray([end for _, _, end in self._tensors], dtype=np.int64)
        self._memory = memory

    def tensor_of(self, start: int, end: int) -> str:
        """The name of the tensor [start, end) belongs to (see the module docstring)."""
        for index in range(bisect.bisect_right(self._bases, start) - 1, -1, -1):
            name, _, tensor_end = self._tensors[index]
            if end <= tensor_end:
                return name
        return self._memory.locate(start, end).name

    def tensors_of(self, starts: np.ndarray, ends: np.ndarray) -> list[str]:
        """`tensor_of` for many accesses: NumPy for those inside the binding starting last
        at or before them (almost all), `tensor_of` for the rest."""
        if not self._tensors:
            return [self.tensor_of(s, e) for s, e in zip(starts.tolist(), ends.tolist())]
        index = np.searchsorted(self._base_array, starts, side="right") - 1
        direct = (index >= 0) & (ends <= self._end_array[np.maximum(index, 0)])
        names = [self._tensors[i][0] for i in np.maximum(index, 0).tolist()]
        for i in np.flatnonzero(~direct).tolist():
            names[i] = self.tensor_of(int(starts[i]), int(ends[i]))
        return names


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
        names = self._table.tensors_of(starts, ends)
        ids: dict[str, int] = {}
        tensor = np.asarray([ids.setdefault(n, len(ids)) for n in names], dtype=np.int64)
        _, group = np.unique(cores * len(ids) + tensor, return_inverse=True)
        low = np.full(group.max() + 1, np.iinfo(np.int64).max)
        high = np.full(group.max() + 1, np.iinfo(np.int64).min)
        np.minimum.at(low, group, starts)
        np.maximum.at(high, group, ends)
        return bool((high - low <= self._limit).all())
