"""The emulated device memory: LPDDR behind 8 virtual segments, and one LX scratchpad per core.

The job's virtual address space is `num_segments` segments of `segment_bytes` (8 x 16 GiB);
segment `program_segment` (7) holds SpyreCode only. Memory is sparse: only ranges that the
preparation plan allocates get backing, one NumPy byte buffer per allocation, kept sorted by
base address so a lookup is a bisection. Every allocation and every DMA address is 128-byte
aligned; the DMA row pitch must keep each row aligned too.

In timing-only emulation the allocations are tracked (so addresses are still checked) but carry
no buffer.

A bad access raises `DeviceFault`; the emulator adds the core, program counter and instruction.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from spyrec.target import SpyreTarget
from spyrec.target.isa import Instr, Region
from spyrec.target.memory import ALIGNMENT, allocation_fault
from spyrec.target.memory import address_range as _range


class DeviceFault(RuntimeError):
    """An access the device would refuse: unallocated, out of range, misaligned, LX overflow.

    `core`, `pc` and `instr` are filled in by the emulator, which knows who made the access.
    """

    def __init__(
        self,
        reason: str,
        address: int | None = None,
        core: int | None = None,
        pc: int | None = None,
        instr: Instr | None = None,
    ) -> None:
        self.reason = reason
        self.address = address
        self.core = core
        self.pc = pc
        self.instr = instr
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.core is None:
            return self.reason
        where = f"core {self.core}, pc {self.pc}"
        if self.instr is not None:
            where += f" ({self.instr.disassemble()})"
        return f"{where}: {self.reason}"

    def at(self, core: int, pc: int, instr: Instr) -> DeviceFault:
        """The same fault, attributed to instruction `pc` of `core`."""
        return DeviceFault(self.reason, self.address, core, pc, instr)


@dataclass
class Allocation:
    """One allocated LPDDR range; `buffer` is None in timing-only emulation."""

    base: int
    size: int
    name: str
    buffer: np.ndarray | None

    @property
    def end(self) -> int:
        return self.base + self.size


class DeviceMemory:
    """The LPDDR virtual address space of one job."""

    def __init__(self, target: SpyreTarget, backed: bool = True) -> None:
        self.target = target
        self.backed = backed
        self._bases: list[int] = []
        self._allocations: list[Allocation] = []
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None  # bases, ends
        # the LPDDR rows dma.scatter wrote in the running kernel: row address -> core (the
        # emulator clears it per kernel; `ops._bind_scatter` faults on a row two cores write)
        self.scattered_rows: dict[int, int] = {}

    @property
    def size(self) -> int:
        return self.target.num_segments * self.target.segment_bytes

    def segment_of(self, address: int) -> int:
        return address // self.target.segment_bytes

    @property
    def allocations(self) -> tuple[Allocation, ...]:
        return tuple(self._allocations)

    def allocate(self, base: int, size: int, name: str, backed: bool | None = None) -> Allocation:
        """Reserve [base, base+size) (zero-filled when backed); the range must be free."""
        index = bisect.bisect_right(self._bases, base)
        neighbours = self._allocations[max(index - 1, 0): index + 1]
        fault = allocation_fault(base, size, name, self.target,
                                 ((o.base, o.end, o.name) for o in neighbours))
        if fault is not None:
            raise DeviceFault(fault, base)
        use_buffer = self.backed if backed is None else backed
        buffer = np.zeros(size, dtype=np.uint8) if use_buffer else None
        allocation = Allocation(base, size, name, buffer)
        self._bases.insert(index, base)
        self._allocations.insert(index, allocation)
        self._arrays = None
        return allocation

    def locate(self, base: int, end: int) -> Allocation:
        """The allocation holding all of [base, end), or a DeviceFault saying why none does."""
        if base < 0 or end > self.size:
            raise DeviceFault(
                f"LPDDR range {_range(base, end)} is outside the {self.size:#x}-byte address space",
                base)
        index = bisect.bisect_right(self._bases, base) - 1
        if index < 0 or self._allocations[index].end <= base:
            raise DeviceFault(f"LPDDR address {base:#x} is not inside any allocation", base)
        allocation = self._allocations[index]
        if end > allocation.end:
            raise DeviceFault(
                f"LPDDR range {_range(base, end)} runs past the end of allocation "
                f"'{allocation.name}' {_range(allocation.base, allocation.end)}", allocation.end)
        return allocation

    def check_dma(self, region: Region) -> Allocation:
        """Validate the LPDDR side of a DMA and return the allocation it falls in."""
        if region.rows <= 0 or region.row_bytes <= 0:
            raise DeviceFault(
                f"DMA of {region.rows} rows x {region.row_bytes} bytes is empty", region.base)
        if region.pitch < 0:
            raise DeviceFault(f"LPDDR pitch {region.pitch} is negative", region.base)
        if region.base % ALIGNMENT:
            raise DeviceFault(
                f"LPDDR address {region.base:#x} is not {ALIGNMENT}-byte aligned", region.base)
        if region.rows > 1 and region.pitch % ALIGNMENT:
            raise DeviceFault(
                f"LPDDR pitch {region.pitch} is not a multiple of {ALIGNMENT} bytes, so row 1 "
                f"starts at the unaligned address {region.base + region.pitch:#x}",
                region.base + region.pitch)
        if self.segment_of(region.base) == self.target.program_segment:
            raise DeviceFault(
                f"LPDDR address {region.base:#x} is in segment {self.target.program_segment}, "
                "which is reserved for SpyreCode", region.base)
        return self.locate(region.base, region.end)

    def dma_bases_valid(self, bases: np.ndarray, ends: np.ndarray) -> bool:
        """Whether `check_dma` accepts DMAs over the LPDDR ranges [bases[i], ends[i]) whose
        shape (rows, row bytes, pitch) it has accepted before at another base: every base
        aligned, outside the program segment and its range inside one allocation. One NumPy
        pass over all of them; a False is followed by `check_dma` for the fault."""
        if bases.size == 0:
            return True
        if (bases % ALIGNMENT).any() or (bases < 0).any() or (ends > self.size).any():
            return False
        if (bases // self.target.segment_bytes == self.target.program_segment).any():
            return False
        index = self.allocation_index(bases)
        stops = self._bounds()[1]
        # a non-empty range ending inside the allocation also starts inside it
        return bool((index >= 0).all() and (ends <= stops[np.maximum(index, 0)]).all())

    def allocation_index(self, addresses: np.ndarray) -> np.ndarray:
        """Per address, the index in `allocations` of the last allocation starting at or
        before it (-1 if none): the one holding it, if any does."""
        return np.searchsorted(self._bounds()[0], addresses, side="right") - 1

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        if self._arrays is None:
            self._arrays = (np.asarray(self._bases, dtype=np.int64),
                            np.asarray([a.end for a in self._allocations], dtype=np.int64))
        return self._arrays

    def view(self, region: Region) -> np.ndarray:
        """A (rows, row_bytes) uint8 view of a region checked by `check_dma`."""
        allocation = self.locate(region.base, region.end)
        assert allocation.buffer is not None, "timing-only memory has no contents"
        return np.lib.stride_tricks.as_strided(
            allocation.buffer[region.base - allocation.base:],
            shape=(region.rows, region.row_bytes), strides=(region.pitch, 1))

    def write(self, base: int, data: np.ndarray) -> None:
        """Copy bytes into device memory (an InitTransfer or host-to-device DataTransfer)."""
        data = np.ascontiguousarray(data, dtype=np.uint8).reshape(-1)
        allocation = self.locate(base, base + data.size)
        if allocation.buffer is not None:
            offset = base - allocation.base
            allocation.buffer[offset: offset + data.size] = data

    def contents_from(self, base: int) -> memoryview:
        """The bytes from `base` to the end of its allocation, without a copy."""
        allocation = self.locate(base, base + 1)
        assert allocation.buffer is not None, "this allocation has no contents"
        return allocation.buffer.data[base - allocation.base:]

    def read(self, base: int, size: int) -> np.ndarray:
        """A copy of `size` bytes at `base` (a device-to-host DataTransfer)."""
        allocation = self.locate(base, base + size)
        assert allocation.buffer is not None, "timing-only memory has no contents"
        offset = base - allocation.base
        return allocation.buffer[offset: offset + size].copy()


class TileSource(Protocol):
    """What instruction semantics read LX tiles from: one core's LX (2-D tiles) or the LX
    of several cores at once (`CoreStack`, 3-D tiles with the core first)."""

    def view(self, region: Region, dtype: np.dtype, itemsize: int) -> np.ndarray: ...


class LocalMemory:
    """One core's LX scratchpad; `buffer` is None in timing-only emulation.

    `buffer`, if given, is the core's row of a `CoreStack`'s array (so the LX of several
    cores can also be viewed at once).
    """

    def __init__(self, size: int, backed: bool = True, buffer: np.ndarray | None = None) -> None:
        self.size = size
        if buffer is not None:
            self.buffer: np.ndarray | None = buffer
        else:
            self.buffer = np.zeros(size, dtype=np.uint8) if backed else None

    def check(self, region: Region) -> None:
        """Raise a DeviceFault unless the region lies inside LX."""
        if region.rows <= 0 or region.row_bytes <= 0:
            raise DeviceFault(
                f"LX tile of {region.rows} rows x {region.row_bytes} bytes is empty", region.base)
        if region.base < 0 or region.pitch < 0:
            raise DeviceFault(
                f"LX tile at {region.base:#x} with pitch {region.pitch} reaches below LX offset 0",
                region.base)
        if region.end > self.size:
            raise DeviceFault(
                f"LX tile {_range(region.base, region.end)} overflows the {self.size}-byte LX "
                f"by {region.end - self.size} bytes", region.base)

    def view(self, region: Region, dtype: np.dtype, itemsize: int) -> np.ndarray:
        """A (rows, row_bytes // itemsize) view of a checked region with element type `dtype`."""
        assert self.buffer is not None, "timing-only memory has no contents"
        return np.ndarray(
            shape=(region.rows, region.row_bytes // itemsize), dtype=dtype, buffer=self.buffer,
            offset=region.base, strides=(region.pitch, itemsize))


class CoreStack:
    """The LX of the cores first, first + step, ... (`count` of them) as one array: a tile
    viewed here has a leading core axis, so one NumPy call works on every core's tile."""

    def __init__(self, lx_all: np.ndarray, first: int, step: int, count: int) -> None:
        self.lx_all = lx_all  # (num_cores, lx_bytes) uint8
        self.first, self.step, self.count = first, step, count

    def view(self, region: Region, dtype: np.dtype, itemsize: int) -> np.ndarray:
        """A (count, rows, row_bytes // itemsize) view of a region checked on every core."""
        lx_bytes = self.lx_all.shape[1]
        return np.ndarray(
            shape=(self.count, region.rows, region.row_bytes // itemsize), dtype=dtype,
            buffer=self.lx_all, offset=self.first * lx_bytes + region.base,
            strides=(self.step * lx_bytes, region.pitch, itemsize))
