"""The `spyrecode` dialect: scheduled per-core programs, the last IR before bytes.

One `spyrecode.program` per kernel holds one `spyrecode.core` per core, and each core a
list of instructions (counted loops are `loop_begin` ... `loop_end` ops inside that list,
as in the binary), one op per SpyreCode opcode of `spyrec.target.isa`
(generated from that table, so the dialect and the binary encoding cannot disagree). Every
instruction carries its fields, the corelet `unit` it runs on and `deps`, the indices of
earlier instructions of the same core it waits for.

    spyrecode.program "k0" attributes {num_cores = 2 : i64} {
      spyrecode.core attributes {id = 0 : i64} {
        spyrecode.dma_load {ddr = 0, lx = 0, rows = 64, row_bytes = 128, ddr_pitch = 256,
                            lx_pitch = 128, unit = 0, deps = array<i64>}
        ...
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import cast

import numpy as np
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    StringAttr,
    i8,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

from spyrec.target.isa import (
    HEADER_UNIT_MASK,
    LOOP_OPS,
    SPECS_BY_NAME,
    EncodingError,
    Instr,
    OpSpec,
    ProgramError,
    ProgramMemo,
    check_program,
    decode_program,
    encode_program,
    loop_spans,
)


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """The per-core programs of one kernel launch."""

    name = "spyrecode.program"
    kernel = prop_def(StringAttr)
    num_cores = prop_def(IntegerAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$kernel attr-dict-with-keyword $body"

    def __init__(self, kernel: str, num_cores: int, body: Region):
        super().__init__(
            properties={"kernel": StringAttr(kernel), "num_cores": IntegerAttr(num_cores, i64)},
            regions=[body],
        )

    def cores(self) -> list[CoreOp]:
        return [op for op in self.body.block.ops if isinstance(op, CoreOp)]


@irdl_op_definition
class CoreOp(IRDLOperation):
    """The instruction stream of one core: one op per instruction, or, packed, the
    instructions in their binary encoding (`isa.encode_program`) as an `array<i8>` in
    `code` with an empty body. The packed form is what the compile driver schedules into:
    a decoder layer has tens of thousands of instructions, and an op per instruction costs
    more to build and verify than everything else in the compile.

        spyrecode.core attributes {id = 0 : i64, code = array<i8: 1, 0, 0, 0, ...>} {
        }
    """

    name = "spyrecode.core"
    id = prop_def(IntegerAttr)
    code = opt_prop_def(DenseArrayBase)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict-with-keyword $body"

    def __init__(self, core_id: int, body: Region, code: bytes | None = None):
        props: dict[str, Attribute] = {"id": IntegerAttr(core_id, i64)}
        if code is not None:
            props["code"] = DenseArrayBase(i8, BytesAttr(code))
        super().__init__(properties=props, regions=[body])

    def encoded(self) -> bytes | None:
        """The packed instructions' bytes (None for the op-per-instruction form)."""
        return None if self.code is None else self.code.data.data

    def instrs(self) -> list[Instr]:
        code = self.encoded()
        if code is not None:
            return decode_program(code)
        return [op.to_instr() for op in self.body.block.ops if isinstance(op, InstrOp)]

    def verify_(self) -> None:
        core = self.id.value.data
        ops = list(self.body.block.ops)
        if self.code is not None:
            self._verify_packed(core, ops)
            return
        for index, op in enumerate(ops):
            if not isinstance(op, InstrOp):
                raise VerifyException(f"spyrecode.core {core}: op {index} "
                                      f"({op.name}) is not a SpyreCode instruction")
        instrs = [op.to_instr() for op in ops if isinstance(op, InstrOp)]
        try:
            spans = loop_spans(instrs)
        except ProgramError as error:
            raise VerifyException(f"spyrecode.core {core}: instruction {error.pc} "
                                  f"({ops[error.pc].name}): {error.reason}") from None
        for index, op in enumerate(ops):
            assert isinstance(op, InstrOp)
            # in a loop body, a later instruction of the body is the previous iteration's
            deps = cast("DenseArrayBase[IntegerType]", op.deps).get_values()
            bad = [d for d in deps
                   if not (0 <= d < index or (spans[index] is not None and d < len(ops)
                                              and spans[d] == spans[index]))]
            if bad:
                raise VerifyException(
                    f"spyrecode.core {core}: instruction {index} "
                    f"({op.name}) waits for {bad}, which are not earlier instructions")
        try:
            check_program(instrs)
        except ProgramError as error:
            raise VerifyException(f"spyrecode.core {core}: instruction {error.pc} "
                                  f"({ops[error.pc].name}): {error.reason}") from None

    def _verify_packed(self, core: int, ops: list[Operation]) -> None:
        assert self.code is not None
        if ops:
            raise VerifyException(f"spyrecode.core {core}: a packed core (`code`) has an "
                                  f"empty body, not {len(ops)} ops")
        if self.code.elt_type != i8:
            raise VerifyException(f"spyrecode.core {core}: `code` is an array<i8>, not of "
                                  f"{self.code.elt_type}")
        try:
            check_encoded(self.code.data.data)
        except ProgramError as error:
            raise VerifyException(f"spyrecode.core {core}: instruction {error.pc}: "
                                  f"{error.reason}") from None
        except EncodingError as error:
            raise VerifyException(f"spyrecode.core {core}: `code` does not decode: "
                                  f"{error}") from None


_HEADER = struct.Struct("<BBH")  # opcode, unit, dependence count (isa.encode_program)
_SPEC_BY_CODE = {spec.code: spec for spec in SPECS_BY_NAME.values()}
_LOOP_CODES = frozenset(SPECS_BY_NAME[name].code for name in LOOP_OPS)


# loop-free programs that passed the check, by their header and dependence words
_CHECKED = ProgramMemo()


def check_encoded(code: bytes) -> None:
    """`check_program(decode_program(code))` for a loop-free program without decoding its
    fields: the headers give each instruction's extent, and the dependences are checked
    with NumPy (a packed decoder layer has tens of thousands of instructions). Programs
    with loops take the full check.

    The check reads only the header words (opcode and dependence count; not the unit) and
    the dependence words, so a program of the length of one that passed, with the same
    words at those positions, passes too: one NumPy comparison for each instance of a
    schedule template (they differ from each other in addresses only)."""
    if _CHECKED.lookup(code) is None:
        _walk_encoded(code)


def _walk_encoded(code: bytes) -> None:
    unpack = _HEADER.unpack_from
    size = len(code)
    starts: list[int] = []
    counts: list[int] = []
    pcs: list[int] = []
    headers: list[int] = []
    pos = pc = 0
    while pos < size:
        if pos + 4 > size:
            raise EncodingError(f"truncated instruction header at byte {pos}")
        opcode, _, ndeps = unpack(code, pos)
        spec = _SPEC_BY_CODE.get(opcode)
        if spec is None:
            raise EncodingError(f"unknown opcode {opcode} at byte {pos}")
        if opcode in _LOOP_CODES:
            check_program(decode_program(code))
            return
        start = pos + 4 + 8 * len(spec.fields)
        pos = start + 4 * ndeps
        if pos > size:
            raise EncodingError(f"truncated {spec.name} at byte {start - 8 * len(spec.fields) - 4}")
        if ndeps:
            starts.append(start)
            counts.append(ndeps)
            pcs.append(pc)
        headers.append(start - 4 - 8 * len(spec.fields))
        pc += 1
    if not starts:
        _remember(code, headers, [])
        return
    count = np.array(counts)
    first = np.repeat(np.array(starts) - 4 * (np.cumsum(count) - count), count)
    at = first + 4 * np.arange(int(count.sum()))  # byte offset of every dependence
    raw = np.frombuffer(code, dtype=np.uint8).astype(np.int64)
    deps = raw[at] | raw[at + 1] << 8 | raw[at + 2] << 16 | raw[at + 3] << 24
    owner = np.repeat(np.array(pcs), count)
    bad = np.flatnonzero(deps >= owner)
    if bad.size:
        i = int(bad[0])
        raise ProgramError(int(owner[i]), f"depends on a later instruction (pc {int(deps[i])})")
    _remember(code, headers, at)


def _remember(code: bytes, headers: list[int], deps: np.ndarray | list[int]) -> None:
    """Record a program that passed `_walk_encoded` by its checked words."""
    index = np.concatenate([np.array(headers, dtype=np.int64),
                            np.asarray(deps, dtype=np.int64)]) // 4
    mask = np.full(index.size, 0xFFFFFFFF, dtype=np.uint32)
    mask[:len(headers)] = HEADER_UNIT_MASK
    _CHECKED.remember(code, index, mask, True)


class InstrOp(IRDLOperation):
    """Base of the instruction ops; subclasses are generated from the ISA table."""

    unit = prop_def(IntegerAttr)
    deps = prop_def(DenseArrayBase)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    @property
    def spec(self) -> OpSpec:
        return SPEC_OF_OP[self.name]

    @classmethod
    def from_instr(cls, instr: Instr) -> InstrOp:
        op_cls = INSTR_OPS[instr.op]
        props: dict[str, Attribute] = {
            name: IntegerAttr(value, i64) for name, value in instr.named_args().items()}
        props["unit"] = IntegerAttr(instr.unit, i64)
        props["deps"] = DenseArrayBase.from_list(i64, list(instr.deps))
        return op_cls.create(properties=props)

    def to_instr(self) -> Instr:
        fields = {f: self.properties[f].value.data for f in self.spec.fields}  # type: ignore[attr-defined]
        return Instr.make(self.spec.name, unit=self.unit.value.data,
                          deps=self.deps.get_values(), **fields)  # type: ignore[arg-type]


def _instr_op(spec: OpSpec) -> type[InstrOp]:
    fields = {f: prop_def(IntegerAttr) for f in spec.fields}
    name = "spyrecode." + spec.name.replace(".", "_")
    cls_name = "".join(part.title() for part in spec.name.replace(".", "_").split("_")) + "Op"
    cls = type(cls_name, (InstrOp,), {"name": name, "__doc__": spec.doc,
                                      **fields})
    return irdl_op_definition(cls)


INSTR_OPS: dict[str, type[InstrOp]] = {name: _instr_op(spec)
                                       for name, spec in SPECS_BY_NAME.items()}
SPEC_OF_OP: dict[str, OpSpec] = {cls.name: SPECS_BY_NAME[isa] for isa, cls in INSTR_OPS.items()}


def program_from_instrs(name: str, programs: dict[int, Sequence[Instr]], num_cores: int,
                        packed: bool = False) -> ProgramOp:
    """Build a spyrecode.program from per-core instruction lists (packed: as encoded cores)."""
    if packed:
        return program_from_encoded(name, {c: encode_program(p) for c, p in programs.items()},
                                    num_cores)
    cores = []
    for core_id in sorted(programs):
        block = Block([InstrOp.from_instr(i) for i in programs[core_id]])
        cores.append(CoreOp(core_id, Region(block)))
    return ProgramOp(name, num_cores, Region(Block(cores)))


def program_from_encoded(name: str, programs: dict[int, bytes], num_cores: int) -> ProgramOp:
    """Build a spyrecode.program of packed cores from per-core encoded programs."""
    cores = [CoreOp(core_id, Region(Block()), programs[core_id]) for core_id in sorted(programs)]
    return ProgramOp(name, num_cores, Region(Block(cores)))


SpyreCode = Dialect("spyrecode", [ProgramOp, CoreOp, *INSTR_OPS.values()], [])
