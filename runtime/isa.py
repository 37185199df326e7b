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


class Engine(enum.Enum):
    DMA = "dma"
    PT = "pt"
    SFU = "sfu"


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


TRANSCENDENTAL = frozenset(
    {UnaryFn.GELU, UnaryFn.GELU_TANH, UnaryFn.EXP, UnaryFn.SIGMOID, UnaryFn.SILU, UnaryFn.TANH,
     UnaryFn.SQRT, UnaryFn.RSQRT, UnaryFn.RECIPROCAL}
)


class BinaryFn(enum.IntEnum):
    ADD = 0
    SUB = 1
    MUL = 2
    DIV = 3
    MAX = 4
    MIN = 5


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
        parts = [f"{k}={v}" for k, v in self.named_args().items()]
        text = f"{self.op} u{self.unit} " + " ".join(parts)
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


def encode_program(program: Sequence[Instr]) -> bytes:
    """Encode a per-core program to bytes."""
    out = bytearray()
    for index, instr in enumerate(program):
        spec = instr.spec
        if any(d >= index or d < 0 for d in instr.deps):
            raise EncodingError(f"instruction {index} ({instr.op}) depends on a later instruction")
        out += _HEADER.pack(spec.code, instr.unit, len(instr.deps))
        out += struct.pack(f"<{len(spec.fields)}q", *instr.args)
        out += struct.pack(f"<{len(instr.deps)}I", *instr.deps)
    return bytes(out)


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


def lx_access(instr: Instr) -> tuple[tuple[Region, ...], tuple[Region, ...]]:
    """The LX regions an instruction reads and writes (ValueError on an invalid dtype code)."""
    a = instr.named_args()
    op = instr.op
    if op == "dma.load":
        return (), (Region(a["lx"], a["rows"], a["row_bytes"], a["lx_pitch"]),)
    if op == "dma.store":
        return (Region(a["lx"], a["rows"], a["row_bytes"], a["lx_pitch"]),), ()
    if op in ("pt.matmul", "pt.matmul_nt"):
        size = _itemsize(a["in_dtype"])
        c = Region(a["c"], a["m"], a["n"] * DType.F32.itemsize, a["c_pitch"])
        # pt.matmul_nt reads B as n rows of k elements (B transposed)
        b_rows, b_cols = (a["k"], a["n"]) if op == "pt.matmul" else (a["n"], a["k"])
        reads = (Region(a["a"], a["m"], a["k"] * size, a["a_pitch"]),
                 Region(a["b"], b_rows, b_cols * size, a["b_pitch"]))
        return (reads + (c,) if a["accumulate"] else reads), (c,)
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


def lx_reads(instr: Instr) -> tuple[Region, ...]:
    """The LX regions an instruction reads."""
    return lx_access(instr)[0]


def lx_writes(instr: Instr) -> tuple[Region, ...]:
    """The LX regions an instruction writes."""
    return lx_access(instr)[1]


def ddr_region(instr: Instr) -> Region | None:
    """The LPDDR region a DMA instruction reads or writes; None for compute instructions."""
    if instr.spec.engine is not Engine.DMA:
        return None
    a = instr.named_args()
    return Region(a["ddr"], a["rows"], a["row_bytes"], a["ddr_pitch"])


MATMUL_OPS = frozenset({"pt.matmul", "pt.matmul_nt"})


def matmul_flops(instr: Instr) -> int:
    """Useful FLOPs of a pt.matmul or pt.matmul_nt: 2*m*k*n, not counting padding to the PE
    array (0 for other instructions)."""
    if instr.op not in MATMUL_OPS:
        return 0
    return 2 * instr.arg("m") * instr.arg("k") * instr.arg("n")
