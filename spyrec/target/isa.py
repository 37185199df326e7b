"""The SpyreCode instruction set: opcodes, fields, engines and the binary encoding.

This module is the single owner of the instruction encoding: the emitter
(`spyre-emit-spyrecode`) encodes with it and the emulator decodes with it. See
docs/spyrecode.md for the prose specification.

A per-core program is a sequence of `Instr`. Each instruction runs on one engine of its core
(the DMA engine, or the PT array / SFU of one of the two corelets) and waits for the
instructions listed in `deps` (indices into the same program) before it starts. Engines of a
core run concurrently; instructions on the same engine run in program order.

Binary encoding of one instruction (little endian):
    u8 opcode, u8 unit, u16 ndeps, then one i64 per field of the opcode (in `OpSpec.fields`
    order), then ndeps x u32 dependency indices.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np


class Engine(enum.Enum):
    DMA = "dma"
    PT = "pt"
    SFU = "sfu"
    RING = "ring"  # LX -> LX transfers and reductions over the ring between cores
    SYNC = "sync"  # synchronisation between cores
    LOOP = "loop"  # loop control: expanded when a program is loaded, runs on no engine


class DType(enum.IntEnum):
    """Device storage formats. fp16 and bf16 host data live on device as DL16."""

    F32 = 0
    DL16 = 1
    I32 = 2

    @property
    def itemsize(self) -> int:
        return 2 if self is DType.DL16 else 4


class UnaryFn(enum.IntEnum):
    COPY = 0  # also converts between src_dtype and dst_dtype
    RELU = 1
    GELU = 2  # exact (erf) form, as torch.nn.functional.gelu's default
    GELU_TANH = 3
    EXP = 4
    NEG = 5
    SIGMOID = 6
    SILU = 7
    TANH = 8
    SQRT = 9
    RSQRT = 10
    RECIPROCAL = 11
    ABS = 12
    LOG = 13
    ERF = 14
    SIN = 15  # rotary tables of positions known only at run time
    COS = 16


TRANSCENDENTAL = frozenset(
    {UnaryFn.GELU, UnaryFn.GELU_TANH, UnaryFn.EXP, UnaryFn.SIGMOID, UnaryFn.SILU, UnaryFn.TANH,
     UnaryFn.SQRT, UnaryFn.RSQRT, UnaryFn.RECIPROCAL, UnaryFn.LOG, UnaryFn.ERF, UnaryFn.SIN,
     UnaryFn.COS}
)


class BinaryFn(enum.IntEnum):
    ADD = 0
    SUB = 1
    MUL = 2
    DIV = 3
    MAX = 4
    MIN = 5
    # src0 where src1 is nonzero, else -0.0: an exact select. -0.0 is the one value x with
    # x + v == v for every v (NaN, infinities and both zeros included), so
    # where(p, a, b) = keep(a, p) + keep(b, 1 - p) is exact for all values (design note 62).
    KEEP = 6


class ReduceFn(enum.IntEnum):
    SUM = 0
    MAX = 1
    MIN = 2


@dataclass(frozen=True)
class OpSpec:
    name: str
    code: int
    engine: Engine
    fields: tuple[str, ...]
    doc: str


_SPECS: tuple[OpSpec, ...] = (
    OpSpec(
        "dma.load", 1, Engine.DMA,
        ("ddr", "lx", "rows", "row_bytes", "ddr_pitch", "lx_pitch"),
        "Copy `rows` runs of `row_bytes` from LPDDR address `ddr` (runs `ddr_pitch` apart) "
        "to LX offset `lx` (runs `lx_pitch` apart).",
    ),
    OpSpec(
        "dma.store", 2, Engine.DMA,
        ("lx", "ddr", "rows", "row_bytes", "lx_pitch", "ddr_pitch"),
        "Copy `rows` runs of `row_bytes` from LX offset `lx` to LPDDR address `ddr`.",
    ),
    OpSpec(
        "pt.matmul", 3, Engine.PT,
        ("a", "b", "c", "m", "k", "n", "a_pitch", "b_pitch", "c_pitch", "in_dtype", "accumulate"),
        "C[m,n] (fp32, in LX) = (accumulate ? C : 0) + A[m,k] @ B[k,n]; A and B in LX with "
        "element type `in_dtype`, row pitches in bytes; products and sums in fp32.",
    ),
    OpSpec(
        "sfu.unary", 4, Engine.SFU,
        ("fn", "src", "dst", "rows", "cols", "src_pitch", "dst_pitch", "src_dtype", "dst_dtype"),
        "dst[r,c] = fn(src[r,c]) on an LX tile; computed in fp32, rounded to `dst_dtype`.",
    ),
    OpSpec(
        "sfu.binary", 5, Engine.SFU,
        ("fn", "src0", "src1", "dst", "rows", "cols", "src0_pitch", "src1_pitch", "dst_pitch",
         "src0_dtype", "src1_dtype", "dst_dtype"),
        "dst[r,c] = fn(src0[r,c], src1[r,c]) on LX tiles; a pitch of 0 broadcasts one row "
        "over all rows. Computed in fp32, rounded to `dst_dtype`.",
    ),
    OpSpec(
        "sfu.scalar", 6, Engine.SFU,
        ("fn", "src", "dst", "rows", "cols", "src_pitch", "dst_pitch", "src_dtype", "dst_dtype",
         "imm", "reverse"),
        "dst[r,c] = fn(src[r,c], s) (or fn(s, src[r,c]) when `reverse` is 1) where s is the "
        "fp32 whose IEEE bit pattern is `imm`. Computed in fp32, rounded to `dst_dtype`.",
    ),
    OpSpec(
        "sfu.reduce", 7, Engine.SFU,
        ("fn", "src", "dst", "rows", "cols", "src_pitch", "dst_pitch", "src_dtype", "dst_dtype"),
        "dst[r,0] = fn over c < `cols` of src[r,c] (a ReduceFn, accumulated in fp32, rounded "
        "to `dst_dtype`); the rest of each destination row's first stick is set to zero, so "
        "a reduced column is a stick-padded tensor with zero padding.",
    ),
    OpSpec(
        "sfu.colwise", 8, Engine.SFU,
        ("fn", "src0", "src1", "dst", "rows", "cols", "src0_pitch", "src1_pitch", "dst_pitch",
         "src0_dtype", "src1_dtype", "dst_dtype", "reverse"),
        "dst[r,c] = fn(src0[r,c], src1[r,0]) (or fn(src1[r,0], src0[r,c]) when `reverse` is "
        "1): one value per row broadcast along the row. Computed in fp32, rounded to "
        "`dst_dtype`.",
    ),
    OpSpec(
        "pt.matmul_nt", 9, Engine.PT,
        ("a", "b", "c", "m", "k", "n", "a_pitch", "b_pitch", "c_pitch", "in_dtype", "accumulate"),
        "C[m,n] (fp32, in LX) = (accumulate ? C : 0) + A[m,k] @ B[n,k]^T: pt.matmul with B "
        "given as n rows of k elements (attention scores Q @ K^T read K as stored).",
    ),
    OpSpec(
        "sfu.mask", 10, Engine.SFU,
        ("src", "dst", "rows", "cols", "src_pitch", "dst_pitch", "src_dtype", "dst_dtype",
         "diag", "imm"),
        "dst[r,c] = s if c > r + `diag` else src[r,c], where s is the fp32 whose IEEE bit "
        "pattern is `imm` (a causal mask; `diag` carries the tile's first row). Rounded to "
        "`dst_dtype`.",
    ),
    OpSpec(
        "ring.send", 11, Engine.RING,
        ("src", "rows", "row_bytes", "src_pitch", "dst_core", "tag"),
        "Send `rows` runs of `row_bytes` from LX offset `src` (runs `src_pitch` apart) over the "
        "ring to core `dst_core`, into the buffer of the ring.recv there that matches it (same "
        "pair of cores and `tag`, in program order). Finishes when the data has left.",
    ),
    OpSpec(
        "ring.recv", 12, Engine.RING,
        ("dst", "rows", "row_bytes", "dst_pitch", "src_core", "tag"),
        "Receive the matching ring.send of core `src_core` (same `tag`, same rows x row_bytes) "
        "into LX offset `dst` (runs `dst_pitch` apart). Finishes when the data has arrived.",
    ),
    OpSpec(
        "ring.reduce", 13, Engine.RING,
        ("src", "dst", "rows", "cols", "src_pitch", "dst_pitch", "dtype", "first", "count",
         "stride", "root", "tag"),
        "Sum a rows x cols tile of element type `dtype` over the group of cores first, "
        "first + stride, ... (`count` cores), all of which issue the same ring.reduce; fp32 "
        "sums in group order, rounded to `dtype`, written to `dst` on core `root`, or on every "
        "member when `root` is -1.",
    ),
    OpSpec(
        "sync.barrier", 14, Engine.SYNC,
        ("first", "count", "stride", "tag"),
        "Finish when every core of the group first, first + stride, ... (`count` cores) has "
        "reached its matching sync.barrier (same group and `tag`, in program order).",
    ),
    OpSpec(
        "loop.begin", 15, Engine.LOOP,
        ("trips",),
        "Run the instructions up to the matching loop.end `trips` times (0 skips them). Host "
        "program correction may patch `trips`.",
    ),
    OpSpec(
        "loop.incr", 16, Engine.LOOP,
        ("pc", "field", "step"),
        "In the loop that contains it, add `step` per iteration to field number `field` (an "
        "index into the fields of that instruction) of the body instruction at `pc`.",
    ),
    OpSpec(
        "loop.end", 17, Engine.LOOP,
        (),
        "Close the innermost open loop.begin.",
    ),
    OpSpec(
        "dma.gather", 18, Engine.DMA,
        ("ddr", "lx", "rows", "row_bytes", "ddr_pitch", "lx_pitch", "idx", "limit"),
        "For each i < `rows`, copy `row_bytes` from table row k = idx[i] (LPDDR address "
        "`ddr + k * ddr_pitch`) to LX offset `lx + i * lx_pitch`, where idx is the int32 "
        "vector at LX offset `idx`; faults unless 0 <= k < `limit` (the table's rows).",
    ),
    OpSpec(
        "dma.scatter", 19, Engine.DMA,
        ("lx", "ddr", "rows", "row_bytes", "lx_pitch", "ddr_pitch", "idx", "limit"),
        "For each i < `rows` in order, copy `row_bytes` from LX offset `lx + i * lx_pitch` to "
        "table row k = idx[i] (LPDDR address `ddr + k * ddr_pitch`), where idx is the int32 "
        "vector at LX offset `idx`; faults unless 0 <= k < `limit`. A repeated k keeps the "
        "last row written to it.",
    ),
)

SPECS_BY_NAME: dict[str, OpSpec] = {s.name: s for s in _SPECS}
SPECS_BY_CODE: dict[int, OpSpec] = {s.code: s for s in _SPECS}


class EncodingError(ValueError):
    """A program that cannot be encoded or a byte string that is not a valid program."""


@dataclass(frozen=True)
class Instr:
    """One SpyreCode instruction."""

    op: str
    args: tuple[int, ...]
    unit: int = 0
    deps: tuple[int, ...] = field(default_factory=tuple)

    @property
    def spec(self) -> OpSpec:
        return SPECS_BY_NAME[self.op]

    def arg(self, name: str) -> int:
        return self.args[self.spec.fields.index(name)]

    def named_args(self) -> dict[str, int]:
        return dict(zip(self.spec.fields, self.args, strict=True))

    @staticmethod
    def make(op: str, unit: int = 0, deps: Iterable[int] = (), **fields: int) -> Instr:
        spec = SPECS_BY_NAME.get(op)
        if spec is None:
            raise EncodingError(f"unknown SpyreCode instruction '{op}'")
        missing = [f for f in spec.fields if f not in fields]
        extra = [f for f in fields if f not in spec.fields]
        if missing or extra:
            raise EncodingError(f"{op}: missing fields {missing}, unexpected fields {extra}")
        return Instr(op, tuple(int(fields[f]) for f in spec.fields), unit, tuple(sorted(deps)))

    def disassemble(self) -> str:
        parts = [f"{self.op} u{self.unit}"] + [f"{k}={v}" for k, v in self.named_args().items()]
        text = " ".join(parts)
        if self.deps:
            text += " deps=[" + ",".join(str(d) for d in self.deps) + "]"
        return text


_HEADER = struct.Struct("<BBH")


def f32_bits(value: float) -> int:
    """The IEEE fp32 bit pattern of `value`, as the `imm` field of sfu.scalar carries it."""
    return int(struct.unpack("<I", struct.pack("<f", value))[0])


def bits_f32(bits: int) -> float:
    """The fp32 value of an `imm` bit pattern."""
    return float(struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0])


class ProgramError(EncodingError):
    """A program whose structure is invalid (loops, dependencies); `pc` names the culprit."""

    def __init__(self, pc: int, reason: str) -> None:
        self.pc = pc
        self.reason = reason
        super().__init__(f"instruction {pc}: {reason}")


LOOP_OPS = frozenset({"loop.begin", "loop.incr", "loop.end"})
MAX_UNROLLED = 1 << 22  # instructions per core after unrolling, a bound on emulator memory


def loop_spans(program: Sequence[Instr]) -> list[tuple[int, int] | None]:
    """Per pc, the (loop.begin pc, loop.end pc) of the loop whose body holds it, else None.

    Loops do not nest (a loop.begin inside a body is an error), every loop.begin has its
    loop.end and every loop.incr sits in a body; ProgramError otherwise.
    """
    spans: list[tuple[int, int] | None] = [None] * len(program)
    begin: int | None = None
    for pc, instr in enumerate(program):
        if instr.op == "loop.begin":
            if begin is not None:
                raise ProgramError(pc, f"loop.begin inside the loop opened at pc {begin} "
                                       "(loops do not nest)")
            begin = pc
        elif instr.op == "loop.end":
            if begin is None:
                raise ProgramError(pc, "loop.end without a loop.begin")
            for inner in range(begin + 1, pc):
                spans[inner] = (begin, pc)
            begin = None
        elif instr.op == "loop.incr" and begin is None:
            raise ProgramError(pc, "loop.incr outside a loop")
    if begin is not None:
        raise ProgramError(begin, "loop.begin without a loop.end")
    return spans


def check_program(program: Sequence[Instr]) -> list[tuple[int, int] | None]:
    """Check loops and dependencies of a program (ProgramError); returns its `loop_spans`.

    An instruction may depend on an earlier instruction, or, inside a loop body, on a later
    instruction of the same body: that dependency is on the previous iteration's instance
    (none in the first iteration). Loop control instructions have no dependencies and are no
    one's dependency; a loop.incr names an instruction of its own body and one of its fields.
    """
    spans = loop_spans(program)
    for pc, instr in enumerate(program):
        if instr.op == "loop.begin" and instr.arg("trips") < 0:
            raise ProgramError(pc, f"loop.begin trips={instr.arg('trips')} must not be negative")
        if instr.op in LOOP_OPS:
            if instr.deps:
                raise ProgramError(pc, f"{instr.op} cannot have dependencies")
            if instr.op == "loop.incr":
                _check_incr(program, spans, pc, instr)
            continue
        for d in instr.deps:
            if not 0 <= d < len(program):
                raise ProgramError(pc, f"{instr.op} depends on pc {d}, which does not exist")
            if d >= pc and (spans[pc] is None or spans[d] != spans[pc]):
                raise ProgramError(pc, f"{instr.op} depends on a later instruction (pc {d})")
            if program[d].op in LOOP_OPS:
                raise ProgramError(pc, f"{instr.op} depends on pc {d}, a {program[d].op}")
    return spans


def _check_incr(program: Sequence[Instr], spans: list[tuple[int, int] | None], pc: int,
                instr: Instr) -> None:
    target, field_index = instr.arg("pc"), instr.arg("field")
    if not 0 <= target < len(program) or spans[target] != spans[pc]:
        raise ProgramError(pc, f"loop.incr names pc {target}, which is not in its loop body")
    if program[target].op in LOOP_OPS:
        raise ProgramError(pc, f"loop.incr names pc {target}, a {program[target].op}")
    fields = program[target].spec.fields
    if not 0 <= field_index < len(fields):
        raise ProgramError(pc, f"loop.incr names field {field_index} of pc {target} "
                               f"({program[target].op} has {len(fields)} fields)")


@dataclass(frozen=True)
class Expanded:
    """A program with its loops unrolled: `origin[i]` is the (pc, iteration) that flat
    instruction i comes from (iteration -1 outside loops); `program` is the original."""

    instrs: list[Instr]
    origin: list[tuple[int, int]]
    program: Sequence[Instr]

    def where(self, flat: int) -> str:
        """Where flat instruction i is, for messages: "pc 5" or "pc 5 (iteration 2)"."""
        pc, iteration = self.origin[flat]
        return f"pc {pc}" if iteration < 0 else f"pc {pc} (iteration {iteration})"

    def shown(self, flat: int) -> Instr:
        """Flat instruction i as messages show it: this iteration's fields, the program's
        dependencies (pcs of the program, not of the unrolled list)."""
        instr = self.instrs[flat]
        return Instr(instr.op, instr.args, instr.unit, self.program[self.origin[flat][0]].deps)


def plain(program: Sequence[Instr]) -> Expanded:
    """A loop-free program as an Expanded (every instruction its own origin)."""
    return Expanded(list(program), [(pc, -1) for pc in range(len(program))], program)


def expand_loops(program: Sequence[Instr]) -> Expanded:
    """Unroll every loop of a checked program into straight-line instructions.

    Iteration t of a body instruction gets its loop.incr fields advanced by t * step; its
    dependencies on body instructions point at this iteration's instances (earlier ones) or
    at the previous iteration's (later ones, dropped in iteration 0); dependencies on
    instructions outside the body, and those of instructions after the loop on body
    instructions, point at the latest instance (dropped if the loop ran 0 times).
    """
    if not any(i.op == "loop.begin" for i in program):
        return plain(program)
    spans = check_program(program)
    unrolled = sum(1 if span is None else program[span[0]].arg("trips")
                   for instr, span in zip(program, spans, strict=True)
                   if instr.op not in LOOP_OPS)
    if unrolled > MAX_UNROLLED:
        first = next(pc for pc, i in enumerate(program) if i.op == "loop.begin")
        raise ProgramError(first, f"the loops unroll to {unrolled} instructions, more than the "
                                  f"{MAX_UNROLLED} the emulator runs per core")
    flat: list[Instr] = []
    origin: list[tuple[int, int]] = []
    latest: dict[int, int] = {}  # pc -> flat index of its latest instance
    pc = 0
    while pc < len(program):
        instr = program[pc]
        if instr.op != "loop.begin":
            deps = tuple(sorted(latest[d] for d in instr.deps if d in latest))
            latest[pc] = len(flat)
            flat.append(Instr(instr.op, instr.args, instr.unit, deps))
            origin.append((pc, -1))
            pc += 1
            continue
        end = _loop_end(spans, pc)
        body = [j for j in range(pc + 1, end) if program[j].op not in LOOP_OPS]
        steps: dict[int, list[tuple[int, int]]] = {}
        for j in range(pc + 1, end):
            if program[j].op == "loop.incr":
                incr = program[j]
                steps.setdefault(incr.arg("pc"), []).append((incr.arg("field"), incr.arg("step")))
        previous: dict[int, int] = {}
        for iteration in range(instr.arg("trips")):
            current: dict[int, int] = {}
            for j in body:
                source = program[j]
                args = list(source.args)
                for field_index, step in steps.get(j, ()):
                    args[field_index] += iteration * step
                deps = []
                for d in source.deps:
                    if pc < d < end:
                        instance = current.get(d) if d < j else previous.get(d)
                    else:
                        instance = latest.get(d)
                    if instance is not None:
                        deps.append(instance)
                current[j] = len(flat)
                flat.append(Instr(source.op, tuple(args), source.unit, tuple(sorted(deps))))
                origin.append((j, iteration))
            previous = current
            latest.update(current)
        pc = end + 1
    return Expanded(flat, origin, program)


def _loop_end(spans: list[tuple[int, int] | None], begin: int) -> int:
    inside = spans[begin + 1] if begin + 1 < len(spans) else None
    if inside is not None:
        return inside[1]
    return begin + 1  # an empty loop: loop.begin directly followed by its loop.end


def encode_program(program: Sequence[Instr]) -> bytes:
    """Encode a per-core program to bytes (ProgramError if its loops or deps are invalid)."""
    check_program(program)
    out = bytearray()
    for instr in program:
        spec = instr.spec
        out += _HEADER.pack(spec.code, instr.unit, len(instr.deps))
        out += struct.pack(f"<{len(spec.fields)}q", *instr.args)
        out += struct.pack(f"<{len(instr.deps)}I", *instr.deps)
    return bytes(out)


_FIELD_BYTES = {spec.code: 4 + 8 * len(spec.fields) for spec in _SPECS}
# a header word (opcode, unit, dependence count) with its unit masked
HEADER_UNIT_MASK = np.uint32(0xFFFF00FF)


class ProgramMemo:
    """Encoded programs remembered by their length and the words at chosen positions.

    A walk over an encoded program (to count or check its instructions) depends only on some
    of its 4-byte words: the headers, perhaps the dependences. A later program of the same
    length with the same (masked) words at those positions gives the same answer, which one
    NumPy comparison finds: the instances of a schedule template differ in addresses only.
    """

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._known: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, object]] = {}

    def lookup(self, data: bytes) -> object | None:
        """What was remembered for a program like `data`, None if there is none."""
        known = self._known.get(len(data))
        if known is None or len(data) % 4:
            return None
        index, mask, expected, value = known
        words = np.frombuffer(data, dtype="<u4")[index] & mask
        return value if np.array_equal(words, expected) else None

    def remember(self, data: bytes, index: np.ndarray, mask: np.ndarray, value: object) -> None:
        """Remember `value` for programs of `data`'s length with its words at `index` (word
        positions, ANDed with `mask`)."""
        if len(data) % 4:
            return
        if len(self._known) >= self.limit:
            self._known.clear()
        words = np.frombuffer(data, dtype="<u4")[index] & mask
        self._known[len(data)] = (index, mask, words, value)


# encoded programs whose headers sat at the same words: their instruction count
_WALKS = ProgramMemo()


def count_instructions(data: bytes) -> int:
    """The instructions of an encoded program, from their headers alone (raises
    EncodingError where `decode_program` would). Every instruction is a whole number of
    4-byte words, and which words are headers follows from the headers' opcodes and
    dependence counts alone, so a program of a length seen before whose words at the known
    header positions match has the same instructions: checked with NumPy, without the walk
    (a 40-layer stack's seven million instructions are mostly such instances)."""
    size = len(data)
    known = _WALKS.lookup(data)
    if known is not None:
        return int(known)  # type: ignore[call-overload]
    unpack, extent = _HEADER.unpack_from, _FIELD_BYTES
    pos = 0
    starts: list[int] = []
    while pos < size:
        if pos + _HEADER.size > size:
            raise EncodingError(f"truncated instruction header at byte {pos}")
        code, _, ndeps = unpack(data, pos)
        length = extent.get(code)
        if length is None:
            raise EncodingError(f"unknown opcode {code} at byte {pos}")
        starts.append(pos)
        pos += length + 4 * ndeps
    if pos != size:
        raise EncodingError(f"truncated instruction at the end ({size} bytes)")
    if starts:
        index = np.array(starts, dtype=np.int64) // 4
        _WALKS.remember(data, index, np.full(index.size, HEADER_UNIT_MASK), len(starts))
    return len(starts)


def decode_program(data: bytes) -> list[Instr]:
    """Decode bytes produced by `encode_program`; raises EncodingError on malformed input."""
    program: list[Instr] = []
    pos = 0
    while pos < len(data):
        if pos + _HEADER.size > len(data):
            raise EncodingError(f"truncated instruction header at byte {pos}")
        code, unit, ndeps = _HEADER.unpack_from(data, pos)
        pos += _HEADER.size
        spec = SPECS_BY_CODE.get(code)
        if spec is None:
            raise EncodingError(f"unknown opcode {code} at byte {pos - _HEADER.size}")
        nbytes = 8 * len(spec.fields) + 4 * ndeps
        if pos + nbytes > len(data):
            raise EncodingError(f"truncated {spec.name} at byte {pos - _HEADER.size}")
        args = struct.unpack_from(f"<{len(spec.fields)}q", data, pos)
        deps = struct.unpack_from(f"<{ndeps}I", data, pos + 8 * len(spec.fields))
        pos += nbytes
        program.append(Instr(spec.name, tuple(args), unit, tuple(deps)))
    return program


# ---- operand geometry helpers (shared by the emulator, its hazard checker and cost models) ----

@dataclass(frozen=True)
class Region:
    """A strided byte region: `rows` runs of `row_bytes`, the runs `pitch` bytes apart.

    A pitch of 0 makes every row the same bytes (the broadcast of one row).
    """

    base: int
    rows: int
    row_bytes: int
    pitch: int

    @property
    def end(self) -> int:
        """One past the highest byte the region touches."""
        return self.base + (self.rows - 1) * self.pitch + self.row_bytes

    @property
    def distinct_rows(self) -> int:
        return 1 if self.pitch == 0 else self.rows


# The bytes of one LX stick, the unit sfu.reduce writes per destination row. The ISA fixes it
# (it is part of the instruction's meaning); it equals SpyreTarget.stick_bytes.
STICK_BYTES = 128


def _itemsize(code: int) -> int:
    return DType(code).itemsize


def group_members(first: int, count: int, stride: int) -> list[int]:
    """The cores of a ring.reduce or sync.barrier group, in group order."""
    return [first + i * stride for i in range(count)]


def lx_access(
    instr: Instr, core: int | None = None
) -> tuple[tuple[Region, ...], tuple[Region, ...]]:
    """The LX regions an instruction reads and writes (ValueError on an invalid dtype code).

    `core` is the core running it; it matters only for ring.reduce, which writes `dst` on its
    root alone (with `core` None, as if on the root).
    """
    a = instr.named_args()
    op = instr.op
    if instr.spec.engine in (Engine.SYNC, Engine.LOOP):
        return (), ()
    if op == "ring.send":
        return (Region(a["src"], a["rows"], a["row_bytes"], a["src_pitch"]),), ()
    if op == "ring.recv":
        return (), (Region(a["dst"], a["rows"], a["row_bytes"], a["dst_pitch"]),)
    if op == "ring.reduce":
        row = a["cols"] * _itemsize(a["dtype"])
        src = Region(a["src"], a["rows"], row, a["src_pitch"])
        writes = a["root"] < 0 or core is None or core == a["root"]
        return (src,), ((Region(a["dst"], a["rows"], row, a["dst_pitch"]),) if writes else ())
    if op == "dma.load":
        return (), (Region(a["lx"], a["rows"], a["row_bytes"], a["lx_pitch"]),)
    if op == "dma.gather":
        return ((gather_index_region(instr),),
                (Region(a["lx"], a["rows"], a["row_bytes"], a["lx_pitch"]),))
    if op == "dma.scatter":
        return ((gather_index_region(instr),
                 Region(a["lx"], a["rows"], a["row_bytes"], a["lx_pitch"])), ())
    if op == "dma.store":
        return (Region(a["lx"], a["rows"], a["row_bytes"], a["lx_pitch"]),), ()
    if op in ("pt.matmul", "pt.matmul_nt"):
        size = _itemsize(a["in_dtype"])
        c = Region(a["c"], a["m"], a["n"] * DType.F32.itemsize, a["c_pitch"])
        # pt.matmul_nt reads B as n rows of k elements (B transposed)
        b_rows, b_cols = (a["k"], a["n"]) if op == "pt.matmul" else (a["n"], a["k"])
        reads = (Region(a["a"], a["m"], a["k"] * size, a["a_pitch"]),
                 Region(a["b"], b_rows, b_cols * size, a["b_pitch"]))
        return ((*reads, c) if a["accumulate"] else reads), (c,)
    if op == "sfu.reduce":
        # One result per row, then zeros to the end of that row's first stick.
        dst = Region(a["dst"], a["rows"], STICK_BYTES, a["dst_pitch"])
    else:
        dst = Region(a["dst"], a["rows"], a["cols"] * _itemsize(a["dst_dtype"]), a["dst_pitch"])
    if op in ("sfu.unary", "sfu.scalar", "sfu.reduce", "sfu.mask"):
        return (Region(a["src"], a["rows"], a["cols"] * _itemsize(a["src_dtype"]),
                       a["src_pitch"]),), (dst,)
    src0 = Region(a["src0"], a["rows"], a["cols"] * _itemsize(a["src0_dtype"]), a["src0_pitch"])
    if op == "sfu.colwise":
        # One element per row (column 0), broadcast along the row.
        return (src0, Region(a["src1"], a["rows"], _itemsize(a["src1_dtype"]),
                             a["src1_pitch"])), (dst,)
    return (
        src0,
        Region(a["src1"], a["rows"], a["cols"] * _itemsize(a["src1_dtype"]), a["src1_pitch"]),
    ), (dst,)


def lx_reads(instr: Instr, core: int | None = None) -> tuple[Region, ...]:
    """The LX regions an instruction reads."""
    return lx_access(instr, core)[0]


def lx_writes(instr: Instr, core: int | None = None) -> tuple[Region, ...]:
    """The LX regions an instruction writes."""
    return lx_access(instr, core)[1]


def ddr_region(instr: Instr) -> Region | None:
    """The LPDDR region a DMA instruction reads or writes; None for compute instructions.
    For dma.gather and dma.scatter it is the whole table (`limit` rows): any of them may be
    read or written."""
    if instr.spec.engine is not Engine.DMA:
        return None
    a = instr.named_args()
    rows = a["limit"] if instr.op in INDIRECT_DMA_OPS else a["rows"]
    return Region(a["ddr"], rows, a["row_bytes"], a["ddr_pitch"])


GATHER_INDEX_BYTES = 4  # dma.gather and dma.scatter read their row indices as int32
INDIRECT_DMA_OPS = frozenset({"dma.gather", "dma.scatter"})


def gather_index_region(instr: Instr) -> Region:
    """The LX bytes of a dma.gather's or dma.scatter's index vector: `rows` contiguous int32."""
    return Region(instr.arg("idx"), 1, instr.arg("rows") * GATHER_INDEX_BYTES,
                  instr.arg("rows") * GATHER_INDEX_BYTES)


MATMUL_OPS = frozenset({"pt.matmul", "pt.matmul_nt"})


def matmul_flops(instr: Instr) -> int:
    """Useful FLOPs of a pt.matmul or pt.matmul_nt: 2*m*k*n, not counting padding to the PE
    array (0 for other instructions)."""
    if instr.op not in MATMUL_OPS:
        return 0
    return 2 * instr.arg("m") * instr.arg("k") * instr.arg("n")
