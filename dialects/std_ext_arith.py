"""`arith` ops on tensors, where xDSL 0.74 accepts only scalars.

KTIR applies elementwise arith to whole tensors. xDSL's `arith.cmpi`/`cmpf` always give an
`i1` (even for tensor operands), `arith.select` wants a scalar `i1` condition, and the
int<->float and index casts reject tensors. The classes here replace those ops in the `arith`
dialect spyrec registers (see `std_ext.py`); their syntax is upstream MLIR's:

    %m = arith.cmpf oge, %a, %b : tensor<8xf32>               // -> tensor<8xi1>
    %s = arith.select %m, %a, %b : tensor<8xi1>, tensor<8xf32>
    %f = arith.sitofp %i : tensor<8xi32> to tensor<8xf32>
"""

from __future__ import annotations

from types import UnionType
from typing import ClassVar, cast

from xdsl.dialects.arith import (
    CMPF_COMPARISON_OPERATIONS,
    CMPI_COMPARISON_OPERATIONS,
    FastMathFlagsAttr,
)
from xdsl.dialects.builtin import (
    AnyFloat,
    ContainerType,
    IndexType,
    IntegerAttr,
    IntegerType,
    ShapedType,
    TensorType,
    VectorType,
    i1,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException


def element_type(value_type: Attribute) -> Attribute:
    """The element type of a tensor or vector, or the type itself for a scalar."""
    if isinstance(value_type, TensorType | VectorType):
        return cast(ContainerType[Attribute], value_type).get_element_type()
    return value_type


def _shape(value_type: Attribute) -> tuple[int, ...] | None:
    return value_type.get_shape() if isinstance(value_type, ShapedType) else None


def like_shape(value_type: Attribute, element: Attribute) -> Attribute:
    """`element`, or a tensor/vector of it shaped like `value_type`."""
    if isinstance(value_type, TensorType):
        return TensorType(element, value_type.get_shape())
    if isinstance(value_type, VectorType):
        return VectorType(element, value_type.get_shape())
    return element


class _CompareOp(IRDLOperation):
    """Shared parts of `cmpi` and `cmpf`: the predicate and a shape-following i1 result."""

    PREDICATES: ClassVar[list[str]]
    OPERAND_KIND: ClassVar[tuple[type[Attribute] | UnionType, ...]]

    predicate = prop_def(IntegerAttr)
    lhs = operand_def()
    rhs = operand_def()
    result = result_def()

    traits = traits_def(Pure())

    @classmethod
    def _predicate_number(cls, parser: Parser) -> int:
        start = parser.pos
        mnemonic = parser.parse_identifier("comparison predicate")
        if mnemonic not in cls.PREDICATES:
            parser.raise_error(
                f"unknown predicate '{mnemonic}', expected one of {', '.join(cls.PREDICATES)}",
                start,
                parser.pos,
            )
        return cls.PREDICATES.index(mnemonic)

    def verify_(self) -> None:
        if self.lhs.type != self.rhs.type:
            raise VerifyException(
                f"{self.name} operands must have the same type, got {self.lhs.type} and "
                f"{self.rhs.type}"
            )
        if not isinstance(element_type(self.lhs.type), self.OPERAND_KIND):
            raise VerifyException(f"{self.name} cannot compare {self.lhs.type}")
        expected = like_shape(self.lhs.type, i1)
        if self.result.type != expected:
            raise VerifyException(
                f"{self.name} of {self.lhs.type} yields {expected}, got {self.result.type}"
            )
        if not 0 <= self.predicate.value.data < len(self.PREDICATES):
            raise VerifyException(f"{self.name} predicate {self.predicate.value.data} is invalid")

    def _print_head(self, printer: Printer) -> None:
        printer.print_string(f" {self.PREDICATES[self.predicate.value.data]}, ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)


@irdl_op_definition
class CmpiOp(_CompareOp):
    """Elementwise integer comparison; the result is i1 shaped like the operands.

    %r = arith.cmpi slt, %a, %b : tensor<8xi32>
    """

    name = "arith.cmpi"

    PREDICATES: ClassVar[list[str]] = CMPI_COMPARISON_OPERATIONS
    OPERAND_KIND: ClassVar[tuple[type[Attribute] | UnionType, ...]] = (IntegerType, IndexType)

    def __init__(self, lhs: SSAValue, rhs: SSAValue, predicate: int | str):
        if isinstance(predicate, str):
            predicate = self.PREDICATES.index(predicate)
        super().__init__(
            operands=[lhs, rhs],
            result_types=[like_shape(lhs.type, i1)],
            properties={"predicate": IntegerAttr(predicate, 64)},
        )

    @classmethod
    def parse(cls, parser: Parser) -> CmpiOp:
        predicate = cls._predicate_number(parser)
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        operand_type = parser.parse_type()
        lhs_value, rhs_value = parser.resolve_operands(
            [lhs, rhs], [operand_type, operand_type], parser.pos
        )
        op = cls(lhs_value, rhs_value, predicate)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        self._print_head(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)


@irdl_op_definition
class CmpfOp(_CompareOp):
    """Elementwise float comparison; the result is i1 shaped like the operands.

    %r = arith.cmpf ogt, %a, %b : tensor<4x64xf16>
    """

    name = "arith.cmpf"

    PREDICATES: ClassVar[list[str]] = CMPF_COMPARISON_OPERATIONS
    OPERAND_KIND: ClassVar[tuple[type[Attribute] | UnionType, ...]] = (AnyFloat,)

    fastmath = prop_def(FastMathFlagsAttr, default_value=FastMathFlagsAttr("none"))

    def __init__(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        predicate: int | str,
        fastmath: FastMathFlagsAttr | None = None,
    ):
        if isinstance(predicate, str):
            predicate = self.PREDICATES.index(predicate)
        super().__init__(
            operands=[lhs, rhs],
            result_types=[like_shape(lhs.type, i1)],
            properties={
                "predicate": IntegerAttr(predicate, 64),
                "fastmath": fastmath or FastMathFlagsAttr("none"),
            },
        )

    @classmethod
    def parse(cls, parser: Parser) -> CmpfOp:
        predicate = cls._predicate_number(parser)
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        fastmath = None
        if parser.parse_optional_keyword("fastmath") is not None:
            fastmath = FastMathFlagsAttr(FastMathFlagsAttr.parse_parameter(parser))
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        operand_type = parser.parse_type()
        lhs_value, rhs_value = parser.resolve_operands(
            [lhs, rhs], [operand_type, operand_type], parser.pos
        )
        op = cls(lhs_value, rhs_value, predicate, fastmath)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        self._print_head(printer)
        if self.fastmath != FastMathFlagsAttr("none"):
            printer.print_string(" fastmath")
            self.fastmath.print_parameter(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)


@irdl_op_definition
class SelectOp(IRDLOperation):
    """Pick `lhs` where the condition holds, `rhs` elsewhere; elementwise for shaped values.

        %r = arith.select %c, %a, %b : f32
        %r = arith.select %mask, %a, %b : tensor<8xi1>, tensor<8xf32>

    The condition is a scalar i1 (picks whole values) or i1 shaped like the operands. The
    second type is printed only when the condition is not a scalar.
    """

    name = "arith.select"

    cond = operand_def()
    lhs = operand_def()
    rhs = operand_def()
    result = result_def()

    traits = traits_def(Pure())

    def __init__(self, cond: SSAValue, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[cond, lhs, rhs], result_types=[lhs.type])

    @classmethod
    def parse(cls, parser: Parser) -> SelectOp:
        names = [parser.parse_unresolved_operand()]
        for _ in range(2):
            parser.parse_punctuation(",")
            names.append(parser.parse_unresolved_operand())
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        if len(types) > 2:
            parser.raise_error("arith.select takes one type, or the condition's and the value's")
        cond_type, value_type = (i1, types[0]) if len(types) == 1 else (types[0], types[1])
        cond, lhs, rhs = parser.resolve_operands(
            names, [cond_type, value_type, value_type], parser.pos
        )
        op = cls(cond, lhs, rhs)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.cond, self.lhs, self.rhs], printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        if self.cond.type != i1:
            printer.print_attribute(self.cond.type)
            printer.print_string(", ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        if self.lhs.type != self.rhs.type or self.result.type != self.lhs.type:
            raise VerifyException(
                f"arith.select operands and result must share one type, got {self.lhs.type}, "
                f"{self.rhs.type} -> {self.result.type}"
            )
        if self.cond.type == i1:
            return
        if self.cond.type != like_shape(self.lhs.type, i1):
            raise VerifyException(
                f"arith.select condition {self.cond.type} must be i1 or i1 shaped like "
                f"{self.lhs.type}"
            )


class _CastOp(IRDLOperation):
    """An elementwise conversion between element kinds; shapes must agree."""

    FROM: ClassVar[tuple[type[Attribute] | UnionType, ...]]
    TO: ClassVar[tuple[type[Attribute] | UnionType, ...]]

    input = operand_def()
    result = result_def()

    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    traits = traits_def(Pure())

    def __init__(self, value: SSAValue, result_type: Attribute):
        super().__init__(operands=[value], result_types=[result_type])

    def verify_(self) -> None:
        source, target = self.input.type, self.result.type
        same_container = isinstance(source, ShapedType) == isinstance(target, ShapedType) and (
            not isinstance(source, ShapedType) or type(source) is type(target)
        )
        if not same_container or _shape(source) != _shape(target):
            raise VerifyException(f"{self.name} cannot change the shape: {source} to {target}")
        if not isinstance(element_type(source), self.FROM):
            raise VerifyException(f"{self.name} cannot convert from {source}")
        if not isinstance(element_type(target), self.TO):
            raise VerifyException(f"{self.name} cannot convert to {target}")


@irdl_op_definition
class SIToFPOp(_CastOp):
    """Signed integer to float, elementwise: `arith.sitofp %i : tensor<8xi32> to tensor<8xf32>`."""

    name = "arith.sitofp"
    FROM: ClassVar[tuple[type[Attribute] | UnionType, ...]] = (IntegerType,)
    TO: ClassVar[tuple[type[Attribute] | UnionType, ...]] = (AnyFloat,)


@irdl_op_definition
class UIToFPOp(_CastOp):
    """Unsigned integer to float, elementwise."""

    name = "arith.uitofp"
    FROM: ClassVar[tuple[type[Attribute] | UnionType, ...]] = (IntegerType,)
    TO: ClassVar[tuple[type[Attribute] | UnionType, ...]] = (AnyFloat,)


@irdl_op_definition
class FPToSIOp(_CastOp):
    """Float to signed integer (rounding toward zero), elementwise."""

    name = "arith.fptosi"
    FROM: ClassVar[tuple[type[Attribute] | UnionType, ...]] = (AnyFloat,)
    TO: ClassVar[tuple[type[Attribute] | UnionType, ...]] = (IntegerType,)


@irdl_op_definition
class FPToUIOp(_CastOp):
    """Float to unsigned integer (rounding toward zero), elementwise."""

    name = "arith.fptoui"
    FROM: ClassVar[tuple[type[Attribute] | UnionType, ...]] = (AnyFloat,)
    TO: ClassVar[tuple[type[Attribute] | UnionType, ...]] = (IntegerType,)


@irdl_op_definition
class IndexCastOp(_CastOp):
    """Integer <-> index with sign extension, elementwise."""

    name = "arith.index_cast"
    FROM: ClassVar[tuple[type[Attribute] | UnionType, ...]] = (IntegerType, IndexType)
    TO: ClassVar[tuple[type[Attribute] | UnionType, ...]] = (IntegerType, IndexType)


@irdl_op_definition
class IndexCastUIOp(_CastOp):
    """Integer <-> index with zero extension, elementwise."""

    name = "arith.index_castui"
    FROM: ClassVar[tuple[type[Attribute] | UnionType, ...]] = (IntegerType, IndexType)
    TO: ClassVar[tuple[type[Attribute] | UnionType, ...]] = (IntegerType, IndexType)


ARITH_REPLACEMENTS: tuple[type[IRDLOperation], ...] = (
    CmpiOp,
    CmpfOp,
    SelectOp,
    SIToFPOp,
    UIToFPOp,
    FPToSIOp,
    FPToUIOp,
    IndexCastOp,
    IndexCastUIOp,
)
