"""Data-race detection for the KTIR interpreter: accesses no inter-tile op orders.

KTIR has no barriers; the only happens-before edges between cores are inter-tile deliveries
(a consumer is ordered after the producers it receives from). Each core carries a vector
clock. A produce publishes the producer's clock with its partial and advances it; a delivery
merges the clocks of the producers it received from. Every byte remembers its last writer
and that writer's clock at the write. A read or write of a byte last written by another core
whose write the accessing core's clock does not cover is a race.

This finds write-write and read-after-write races. A write after another core's unordered
read is not tracked (it would need per-core read clocks per byte).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from spyrec.dialects.ktdp_values import Description, Memory


@dataclass(frozen=True)
class Race:
    """Two accesses to one byte that no inter-tile op orders."""

    kind: str  # "write after write" or "read after write"
    memory: str
    address: int
    first_core: int
    first_op: Description
    second_core: int
    second_op: Description

    def __str__(self) -> str:
        return (
            f"{self.kind} race on byte {self.address} of {self.memory}: core "
            f"{self.first_core} wrote it in {self.first_op}, core {self.second_core} "
            f"{'wrote' if self.kind.startswith('write') else 'read'} it in {self.second_op}, "
            "and no inter-tile op orders the two"
        )


@dataclass
class _Shadow:
    writer: np.ndarray  # core id + 1 of the last writer, 0 for none
    clock: np.ndarray  # the writer's own clock entry at that write
    writer_op: dict[int, Description] = field(default_factory=dict)  # per core: last write


class RaceDetector:
    """Vector clocks per core and a shadow of every byte written."""

    def __init__(self, num_cores: int):
        self.clocks = np.eye(num_cores, dtype=np.int64)
        self._shadows: dict[int, _Shadow] = {}
        self.races: list[Race] = []
        self._reported: set[tuple[str, str, str]] = set()

    def _shadow(self, memory: Memory) -> _Shadow:
        shadow = self._shadows.get(id(memory))
        if shadow is None or shadow.writer.size < memory.size:
            shadow = _Shadow(
                np.zeros(memory.size, dtype=np.int16), np.zeros(memory.size, dtype=np.int64)
            )
            self._shadows[id(memory)] = shadow
        return shadow

    def access(
        self,
        core: int,
        memory: Memory,
        addresses: np.ndarray,
        itemsize: int,
        write: bool,
        op: Description,
    ) -> None:
        """Check, then record, an access of `itemsize` bytes at each of `addresses`."""
        if addresses.size == 0:
            return
        shadow = self._shadow(memory)
        touched = (addresses.reshape(-1, 1) + np.arange(itemsize)).reshape(-1)
        writers = shadow.writer[touched].astype(np.int64) - 1
        foreign = (writers >= 0) & (writers != core)
        if foreign.any():
            seen = self.clocks[core, np.where(foreign, writers, 0)]
            unordered = foreign & (seen < shadow.clock[touched])
            if unordered.any():
                position = int(np.argmax(unordered))
                first = int(writers[position])
                self._report(
                    Race(
                        "write after write" if write else "read after write",
                        memory.name,
                        int(touched[position]),
                        first,
                        shadow.writer_op.get(first, "?"),
                        core,
                        op,
                    )
                )
        if write:
            shadow.writer[touched] = core + 1
            shadow.clock[touched] = self.clocks[core, core]
            shadow.writer_op[core] = op

    def _report(self, race: Race) -> None:
        key = (race.kind, str(race.first_op), str(race.second_op))
        if key not in self._reported:
            self._reported.add(key)
            self.races.append(race)

    def release(self, core: int) -> np.ndarray:
        """A produce: the clock its partial carries; the producer's own entry advances."""
        published = self.clocks[core].copy()
        self.clocks[core, core] += 1
        return published

    def acquire(self, core: int, published: np.ndarray) -> None:
        """A delivery: the consumer is now ordered after what the producer had done."""
        np.maximum(self.clocks[core], published, out=self.clocks[core])
