"""The `.spyre` file: a compiled model, its SpyreCode plans and the programs they launch.

This module alone owns the format, in the target layer (it imports only `spyrec.target`):
the emitter writes it with `write_spyre`, the CLI and the emulator read it with
`read_spyre` / `read_manifest`. Writing and reading check the plans' allocations against
the device's address rules (`spyrec.target.memory`) without the emulator's memory.
docs/spyrecode.md specifies the bytes.

File layout (integers little endian):

    offset 0   8 B   magic b"SPYREC\\x00\\x01"
               u32   format version (FORMAT_VERSION)
               u32   flags (0)
               u64   manifest length in bytes
               32 B  sha256 of the manifest bytes
    56         JSON manifest (UTF-8)
    then       zero padding to a 128-byte boundary: the blob area starts here
               blobs, each at a 128-byte aligned offset from the blob area start

The manifest holds the format version, target name, I/O signature, intermediates, the weights
directory, the kernels with their per-core program table, the preparation and execution plans,
the provenance, for every blob its offset, size and sha256, and (key "program_cost", since
design note 70; absent in older files and for a KTIR input, and readable without a version
bump since readers ignore a key they do not know) the source program's own cost, which the
profile's roofline is measured against. Blob "init.bin" holds every
kernel's job binary (the image that the preparation plan copies to the program area at the
start of segment 7); blobs "weights/<i>" hold the weight arrays in host format (C order),
converted to device format when the plan's InitTransfer runs.

A job binary (one per kernel, 128-byte aligned inside init.bin) starts with a table
    4 B  b"SPKT", u32 entry count, u64 reserved,
    per entry: u32 core, u32 reserved, u64 program offset (from the job binary start), u64 size
padded to 128 bytes, followed by the per-core programs (`isa.encode_program`), each 128-byte
aligned. ComputeOnDevice's `job_bin_ptr` is the device address of that table.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import mmap
import os
import struct
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from spyrec.target import DEFAULT_TARGET, SpyreTarget, round_up
from spyrec.target.isa import (
    SPECS_BY_CODE,
    EncodingError,
    Instr,
    count_instructions,
    decode_program,
    encode_program,
)
from spyrec.target.layout import DEVICE_DTYPE, HOST_DTYPE, DeviceLayout, stick_padded
from spyrec.target.memory import ALIGNMENT, allocation_fault

MAGIC = b"SPYREC\x00\x01"
# 2: the manifest holds the patch table of the trip-count guards (design note 49); version 1
# files (no guards) are still read
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
_HEADER = struct.Struct("<8sIIQ32s")
_JOB_HEADER = struct.Struct("<4sIQ")
_JOB_ENTRY = struct.Struct("<IIQQ")
_JOB_MAGIC = b"SPKT"
INIT_BIN = "init.bin"
H2D, D2H = 0, 1


class ContainerError(ValueError):
    """A `.spyre` file (or a binary about to become one) that cannot be used."""


@dataclass
class TensorBinding:
    """A tensor of the program bound to its device address (128-byte aligned)."""

    name: str
    layout: DeviceLayout
    addr: int
    # dim -> symbol for an input or output whose size varies per call; `layout` is then the
    # layout at the symbols' upper bounds (what the device program was compiled for)
    symbolic: dict[int, str] = field(default_factory=dict)
    # an input the program computes integers from in f32 (an integer input read as values,
    # a float input cast to integers): the largest |value| that keeps every integer it
    # computes exact (`passes/graph/int_range.py`); None: no limit
    int_limit: int | None = None
    # an input the host makes per call rather than the user passes (design note 81): the
    # key mask of this symbol, ones of its value zero-padded to the bound (`made_inputs`)
    made: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, **self.layout.to_dict(), "addr": self.addr}
        if self.symbolic:
            out["symbolic"] = {str(d): name for d, name in sorted(self.symbolic.items())}
        if self.int_limit is not None:
            out["int_limit"] = self.int_limit
        if self.made:
            out["made"] = self.made
        return out

    @staticmethod
    def from_dict(data: dict[str, Any]) -> TensorBinding:
        symbolic = {int(d): str(n) for d, n in data.get("symbolic", {}).items()}
        limit = data.get("int_limit")
        return TensorBinding(str(data["name"]), DeviceLayout.from_dict(data), int(data["addr"]),
                             symbolic, int_limit=None if limit is None else int(limit),
                             made=str(data.get("made", "")))


class EncodedPrograms(Mapping[int, list[Instr]]):
    """Per-core programs held in their binary encoding (`isa.encode_program`), as the
    compiler's packed `spyrecode.core`s carry them (verified there); decoded on access.

    Writing a container copies the bytes, so a program of a million instructions costs
    no per-instruction work on the way out.
    """

    def __init__(self, code: dict[int, bytes]):
        self.code = code
        self._decoded: dict[int, list[Instr]] = {}

    def __getitem__(self, core: int) -> list[Instr]:
        if core not in self._decoded:
            self._decoded[core] = decode_program(self.code[core])
        return self._decoded[core]

    def instructions(self, core: int) -> int:
        """The instruction count of a core's program, without decoding it."""
        if core in self._decoded:
            return len(self._decoded[core])
        return count_instructions(self.code[core])

    def __iter__(self) -> Iterator[int]:
        return iter(self.code)

    def __len__(self) -> int:
        return len(self.code)

    def __repr__(self) -> str:
        return f"EncodedPrograms({len(self.code)} cores)"


@dataclass
class KernelImage:
    """One kernel: a program per core, run by one ComputeOnDevice.

    `flops` and `min_offchip_bytes` are the compiler's figures for the work and the least
    LPDDR traffic of the kernel as compiled (its own operands read once): the per-kernel
    roofline; the program's roofline is built from `SpyreBinary.program_cost` instead.
    """

    name: str
    num_cores: int
    programs: Mapping[int, list[Instr]]  # a dict, or EncodedPrograms
    flops: int = 0
    min_offchip_bytes: int = 0
    provenance: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ProgramTensor:
    """A tensor of the source program that crosses the chip boundary: an input, parameter,
    buffer or constant read once, or an output written once (`kind`). A symbolic dim is
    its symbol's name; `itemsize` is the device storage bytes per element."""

    name: str
    kind: str  # "input", "parameter", "buffer", "constant", "output" or "update" (in place)
    shape: tuple[int | str, ...]
    dtype: str
    itemsize: int

    def sizes(self, values: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(values[d] if isinstance(d, str) else d for d in self.shape)


@dataclass(frozen=True)
class ProgramCost:
    """The source program's own cost (design note 70), computed by the frontend before any
    compiler pass (`spyrec.frontend.program_cost`): the tensors it must move at least once
    and its flops as written, a polynomial in the symbolic sizes (terms of numerator,
    denominator and symbol -> power). `uncounted` names the ops (with how many nodes) the
    flops leave out. Every figure is exact at any size in range."""

    tensors: tuple[ProgramTensor, ...]
    flop_terms: tuple[tuple[int, int, dict[str, int]], ...]
    uncounted: dict[str, int] = field(default_factory=dict)

    def min_offchip_bytes(self, values: Mapping[str, int]) -> int:
        """Every tensor moved once, unpadded, at `values` of the symbols."""
        return sum(math.prod(t.sizes(values)) * t.itemsize for t in self.tensors)

    def padded_offchip_bytes(self, values: Mapping[str, int]) -> int:
        """Every tensor moved once in the device's row-sticked layout of its source shape
        (each row of its last dim padded to whole sticks)."""
        total = 0
        for tensor in self.tensors:
            sizes = tensor.sizes(values)
            cols = sizes[-1] if sizes else 1
            total += math.prod(sizes[:-1]) * stick_padded(cols * tensor.itemsize)
        return total

    def flops(self, values: Mapping[str, int]) -> int:
        total = sum((Fraction(num, den) * math.prod(values[s] ** p for s, p in powers.items())
                     for num, den, powers in self.flop_terms), Fraction(0))
        return int(total)

    def to_dict(self) -> dict[str, Any]:
        return {"tensors": [[t.name, t.kind, list(t.shape), t.dtype, t.itemsize]
                            for t in self.tensors],
                "flops": [[num, den, powers] for num, den, powers in self.flop_terms],
                "uncounted": self.uncounted}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> ProgramCost:
        tensors = tuple(ProgramTensor(str(name), str(kind),
                                      tuple(d if isinstance(d, str) else int(d) for d in shape),
                                      str(dtype), int(itemsize))
                        for name, kind, shape, dtype, itemsize in data["tensors"])
        terms = tuple((int(num), int(den), {str(s): int(p) for s, p in powers.items()})
                      for num, den, powers in data["flops"])
        return ProgramCost(tensors, terms, {str(k): int(v) for k, v in data["uncounted"].items()})


@dataclass(frozen=True)
class Patch:
    """One entry of the patch table: the `loop.begin` at `pc` of `core`'s program in kernel
    `kernel` runs as many iterations as `thresholds` (non-decreasing) has entries at most
    the value of symbol `symbol`. A guard (`trips=1` as compiled) has one threshold; a tile
    loop of T trips has T, so it runs the prefix of its tiles the size needs."""

    kernel: int
    core: int
    pc: int
    symbol: str
    thresholds: tuple[int, ...]

    def to_list(self) -> list[object]:
        return [self.kernel, self.core, self.pc, self.symbol, list(self.thresholds)]

    @staticmethod
    def from_list(data: list[object]) -> Patch:
        kernel, core, pc, symbol, thresholds = data
        return Patch(int(kernel), int(core), int(pc), str(symbol),  # type: ignore[arg-type]
                     tuple(int(t) for t in thresholds))  # type: ignore[union-attr]

    def trips(self, value: int | None) -> int:
        """The trip count at `value` of the symbol (None: the upper bound, every trip)."""
        if value is None:
            return len(self.thresholds)
        return bisect.bisect_right(self.thresholds, value)


@dataclass(eq=False)
class SpyreBinary:
    """Everything a runtime needs to run a compiled program (the contents of a `.spyre`)."""

    target: str
    inputs: list[TensorBinding]
    outputs: list[TensorBinding]
    weights: list[tuple[TensorBinding, np.ndarray]]
    intermediates: list[TensorBinding]
    kernels: list[KernelImage]
    provenance: dict[str, str] = field(default_factory=dict)
    # symbol -> (lower, upper) inclusive bounds of the sizes that vary per call
    symbols: dict[str, tuple[int, int]] = field(default_factory=dict)
    # the trip-count guards the host's program correction sets per call (design note 49)
    patches: list[Patch] = field(default_factory=list)
    # the source program's own cost (design note 70); None for a KTIR input program, which
    # has no source program, and in a file written before the field existed
    program_cost: ProgramCost | None = None

    @property
    def user_inputs(self) -> list[TensorBinding]:
        """The inputs the caller passes, in order: every input but the ones the host makes."""
        return [b for b in self.inputs if not b.made]

    def made_inputs(self, user: list[np.ndarray], values: Mapping[str, int]) -> list[np.ndarray]:
        """Every input in order: the caller's arrays (`user`, for `user_inputs`) and, for an
        input the host makes, its symbol's key mask at `values` of the symbols: ones of
        the symbol's value (the program correction pads it with zeros like the others)."""
        arrays = iter(user)
        return [np.ones(values[b.made], HOST_DTYPE[b.layout.host_dtype]) if b.made
                else next(arrays) for b in self.inputs]

    # compared by value and mutable: unhashable, as defining __eq__ alone makes it
    __hash__ = None  # pyright: ignore[reportAssignmentType] - object types __hash__ a method

    def __eq__(self, other: object) -> bool:
        # Weights compare by bytes, dtype and shape: bit-exact, and NaN equals itself.
        if not isinstance(other, SpyreBinary):
            return NotImplemented
        return (
            (self.target, self.inputs, self.outputs, self.intermediates, self.kernels,
             self.provenance, self.symbols, self.patches, self.program_cost)
            == (other.target, other.inputs, other.outputs, other.intermediates, other.kernels,
                other.provenance, other.symbols, other.patches, other.program_cost)
            and len(self.weights) == len(other.weights)
            and all(
                b1 == b2 and a1.dtype == a2.dtype and a1.shape == a2.shape
                and a1.tobytes() == a2.tobytes()
                for (b1, a1), (b2, a2) in zip(self.weights, other.weights, strict=True)
            )
        )


# ---- job binaries ---------------------------------------------------------------------------

@dataclass(frozen=True)
class InitBin:
    """init.bin and where each kernel's job binary and per-core programs sit in it."""

    data: bytes
    kernel_offsets: tuple[int, ...]  # job binary start of each kernel, from the start of init.bin
    # per kernel: core -> (offset, size) of its program inside the kernel's job binary
    tables: tuple[dict[int, tuple[int, int]], ...]


def _pad(buffer: bytearray) -> None:
    buffer += bytes(round_up(len(buffer), ALIGNMENT) - len(buffer))


def encode_job_binary(programs: Mapping[int, list[Instr]]
                      ) -> tuple[bytes, dict[int, tuple[int, int]]]:
    """Encode one kernel's programs as a job binary; returns it and its core -> (offset, size)."""
    cores = sorted(programs)
    if isinstance(programs, EncodedPrograms):
        encoded = [programs.code[core] for core in cores]
    else:
        encoded = [encode_program(programs[core]) for core in cores]
    table_bytes = _JOB_HEADER.size + _JOB_ENTRY.size * len(cores)
    offset = round_up(table_bytes, ALIGNMENT)
    table: dict[int, tuple[int, int]] = {}
    for core, code in zip(cores, encoded, strict=True):
        table[core] = (offset, len(code))
        offset = round_up(offset + len(code), ALIGNMENT)
    out = bytearray(_JOB_HEADER.pack(_JOB_MAGIC, len(cores), 0))
    for core in cores:
        out += _JOB_ENTRY.pack(core, 0, *table[core])
    for code in encoded:
        _pad(out)
        out += code
    _pad(out)
    return bytes(out), table


def job_binary_table(data: bytes | memoryview) -> tuple[dict[int, tuple[int, int]], int]:
    """The core -> (offset, size) table of the job binary at the start of `data`, and the
    job binary's size (its last program's end, 128-byte aligned)."""
    if len(data) < _JOB_HEADER.size:
        raise EncodingError("job binary shorter than its header")
    magic, count, _ = _JOB_HEADER.unpack_from(data, 0)
    if magic != _JOB_MAGIC:
        raise EncodingError(f"no job binary here (magic {bytes(magic)!r})")
    table: dict[int, tuple[int, int]] = {}
    end = _JOB_HEADER.size + count * _JOB_ENTRY.size
    for index in range(count):
        position = _JOB_HEADER.size + index * _JOB_ENTRY.size
        if position + _JOB_ENTRY.size > len(data):
            raise EncodingError(f"job binary table truncated at entry {index}")
        core, _, offset, size = _JOB_ENTRY.unpack_from(data, position)
        if offset + size > len(data):
            raise EncodingError(f"program of core {core} runs past the end of the job binary")
        table[core] = (offset, size)
        end = max(end, offset + size)
    return table, min(round_up(end, ALIGNMENT), len(data))


def decode_job_binary(data: bytes | memoryview) -> dict[int, list[Instr]]:
    """The per-core programs of the job binary at the start of `data`."""
    table, _ = job_binary_table(data)
    return {core: decode_program(bytes(data[offset: offset + size]))
            for core, (offset, size) in table.items()}


def _job_binary_size(sizes: list[int]) -> int:
    """The size of the job binary `encode_job_binary` writes for programs of these sizes."""
    offset = round_up(_JOB_HEADER.size + _JOB_ENTRY.size * len(sizes), ALIGNMENT)
    for size in sizes:
        offset = round_up(offset + size, ALIGNMENT)
    return offset


def init_bin_layout(binary: SpyreBinary) -> tuple[int, tuple[int, ...]]:
    """init.bin's size and each kernel's job binary offset in it, as `build_init_bin` lays
    them out, from the programs' encoded sizes alone (reading a 40-layer `.spyre` back
    checks its plans without concatenating hundreds of megabytes of programs again)."""
    offsets: list[int] = []
    end = 0
    for kernel in binary.kernels:
        programs = kernel.programs
        try:
            sizes = [len(programs.code[core]) if isinstance(programs, EncodedPrograms)
                     else len(encode_program(programs[core])) for core in sorted(programs)]
        except EncodingError as error:
            raise ContainerError(f"kernel '{kernel.name}': {error}") from error
        offsets.append(end)
        end += _job_binary_size(sizes)
    return end, tuple(offsets)


def build_init_bin(binary: SpyreBinary) -> InitBin:
    """Lay out every kernel's job binary in init.bin (each 128-byte aligned)."""
    data = bytearray()
    offsets: list[int] = []
    tables: list[dict[int, tuple[int, int]]] = []
    for kernel in binary.kernels:
        try:
            job, table = encode_job_binary(kernel.programs)
        except EncodingError as error:
            raise ContainerError(f"kernel '{kernel.name}': {error}") from error
        offsets.append(len(data))
        tables.append(table)
        data += job
    return InitBin(bytes(data), tuple(offsets), tuple(tables))


# ---- plans ----------------------------------------------------------------------------------

def program_area(target: SpyreTarget = DEFAULT_TARGET) -> int:
    """Device address of the program area: offset 0 of the program segment (segment 7)."""
    return target.program_segment * target.segment_bytes


def _allocation_size(layout: DeviceLayout) -> int:
    return round_up(max(layout.nbytes, 1), ALIGNMENT)


def _check_binary(binary: SpyreBinary, target: SpyreTarget) -> None:
    names = [b.name for b in binary.inputs + binary.outputs + binary.intermediates]
    names += [b.name for b, _ in binary.weights]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ContainerError(f"tensor names bound more than once: {duplicates}")
    for binding, array in binary.weights:
        expected = HOST_DTYPE.get(binding.layout.host_dtype)
        if array.dtype != expected or tuple(array.shape) != binding.layout.shape:
            raise ContainerError(
                f"weight '{binding.name}' is {tuple(array.shape)} {array.dtype}, its binding "
                f"says {binding.layout.shape} {binding.layout.host_dtype}")
    for name, (lower, upper) in binary.symbols.items():
        if not 0 < lower <= upper:
            raise ContainerError(f"symbol '{name}' has the empty range [{lower}, {upper}]")
    for binding in binary.inputs + binary.outputs:
        for dim, name in binding.symbolic.items():
            if name not in binary.symbols or not 0 <= dim < len(binding.layout.shape):
                raise ContainerError(f"tensor '{binding.name}' dim {dim} names symbol '{name}', "
                                     "which the signature does not declare")
            if binding.layout.shape[dim] != binary.symbols[name][1]:
                raise ContainerError(
                    f"tensor '{binding.name}' dim {dim} is {binding.layout.shape[dim]}, not the "
                    f"upper bound {binary.symbols[name][1]} of symbol '{name}'")
    for binding in binary.inputs:
        if binding.made and (binding.symbolic != {0: binding.made}
                             or len(binding.layout.shape) != 1):
            raise ContainerError(f"input '{binding.name}' is the key mask of symbol "
                                 f"'{binding.made}', so it must be 1-D and sized by it")
    _check_patches(binary)
    for kernel in binary.kernels:
        if not 1 <= kernel.num_cores <= target.num_cores:
            raise ContainerError(
                f"kernel '{kernel.name}' uses {kernel.num_cores} cores, the target has "
                f"{target.num_cores}")
        bad = sorted(c for c in kernel.programs if not 0 <= c < kernel.num_cores)
        if bad:
            raise ContainerError(
                f"kernel '{kernel.name}' has programs for cores {bad} outside its "
                f"{kernel.num_cores} cores")


def _check_patches(binary: SpyreBinary) -> None:
    """Every entry of the patch table names a declared symbol, non-decreasing thresholds
    inside its range, and a `loop.begin` of a program of the binary with as many trips."""
    for index, patch in enumerate(binary.patches):
        where = f"patch {index} (kernel {patch.kernel}, core {patch.core}, pc {patch.pc})"
        fix = "; the patch table is corrupt: recompile the model"
        if not 0 <= patch.kernel < len(binary.kernels) or \
                patch.core not in binary.kernels[patch.kernel].programs:
            raise ContainerError(f"{where}: the binary has no such program{fix}")
        if patch.symbol not in binary.symbols:
            raise ContainerError(f"{where}: symbol '{patch.symbol}' is not declared{fix}")
        lower, upper = binary.symbols[patch.symbol]
        t = patch.thresholds
        if not t or any(not lower <= x <= upper for x in t) or list(t) != sorted(t):
            raise ContainerError(f"{where}: thresholds {list(t)} are not non-decreasing "
                                 f"sizes in [{lower}, {upper}] of symbol '{patch.symbol}'{fix}")
        op, trips = _instruction_at(binary.kernels[patch.kernel].programs, patch.core, patch.pc)
        if op != "loop.begin" or trips != len(t):
            shown = op if op != "loop.begin" else f"loop.begin trips={trips}"
            raise ContainerError(f"{where}: the instruction there is {shown}, not a "
                                 f"loop.begin of {len(t)} trips (one per threshold){fix}")


def instruction_offset(code: bytes | memoryview, pc: int) -> tuple[int, int]:
    """Byte offset and opcode of the instruction at `pc` of an encoded program (its
    `trips` field, for a loop.begin, is 4 bytes further); EncodingError past the end."""
    position = 0
    for index in range(pc + 1):
        if position + 4 > len(code):
            raise EncodingError(f"the program has {index} instructions, no pc {pc}")
        opcode, _, ndeps = struct.unpack_from("<BBH", code, position)
        spec = SPECS_BY_CODE.get(opcode)
        if spec is None:
            raise EncodingError(f"unknown opcode {opcode} at pc {index}")
        if index == pc:
            return position, opcode
        position += 4 + 8 * len(spec.fields) + 4 * ndeps
    raise AssertionError("unreachable")


def _instruction_at(programs: Mapping[int, list[Instr]], core: int, pc: int) -> tuple[str, int]:
    """The op at `pc` of a core's program and its first field (-1 without fields, or
    ('<none>', -1) past the end), without decoding the rest."""
    if isinstance(programs, EncodedPrograms):
        code = programs.code[core]
        try:
            position, opcode = instruction_offset(code, pc)
        except EncodingError:
            return "<none>", -1
        spec = SPECS_BY_CODE[opcode]
        first = struct.unpack_from("<q", code, position + 4)[0] if spec.fields else -1
        return spec.name, int(first)
    program = programs[core]
    if not 0 <= pc < len(program):
        return "<none>", -1
    return program[pc].op, program[pc].args[0] if program[pc].args else -1


def patch_addresses(binary: SpyreBinary, kernel_offsets: tuple[int, ...],
                    target: SpyreTarget = DEFAULT_TARGET) -> list[int]:
    """The device address of each patch-table entry's `trips` field in the program area,
    from the programs' encodings and the job binaries' layout (`encode_job_binary`)."""
    out = []
    for patch in binary.patches:
        programs = binary.kernels[patch.kernel].programs
        offset = round_up(_JOB_HEADER.size + _JOB_ENTRY.size * len(programs), ALIGNMENT)
        code = b""
        for core in sorted(programs):
            code = (programs.code[core] if isinstance(programs, EncodedPrograms)
                    else encode_program(programs[core]))
            if core == patch.core:
                break
            offset = round_up(offset + len(code), ALIGNMENT)
        position, _ = instruction_offset(code, patch.pc)
        out.append(program_area(target) + kernel_offsets[patch.kernel] + offset + position + 4)
    return out


@dataclass(frozen=True)
class Job:
    """A binary's SpyreCode job: its two plans and the init.bin the preparation plan loads."""

    prep_plan: list[dict[str, Any]]
    exec_plan: list[dict[str, Any]]
    init: InitBin


def build_job(binary: SpyreBinary, target: SpyreTarget = DEFAULT_TARGET) -> Job:
    """Validate a binary and build its plans and init.bin (see `build_plans`)."""
    _check_binary(binary, target)
    init = build_init_bin(binary)
    prep, exec_plan = _plans(binary, target, len(init.data), init.kernel_offsets)
    return Job(prep, exec_plan, init)


def build_plans(
    binary: SpyreBinary, target: SpyreTarget = DEFAULT_TARGET
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The job preparation plan and the job execution plan of a binary.

    Preparation: Allocate the program area (segment 7, offset 0, sized by init.bin) and
    InitTransfer init.bin into it; Allocate and InitTransfer each weight; Allocate the
    activations (inputs, outputs, intermediates; see `_activation_arenas`). Execution:
    DataTransfer host-to-device per input, one ComputeOnDevice per kernel (job_bin_ptr = its
    job binary), DataTransfer device-to-host per output. The plans are validated by replaying
    their allocations; a conflict (misaligned, overlapping, in segment 7, outside the address
    space) raises ContainerError.
    """
    _check_binary(binary, target)
    return _plans(binary, target, *init_bin_layout(binary))


def _plans(
    binary: SpyreBinary, target: SpyreTarget, init_size: int, kernel_offsets: tuple[int, ...]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    base = program_area(target)
    prep: list[dict[str, Any]] = [
        {"op": "Allocate", "name": "spyrecode", "dev_ptr": base,
         "size": round_up(max(init_size, 1), ALIGNMENT)},
        {"op": "InitTransfer", "src": INIT_BIN, "dev_ptr": base, "size": init_size},
    ]
    for index, (binding, _) in enumerate(binary.weights):
        prep.append({"op": "Allocate", "name": binding.name, "dev_ptr": binding.addr,
                     "size": _allocation_size(binding.layout)})
        prep.append({"op": "InitTransfer", "src": f"weights/{index}", "dev_ptr": binding.addr,
                     "size": binding.layout.nbytes})
    prep.extend(_activation_arenas(binary.inputs + binary.outputs + binary.intermediates))
    _replay_allocations(prep, target)

    exec_plan: list[dict[str, Any]] = []
    if binary.symbols:
        # program correction: bind the symbols from the inputs' sizes, check their bounds and
        # zero-pad the inputs to the compiled sizes; the outputs are cropped at the end
        exec_plan.append({"op": "ComputeOnHost", "fn": "pad_inputs",
                          "symbols": {n: list(b) for n, b in binary.symbols.items()}})
    if binary.patches:
        # program correction, per launch: each loop's trips is the number of its thresholds
        # the symbol reaches (the device skips work only padded positions would read)
        exec_plan.append({"op": "ComputeOnHost", "fn": "patch_trips", "patches": [
            {"kernel": p.kernel, "core": p.core, "pc": p.pc, "symbol": p.symbol,
             "thresholds": list(p.thresholds), "dev_ptr": addr}
            for p, addr in zip(binary.patches, patch_addresses(binary, kernel_offsets, target),
                               strict=True)]})
    for index, binding in enumerate(binary.inputs):
        exec_plan.append({"op": "DataTransfer", "dirn": H2D, "host_handle": f"input:{index}",
                          "tensor": binding.name, "dev_ptr": binding.addr,
                          "size": binding.layout.nbytes})
    for index, kernel in enumerate(binary.kernels):
        exec_plan.append({"op": "ComputeOnDevice", "kernel": index, "name": kernel.name,
                          "job_bin_ptr": base + kernel_offsets[index]})
    for index, binding in enumerate(binary.outputs):
        exec_plan.append({"op": "DataTransfer", "dirn": D2H, "host_handle": f"output:{index}",
                          "tensor": binding.name, "dev_ptr": binding.addr,
                          "size": binding.layout.nbytes})
    if binary.symbols:
        exec_plan.append({"op": "ComputeOnHost", "fn": "crop_outputs"})
    return prep, exec_plan


def _activation_arenas(bindings: list[TensorBinding]) -> list[dict[str, Any]]:
    """One Allocate per run of activation tensors that overlap or touch.

    The compiler places activations by liveness, so two tensors that are never live at the
    same time may share bytes; the arena covering them is allocated once, and each tensor
    stays inside it.
    """
    spans = sorted((b.addr, b.addr + _allocation_size(b.layout), b.name) for b in bindings)
    arenas: list[dict[str, Any]] = []
    for start, end, name in spans:
        if arenas and start <= arenas[-1]["dev_ptr"] + arenas[-1]["size"]:
            last = arenas[-1]
            last["size"] = max(last["size"], end - last["dev_ptr"])
            last["tensors"].append(name)
            continue
        arenas.append({"op": "Allocate", "name": name, "dev_ptr": start,
                       "size": end - start, "tensors": [name]})
    for arena in arenas:
        # A fault message names the allocation: a lone tensor's own name reads best.
        tensors = arena["tensors"]
        if len(tensors) > 1:
            arena["name"] = f"activations@{arena['dev_ptr']:#x} ({', '.join(tensors)})"
    return arenas


def _replay_allocations(prep: list[dict[str, Any]], target: SpyreTarget) -> None:
    """Check the plan's allocations as the device would make them, in order: aligned,
    inside one segment of the address space, apart from each other, and none but the
    program's own in the program segment; ContainerError names the first that is not."""
    bases: list[int] = []
    placed: list[tuple[int, int, str]] = []  # (base, end, name), sorted by base
    for step in prep:
        if step["op"] != "Allocate":
            continue
        base, size, name = step["dev_ptr"], step["size"], step["name"]
        is_program = name == "spyrecode" and step is prep[0]
        if base // target.segment_bytes == target.program_segment and not is_program:
            raise ContainerError(
                f"tensor '{name}' at {base:#x} is in segment "
                f"{target.program_segment}, which is reserved for SpyreCode")
        index = bisect.bisect_right(bases, base)
        fault = allocation_fault(base, size, name, target, placed[max(index - 1, 0): index + 1])
        if fault is not None:
            raise ContainerError(fault)
        bases.insert(index, base)
        placed.insert(index, (base, base + size, name))


# ---- writing --------------------------------------------------------------------------------

def _blobs(binary: SpyreBinary, init: InitBin) -> Iterator[tuple[str, memoryview]]:
    yield INIT_BIN, memoryview(init.data)
    for index, (_, array) in enumerate(binary.weights):
        yield f"weights/{index}", np.ascontiguousarray(array).reshape(-1).view(np.uint8).data


def _manifest(binary: SpyreBinary, target: SpyreTarget) -> tuple[dict[str, Any], list[memoryview]]:
    job = build_job(binary, target)
    init, prep, exec_plan = job.init, job.prep_plan, job.exec_plan
    blob_table: dict[str, dict[str, Any]] = {}
    blob_data: list[memoryview] = []
    offset = 0
    for name, data in _blobs(binary, init):
        blob_table[name] = {"offset": offset, "size": data.nbytes,
                            "sha256": hashlib.sha256(data).hexdigest()}
        blob_data.append(data)
        offset = round_up(offset + data.nbytes, ALIGNMENT)
    kernels = []
    for index, kernel in enumerate(binary.kernels):
        kernels.append({
            "name": kernel.name, "num_cores": kernel.num_cores, "flops": kernel.flops,
            "min_offchip_bytes": kernel.min_offchip_bytes, "provenance": kernel.provenance,
            "job_bin_offset": init.kernel_offsets[index],
            "programs": [
                {"core": core, "offset": off, "size": size,
                 "instructions": (kernel.programs.instructions(core)
                                  if isinstance(kernel.programs, EncodedPrograms)
                                  else len(kernel.programs[core]))}
                for core, (off, size) in sorted(init.tables[index].items())
            ],
        })
    manifest = {
        "format_version": FORMAT_VERSION,
        "target": binary.target,
        "signature": {"inputs": [b.to_dict() for b in binary.inputs],
                      "outputs": [b.to_dict() for b in binary.outputs],
                      "symbols": {name: list(bounds) for name, bounds in binary.symbols.items()}},
        "intermediates": [b.to_dict() for b in binary.intermediates],
        "weights": [{"binding": b.to_dict(), "blob": f"weights/{i}"}
                    for i, (b, _) in enumerate(binary.weights)],
        "kernels": kernels,
        "patches": [p.to_list() for p in binary.patches],
        "prep_plan": prep,
        "exec_plan": exec_plan,
        "blobs": blob_table,
        "provenance": binary.provenance,
    }
    if binary.program_cost is not None:  # read back as absent by the version 2 readers before it
        manifest["program_cost"] = binary.program_cost.to_dict()
    return manifest, blob_data


def _write_body(stream: BinaryIO, manifest_bytes: bytes, blobs: list[memoryview]) -> None:
    digest = hashlib.sha256(manifest_bytes).digest()
    stream.write(_HEADER.pack(MAGIC, FORMAT_VERSION, 0, len(manifest_bytes), digest))
    stream.write(manifest_bytes)
    position = _HEADER.size + len(manifest_bytes)
    blob_start = round_up(position, ALIGNMENT)
    stream.write(bytes(blob_start - position))
    position = 0
    for data in blobs:
        aligned = round_up(position, ALIGNMENT)
        stream.write(bytes(aligned - position))
        stream.write(data)
        position = aligned + data.nbytes


def write_spyre(
    binary: SpyreBinary, path: str | Path, target: SpyreTarget = DEFAULT_TARGET
) -> None:
    """Write a `.spyre` file atomically: the file at `path` is either complete or untouched."""
    manifest, blobs = _manifest(binary, target)
    manifest_bytes = json.dumps(manifest, separators=(",", ":")).encode()
    write_atomically(path, lambda stream: _write_body(stream, manifest_bytes, blobs))


def write_atomically(path: str | Path, write: Callable[[BinaryIO], object]) -> None:
    """Call `write` on a temporary file in the directory of `path`, flush it to disk and
    rename it over `path`: `path` is either complete or untouched, whatever interrupts the
    write (an error, Ctrl-C, a crash); any failure removes the temporary file."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    # Created like open() would (mode 0666 less the umask), unlike mkstemp's private 0600.
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "wb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; not every platform lets a directory be opened.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---- reading --------------------------------------------------------------------------------

def _read_exact(stream: BinaryIO, size: int) -> bytes:
    data = stream.read(size)
    return data if data is not None else b""


def _read_head(stream: BinaryIO, path: Path) -> tuple[dict[str, Any], int]:
    """Check the header and manifest; returns the manifest and the blob area's file offset."""
    header = _read_exact(stream, _HEADER.size)
    if header[: len(MAGIC)] != MAGIC:
        raise ContainerError(f"{path}: not a .spyre file (bad magic {header[:len(MAGIC)]!r})")
    if len(header) < _HEADER.size:
        raise ContainerError(f"{path}: truncated: the header needs {_HEADER.size} bytes, "
                             f"the file has {len(header)}")
    _, version, flags, manifest_size, digest = _HEADER.unpack(header)
    if version not in READABLE_VERSIONS:
        raise ContainerError(f"{path}: unsupported format version {version} (this spyrec "
                             f"reads versions {', '.join(map(str, READABLE_VERSIONS))}; "
                             "recompile the model with this spyrec)")
    if flags != 0:  # written as zero; no checksum covers the header itself
        raise ContainerError(f"{path}: corrupt header (flags {flags:#x}, not 0)")
    file_size = os.fstat(stream.fileno()).st_size
    if _HEADER.size + manifest_size > file_size:  # checked before a damaged size allocates
        raise ContainerError(f"{path}: truncated: the manifest needs {manifest_size} bytes, "
                             f"{file_size - _HEADER.size} are left")
    manifest_bytes = _read_exact(stream, manifest_size)
    if len(manifest_bytes) < manifest_size:
        raise ContainerError(f"{path}: truncated: the manifest needs {manifest_size} bytes, "
                             f"{len(manifest_bytes)} are left")
    if hashlib.sha256(manifest_bytes).digest() != digest:
        raise ContainerError(f"{path}: checksum mismatch in the manifest")
    try:
        manifest = json.loads(manifest_bytes)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ContainerError(f"{path}: corrupt manifest ({error})") from error
    if manifest.get("format_version") != version:
        raise ContainerError(f"{path}: manifest format version {manifest.get('format_version')} "
                             f"does not match the header's {version}")
    return manifest, round_up(_HEADER.size + manifest_size, ALIGNMENT)


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The checked manifest of a `.spyre` file, without reading its blobs (for inspection)."""
    path = Path(path)
    with path.open("rb") as stream:
        manifest, _ = _read_head(stream, path)
    return manifest


def _read_blobs(
    stream: BinaryIO, path: Path, manifest: dict[str, Any], start: int
) -> dict[str, memoryview]:
    file_size = os.fstat(stream.fileno()).st_size
    table: dict[str, dict[str, Any]] = manifest["blobs"]
    expected_end = start
    for entry in table.values():
        expected_end = max(expected_end, start + entry["offset"] + entry["size"])
    if file_size < expected_end:
        raise ContainerError(f"{path}: truncated: the blobs end at byte {expected_end}, "
                             f"the file has {file_size}")
    if file_size > expected_end:
        raise ContainerError(f"{path}: {file_size - expected_end} unexpected bytes after the "
                             "last blob")
    # mapped, not read: the page cache's pages become the blobs (weights are read-only
    # arrays over them), so a 40-layer file's gigabyte is not copied on the way in
    mapped = memoryview(mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ))
    blobs: dict[str, memoryview] = {}
    for name, entry in table.items():
        data = mapped[start + entry["offset"]: start + entry["offset"] + entry["size"]]
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise ContainerError(f"{path}: checksum mismatch in blob '{name}'")
        blobs[name] = data
    return blobs


def _binary_from(manifest: dict[str, Any], blobs: dict[str, memoryview]) -> SpyreBinary:
    init = blobs[INIT_BIN]
    kernels = []
    for entry in manifest["kernels"]:
        start = entry["job_bin_offset"]
        job = memoryview(init)[start:]
        table, _ = job_binary_table(job)
        # kept encoded (decoded when read): writing, planning and the emulator's load pass
        # the bytes through, and the emulator decodes and checks each distinct program
        programs = EncodedPrograms({core: bytes(job[offset: offset + size])
                                    for core, (offset, size) in table.items()})
        kernels.append(KernelImage(
            name=entry["name"], num_cores=entry["num_cores"], programs=programs,
            flops=entry["flops"], min_offchip_bytes=entry["min_offchip_bytes"],
            provenance=list(entry["provenance"])))
    weights = []
    for entry in manifest["weights"]:
        binding = TensorBinding.from_dict(entry["binding"])
        dtype = HOST_DTYPE[binding.layout.host_dtype]
        array = np.frombuffer(blobs[entry["blob"]], dtype=dtype).reshape(binding.layout.shape)
        weights.append((binding, array))
    signature = manifest["signature"]
    return SpyreBinary(
        target=manifest["target"],
        inputs=[TensorBinding.from_dict(b) for b in signature["inputs"]],
        outputs=[TensorBinding.from_dict(b) for b in signature["outputs"]],
        weights=weights,
        intermediates=[TensorBinding.from_dict(b) for b in manifest["intermediates"]],
        kernels=kernels,
        provenance=dict(manifest["provenance"]),
        symbols={str(name): (int(lo), int(hi))
                 for name, (lo, hi) in signature.get("symbols", {}).items()},
        patches=[Patch.from_list(p) for p in manifest.get("patches", [])],
        program_cost=(ProgramCost.from_dict(manifest["program_cost"])
                      if "program_cost" in manifest else None),
    )


def _check_dtypes(manifest: dict[str, Any], path: Path) -> None:
    """Every tensor's dtype must be one this spyrec knows: a damaged file or one from
    another spyrec is named with the tensor, before any layout arithmetic meets the dtype."""
    signature = manifest["signature"]
    bindings = [*signature["inputs"], *signature["outputs"], *manifest["intermediates"],
                *(entry["binding"] for entry in manifest["weights"])]
    for binding in bindings:
        dtype = binding["dtype"]
        if dtype not in HOST_DTYPE or dtype not in DEVICE_DTYPE:
            raise ContainerError(
                f"{path}: tensor '{binding.get('name')}' has the dtype {dtype!r}, which this "
                f"spyrec does not know (it knows {', '.join(HOST_DTYPE)}); the file is damaged "
                "or was written by another spyrec: recompile the model")


def read_spyre(path: str | Path, target: SpyreTarget = DEFAULT_TARGET) -> SpyreBinary:
    """Read and verify a `.spyre` file; raises ContainerError naming the file and the problem."""
    path = Path(path)
    try:
        with path.open("rb") as stream:
            manifest, start = _read_head(stream, path)
            _check_dtypes(manifest, path)
            blobs = _read_blobs(stream, path, manifest, start)
        binary = _binary_from(manifest, blobs)
    except (KeyError, TypeError, ValueError, EncodingError) as error:
        if isinstance(error, ContainerError):
            raise
        raise ContainerError(f"{path}: corrupt manifest or program ({error!r})") from error
    plans = build_plans(binary, target)
    if list(plans) != [manifest["prep_plan"], manifest["exec_plan"]]:
        raise ContainerError(f"{path}: the stored plans do not match the binary")
    return binary
