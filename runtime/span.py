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

from spyrec.runtime.isa import Region
from spyrec.runtime.memory import DeviceFault, DeviceMemory
from spyrec.target import MIB


class SpanChecker:
    """Checks the per-core span of one kernel's DMAs, tensor by tensor."""

    def __init__(self, tensors: list[tuple[str, int, int]], memory: DeviceMemory,
                 limit: int) -> None:
        """`tensors`: (name, base, end) of every tensor binding."""
        self._tensors = sorted(tensors, key=lambda t: (t[1], t[2]))
        self._bases = [base for _, base, _ in self._tensors]
        self._memory = memory
        self._limit = limit
        self._spans: dict[tuple[int, str], tuple[int, int]] = {}

    def _tensor_of(self, start: int, end: int) -> str:
        for index in range(bisect.bisect_right(self._bases, start) - 1, -1, -1):
            name, _, tensor_end = self._tensors[index]
            if end <= tensor_end:
                return name
        return self._memory.locate(start, end).name

    def check(self, core: int, region: Region) -> None:
        """Record a (validated) DMA's LPDDR region for `core`; DeviceFault if the span of
        its tensor on that core grows beyond the limit."""
        start, end = region.base, region.end
        tensor = self._tensor_of(start, end)
        low, high = self._spans.get((core, tensor), (start, end))
        low, high = min(low, start), max(high, end)
        if high - low > self._limit:
            raise DeviceFault(
                f"LPDDR range [{start:#x}, {end:#x}) of tensor '{tensor}' widens this core's "
                f"span of it to [{low:#x}, {high:#x}), {(high - low) / MIB:.1f} MiB, beyond "
                f"the {self._limit // MIB} MiB a core may span in one tensor", start)
        self._spans[(core, tensor)] = (low, high)
