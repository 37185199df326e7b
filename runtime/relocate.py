"""Load once, relocate: programs that differ only in their LPDDR addresses share one load.

The compiler instantiates each structurally distinct kernel from one schedule template (design
note 26), so the kernels of a deep model, and the cores of one kernel, repeat the same
instructions with other LPDDR addresses: the `ddr` field of their DMAs. Everything the
emulator derives from a program when it loads it except the checks of those addresses (the
unrolled instructions, their LX accesses and costs, the hazard check, the ring groups and
the schedule) depends on the rest of the bytes alone, so it is computed once per distinct
program and reused (design note 35).

A `BytePattern` is an encoded program (or a whole job binary) with its relocatable fields
zeroed and their byte offsets: bytes match it when they equal it outside those fields, and
then decode to the same instructions but for the field values, which are read straight from
the bytes. `FlatDmas` maps those encoded values to the LPDDR base of every DMA of the
unrolled program (a loop may step a `ddr` field per iteration), so an instance's addresses
are one NumPy gather and add, and its address checks (`DeviceMemory.dma_bases_valid` and
`SpanChecker.fits`) are NumPy over all its DMAs at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from spyrec.target.isa import Engine, Expanded, Instr, ddr_region

_HEADER_BYTES = 4  # u8 opcode, u8 unit, u16 ndeps (isa's encoding)
_FIELD_BYTES = 8


def ddr_field_offsets(program: Sequence[Instr]) -> np.ndarray:
    """Byte offsets, in `isa.encode_program(program)`, of the `ddr` field of each DMA, in
    program order."""
    offsets = []
    position = 0
    for instr in program:
        spec = instr.spec
        if spec.engine is Engine.DMA:
            offsets.append(position + _HEADER_BYTES + _FIELD_BYTES * spec.fields.index("ddr"))
        position += _HEADER_BYTES + _FIELD_BYTES * len(spec.fields) + 4 * len(instr.deps)
    return np.asarray(offsets, dtype=np.int64)


@dataclass(frozen=True)
class BytePattern:
    """Bytes with some 8-byte little-endian fields zeroed, and where those fields are."""

    masked: bytes
    offsets: np.ndarray  # byte offset of each field, int64
    mask: np.ndarray  # every byte of every field: offsets[:, None] + 0..7, flattened

    @staticmethod
    def of(data: bytes | memoryview, offsets: np.ndarray) -> BytePattern:
        mask = (offsets[:, None] + np.arange(_FIELD_BYTES)).reshape(-1)
        raw = np.frombuffer(data, dtype=np.uint8).copy()
        raw[mask] = 0
        return BytePattern(raw.tobytes(), offsets, mask)

    def fields(self, data: bytes | memoryview) -> np.ndarray | None:
        """The field values (int64) of `data` if it equals this pattern outside the fields,
        else None. Equal bytes outside the fields mean the same instruction boundaries, so
        the fields are the same instructions' `ddr`."""
        raw = np.frombuffer(data, dtype=np.uint8)
        if raw.size != len(self.masked):
            return None
        values = raw[self.mask].view("<i8")
        copy = raw.copy()
        copy[self.mask] = 0
        if copy.tobytes() != self.masked:
            return None
        return values


@dataclass(frozen=True)
class FlatDmas:
    """The DMAs of an unrolled program and how their LPDDR regions follow from the encoded
    `ddr` fields: flat DMA i has base `fields[slot[i]] + delta[i]` and ends `extent[i]`
    bytes later (`delta` is what loop iterations add)."""

    index: np.ndarray  # flat instruction index of each DMA
    slot: np.ndarray  # which encoded DMA (its position among the program's DMAs) it comes from
    delta: np.ndarray
    extent: np.ndarray

    @staticmethod
    def of(flat: Expanded, encoded_ddr: np.ndarray) -> FlatDmas:
        """From an unrolled program and its encoded DMAs' `ddr` values."""
        slot_of_pc = {}
        for pc, instr in enumerate(flat.program):
            if instr.spec.engine is Engine.DMA:
                slot_of_pc[pc] = len(slot_of_pc)
        index, slot, delta, extent = [], [], [], []
        for i, instr in enumerate(flat.instrs):
            region = ddr_region(instr)
            if region is None:
                continue
            s = slot_of_pc[flat.origin[i][0]]
            index.append(i)
            slot.append(s)
            delta.append(region.base - int(encoded_ddr[s]))
            extent.append(region.end - region.base)
        return FlatDmas(*(np.asarray(v, dtype=np.int64) for v in (index, slot, delta, extent)))

    def bases(self, fields: np.ndarray) -> np.ndarray:
        """The LPDDR base of every flat DMA, given the encoded `ddr` fields."""
        return fields[self.slot] + self.delta


def relocated(instrs: list[Instr], dmas: FlatDmas, bases: np.ndarray) -> list[Instr]:
    """`instrs` (an unrolled program) with each DMA's `ddr` set to `bases`."""
    out = list(instrs)
    for i, base in zip(dmas.index.tolist(), bases.tolist(), strict=True):
        instr = out[i]
        field = instr.spec.fields.index("ddr")
        if instr.args[field] != base:
            args = (*instr.args[:field], base, *instr.args[field + 1:])
            out[i] = Instr(instr.op, args, instr.unit, instr.deps)
    return out
