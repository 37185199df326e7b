"""`linalg` forms real KTIR kernels use that xDSL 0.74 cannot parse or build.

- `linalg.reduce` with the payload short form `linalg.reduce { arith.maxnumf } ins(..)
  outs(..) dimensions = [1]`, and with several inputs and inits (`ReduceOp`, a replacement).
- `linalg.generic ... -> (T1, T2)`: several results in parentheses (`GenericOp`, a subclass
  that only parses differently).
- `linalg.matmul` whose operands and accumulator differ in type (f16 x f16 -> f32): xDSL
  builds `mulf` on f16 and `addf(f16, f32)`; `MatmulOp` converts the operands first, as
  upstream does.
- `linalg.batch_matmul` and `linalg.div`, which xDSL lacks.

The `linalg` dialect spyrec registers (`std_ext.py`) holds these in place of xDSL's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar, cast

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    ArrayAttr,
    ContainerType,
    DenseArrayBase,
    IntegerType,
    ShapedType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.dialects.linalg.abstract_ops import ElementwiseOperation, NamedOperation
from xdsl.dialects.linalg.attrs import IteratorType, IteratorTypeAttr
from xdsl.dialects.linalg.ops import GenericOp as XdslGenericOp
from xdsl.dialects.linalg.ops import MatmulOp as XdslMatmulOp
from xdsl.dialects.linalg.ops import YieldOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import (
    IRDLOperation,
    SameVariadicOperandSize,
    irdl_op_definition,
    prop_def,
    region_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from spyrec.dialects.ktdp_spellings import UpgradesProperties


def _element(value_type: Attribute) -> Attribute:
    if isinstance(value_type, ShapedType):
        return cast(ContainerType[Attribute], value_type).get_element_type()
    return value_type


def _parse_operand_group(parser: Parser, keyword: str) -> Sequence[SSAValue]:
    """`keyword(%a, %b : T1, T2)`, or nothing if the keyword is absent."""
    start = parser.pos
    if parser.parse_optional_characters(keyword) is None:
        return []
    parser.parse_punctuation("(")
    names: list[UnresolvedOperand] = []
    types: list[Attribute] = []
    if parser.parse_optional_punctuation(")") is None:
        names = parser.parse_comma_separated_list(
            Parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation(")")
    return parser.resolve_operands(names, types, start)


def _print_operand_group(printer: Printer, keyword: str, values: Sequence[SSAValue]) -> None:
    printer.print_string(f" {keyword}(")
    printer.print_list(values, printer.print_ssa_value)
    printer.print_string(" : ")
    printer.print_list([value.type for value in values], printer.print_attribute)
    printer.print_string(")")


def _parse_arrow_types(parser: Parser) -> Sequence[Attribute]:
    """`-> T`, `-> (T1, T2)`, or nothing."""
    if parser.parse_optional_punctuation("->") is None:
        return []
    types = parser.parse_optional_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_type)
    return types if types is not None else [parser.parse_type()]


def convert_scalar(value: SSAValue, target: Attribute) -> SSAValue:
    """`value` converted to the scalar type `target` with the arith cast upstream would use."""
    source = value.type
    if source == target:
        return value
    if isinstance(source, AnyFloat) and isinstance(target, AnyFloat):
        wider = source.bitwidth < target.bitwidth
        op: Operation = (arith.ExtFOp if wider else arith.TruncFOp)(value, target)
    elif isinstance(source, IntegerType) and isinstance(target, AnyFloat):
        op = arith.SIToFPOp(value, target)
    elif isinstance(source, IntegerType) and isinstance(target, IntegerType):
        wider = source.width.data < target.width.data
        op = (arith.ExtSIOp if wider else arith.TruncIOp)(value, target)
    else:
        raise VerifyException(f"no arith conversion from {source} to {target}")
    return op.results[0]


def contraction_body(arg_types: Sequence[Attribute]) -> Region:
    """`acc + convert(a) * convert(b)` over (a, b, acc): the body of matmul-like ops."""
    acc_type = arg_types[-1]
    is_float = isinstance(acc_type, AnyFloat)
    mul = arith.MulfOp if is_float else arith.MuliOp
    add = arith.AddfOp if is_float else arith.AddiOp

    @Builder.implicit_region(arg_types)
    def body(args: tuple[BlockArgument, ...]) -> None:
        lhs = convert_scalar(args[0], acc_type)
        rhs = convert_scalar(args[1], acc_type)
        YieldOp(add(args[2], mul(lhs, rhs)))

    return body


class GenericOp(XdslGenericOp):
    """`linalg.generic`, also accepting several results in parentheses.

        %a, %b = linalg.generic {indexing_maps = [...], iterator_types = ["parallel"]}
                   ins(%x : tensor<8xf32>) outs(%y, %z : tensor<8xf32>, tensor<8xi64>) {
                 ^bb0(%in: f32, %o1: f32, %o2: i64):
                   ...
                 } -> (tensor<8xf32>, tensor<8xi64>)

    Only the parser differs from xDSL's class (whose printer already emits this form), so
    every `isinstance(op, GenericOp)` in xDSL and spyrec still holds.
    """

    @classmethod
    def parse(cls, parser: Parser) -> GenericOp:
        start = parser.pos
        attributes = parser.parse_optional_attr_dict()
        for required in ("indexing_maps", "iterator_types"):
            if required not in attributes:
                parser.raise_error(f"linalg.generic needs {required}", start, parser.pos)
        indexing_maps = cast(ArrayAttr[AffineMapAttr], attributes.pop("indexing_maps"))
        iterator_types: list[IteratorTypeAttr] = []
        for written in cast(ArrayAttr[Attribute], attributes.pop("iterator_types")):
            entry = (IteratorTypeAttr(IteratorType(written.data))
                     if isinstance(written, StringAttr) else written)
            if not isinstance(entry, IteratorTypeAttr):
                parser.raise_error(f"unknown iterator type {entry}", start, parser.pos)
            iterator_types.append(entry)
        doc = cast(StringAttr | None, attributes.pop("doc", None))
        library_call = cast(StringAttr | None, attributes.pop("library_call", None))
        inputs = _parse_operand_group(parser, "ins")
        outputs = _parse_operand_group(parser, "outs")
        if parser.parse_optional_keyword("attrs") is not None:
            parser.parse_punctuation("=")
            attributes |= parser.expect(parser.parse_optional_attr_dict, "expected attributes")
        body = parser.parse_region()
        result_types = _parse_arrow_types(parser)
        op = cls(
            inputs, outputs, body, indexing_maps, iterator_types, result_types, doc, library_call
        )
        op.attributes |= attributes
        return op


class MatmulOp(XdslMatmulOp):
    """`linalg.matmul` whose body converts mixed-precision operands to the accumulator type.

        %c = linalg.matmul ins(%a, %b : tensor<64x128xf16>, tensor<128x64xf16>)
                           outs(%acc : tensor<64x64xf32>) -> tensor<64x64xf32>

    builds `acc + extf(a) * extf(b)` in f32. Syntax and accessors are xDSL's.
    """

    @classmethod
    def get_hidden_region(cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]) -> Region:
        return contraction_body(cls.body_arg_types((*inputs, *outputs)))


@irdl_op_definition
class BatchMatmulOp(NamedOperation):
    """A batch of matrix products: `C[b, i, j] += A[b, i, k] * B[b, k, j]`.

        %c = linalg.batch_matmul ins(%a, %b : tensor<4x32x64xf16>, tensor<4x64x16xf16>)
                                 outs(%acc : tensor<4x32x16xf32>) -> tensor<4x32x16xf32>

    Mixed-precision operands are converted to the accumulator type, as for `linalg.matmul`.
    """

    name = "linalg.batch_matmul"

    PRINT_ATTRS_IN_FRONT: ClassVar[bool] = True

    indexing_maps = prop_def(
        ArrayAttr[AffineMapAttr],
        default_value=ArrayAttr(
            [
                AffineMapAttr(AffineMap.from_callable(lambda b, i, _, k: (b, i, k))),
                AffineMapAttr(AffineMap.from_callable(lambda b, _, j, k: (b, k, j))),
                AffineMapAttr(AffineMap.from_callable(lambda b, i, j, _: (b, i, j))),
            ]
        ),
    )

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        outputs: Sequence[SSAValue] = (),
        res: Sequence[Attribute] | None = None,
        attributes: dict[str, Attribute] | None = None,
    ):
        result_types = (
            [output.type for output in outputs if isinstance(output.type, TensorType)]
            if res is None
            else res
        )
        super().__init__(
            ins=inputs,
            outs=outputs,
            result_types=result_types,
            attributes=attributes,
            hidden_region=self.get_hidden_region(inputs, outputs),
        )

    @classmethod
    def get_hidden_region(cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]) -> Region:
        return contraction_body(cls.body_arg_types((*inputs, *outputs)))

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        return tuple(m.data for m in self.indexing_maps.data)

    def get_indexing_maps(self) -> ArrayAttr[AffineMapAttr]:
        return self.indexing_maps

    def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
        parallel = IteratorTypeAttr.parallel()
        return ArrayAttr([parallel, parallel, parallel, IteratorTypeAttr.reduction()])


@irdl_op_definition
class DivOp(ElementwiseOperation):
    """Elementwise quotient of two tensors (`divf`, or `divsi` for integers).

    %q = linalg.div ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%o : tensor<8xf32>)
           -> tensor<8xf32>
    """

    name = "linalg.div"

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        outputs: Sequence[SSAValue] = (),
        res: Sequence[Attribute] | None = None,
        attributes: dict[str, Attribute] | None = None,
    ):
        super().__init__(
            ins=inputs,
            outs=outputs,
            result_types=[output.type for output in outputs] if res is None else res,
            attributes=attributes,
            hidden_region=self.get_hidden_region(inputs, outputs),
        )

    @classmethod
    def get_hidden_region(cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]) -> Region:
        arg_types = cls.body_arg_types((*inputs, *outputs))
        div = arith.DivfOp if isinstance(arg_types[-1], AnyFloat) else arith.DivSIOp

        @Builder.implicit_region(arg_types)
        def body(args: tuple[BlockArgument, ...]) -> None:
            YieldOp(div(args[0], args[1]))

        return body


@irdl_op_definition
class ReduceOp(UpgradesProperties):
    """Reduce `inputs` along `dimensions` into `inits` with a combiner region.

        %m = linalg.reduce { arith.maxnumf } ins(%x : tensor<4x64xf32>)
               outs(%init : tensor<4xf32>) dimensions = [1]

        %s:2 = linalg.reduce ins(%v, %i : tensor<8x16xf32>, tensor<8x16xi64>)
                 outs(%v0, %i0 : tensor<8xf32>, tensor<8xi64>) dimensions = [1]
                 (%in: f32, %idx: i64, %acc: f32, %acc_idx: i64) { ... linalg.yield ... }

    The combiner takes the input elements, then the accumulators, and yields the new
    accumulators. With one input whose combiner is a single binary op applied as
    `op(acc, in)`, the op prints in the short form `{ op attrs }`, as upstream MLIR does.
    """

    name = "linalg.reduce"

    inputs = var_operand_def(ShapedType)
    inits = var_operand_def(ShapedType)
    res = var_result_def(TensorType)
    dimensions = prop_def(DenseArrayBase.constr(i64))
    combiner = region_def("single_block")

    # as upstream defines it: as many inputs as inits, no operandSegmentSizes
    irdl_options = (SameVariadicOperandSize(),)

    @classmethod
    def upgrade_properties(
        cls, properties: Mapping[str, Attribute], operands: Sequence[SSAValue]
    ) -> Mapping[str, Attribute]:
        """spyrec's older generic form carried `operandSegmentSizes`; upstream has none (as
        many inputs as inits), so a split into two equal halves is dropped."""
        sizes = properties.get("operandSegmentSizes")
        if not (isinstance(sizes, DenseArrayBase)
                and list(sizes.get_values()) == [len(operands) // 2] * 2):
            return properties
        return {k: v for k, v in properties.items() if k != "operandSegmentSizes"}

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        inits: Sequence[SSAValue],
        dimensions: Sequence[int],
        combiner: Region,
    ):
        super().__init__(
            operands=[inputs, inits],
            result_types=[[init.type for init in inits if isinstance(init.type, TensorType)]],
            properties={"dimensions": DenseArrayBase.from_list(i64, dimensions)},
            regions=[combiner],
        )

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        payload: tuple[str, dict[str, Attribute]] | None = None
        if parser.parse_optional_punctuation("{") is not None:
            # A bare identifier may contain dots, so `arith.addf` is one token.
            payload = (parser.parse_identifier("operation name"), parser.parse_optional_attr_dict())
            parser.parse_punctuation("}")
        inputs = _parse_operand_group(parser, "ins")
        inits = _parse_operand_group(parser, "outs")
        parser.parse_keyword("dimensions")
        parser.parse_punctuation("=")
        dimensions = parser.parse_comma_separated_list(
            Parser.Delimiter.SQUARE, parser.parse_integer
        )
        attributes = parser.parse_optional_attr_dict()
        if payload is None:
            arguments = parser.parse_comma_separated_list(
                Parser.Delimiter.PAREN, parser.parse_argument
            )
            combiner = parser.parse_region(arguments)
        else:
            combiner = _payload_region(parser, payload, inputs, inits)
        op = cls(inputs, inits, dimensions, combiner)
        op.attributes |= attributes
        return op

    def _short_form_payload(self) -> Operation | None:
        """The single `op(acc, in)` of the combiner, if the short form can print it."""
        block = self.combiner.block
        ops = list(block.ops)
        if len(self.inputs) != 1 or len(self.inits) != 1 or len(ops) != 2:
            return None
        payload, terminator = ops
        if (
            payload.regions
            or len(payload.results) != 1
            or list(payload.operands) != [block.args[1], block.args[0]]
            or not isinstance(terminator, YieldOp)
            or list(terminator.operands) != [payload.results[0]]
        ):
            return None
        return payload

    def print(self, printer: Printer) -> None:
        payload = self._short_form_payload()
        if payload is not None:
            printer.print_string(" { ")
            printer.print_string(payload.name)
            shown = dict(payload.attributes)
            definition = (
                payload.get_irdl_definition() if isinstance(payload, IRDLOperation) else None
            )
            for name, value in payload.properties.items():
                default = definition.properties[name].default_value if definition else None
                if value != default:
                    shown[name] = value
            if shown:
                printer.print_op_attributes(shown)
            printer.print_string(" }")
        _print_operand_group(printer, "ins", self.inputs)
        _print_operand_group(printer, "outs", self.inits)
        printer.print_string(" dimensions = [")
        printer.print_list(self.dimensions.get_values(), printer.print_int)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        if payload is None:
            printer.print_string(" (")
            printer.print_list(self.combiner.block.args, printer.print_block_argument)
            printer.print_string(") ")
            printer.print_region(self.combiner, print_entry_block_args=False)

    def verify_(self) -> None:
        if not self.inputs or len(self.inputs) != len(self.inits):
            raise VerifyException(
                f"linalg.reduce needs as many inits as inputs (at least one), got "
                f"{len(self.inputs)} inputs and {len(self.inits)} inits"
            )
        dimensions = self.dimensions.get_values()
        input_shape = cast(ShapedType, self.inputs[0].type).get_shape()
        if sorted(set(dimensions)) != list(dimensions) or any(
            not 0 <= d < len(input_shape) for d in dimensions
        ):
            raise VerifyException(
                f"dimensions {list(dimensions)} must be ascending, distinct dims of rank "
                f"{len(input_shape)}"
            )
        kept = tuple(size for d, size in enumerate(input_shape) if d not in dimensions)
        for position, (value, init) in enumerate(zip(self.inputs, self.inits, strict=True)):
            shape = cast(ShapedType, value.type).get_shape()
            if shape != input_shape:
                raise VerifyException(
                    f"input {position} has shape {shape} but input 0 has {input_shape}"
                )
            init_shape = cast(ShapedType, init.type).get_shape()
            if init_shape != kept:
                raise VerifyException(
                    f"init {position} has shape {init_shape}; reducing dims {list(dimensions)} "
                    f"of {input_shape} leaves {kept}"
                )
        element_types = [_element(v.type) for v in (*self.inputs, *self.inits)]
        arg_types = [arg.type for arg in self.combiner.block.args]
        if arg_types != element_types:
            raise VerifyException(
                f"combiner takes ({', '.join(map(str, arg_types))}) but must take the input "
                f"then the init element types ({', '.join(map(str, element_types))})"
            )
        terminator = self.combiner.block.last_op
        init_elements = element_types[len(self.inputs) :]
        if (
            not isinstance(terminator, YieldOp)
            or [v.type for v in terminator.operands] != init_elements
        ):
            raise VerifyException(
                "combiner must end with linalg.yield of the init element types "
                f"({', '.join(map(str, init_elements))})"
            )


def _payload_region(
    parser: Parser,
    payload: tuple[str, dict[str, Attribute]],
    inputs: Sequence[SSAValue],
    inits: Sequence[SSAValue],
) -> Region:
    """The combiner `yield op(acc, in)` that the short form `{ op attrs }` stands for."""
    name, attributes = payload
    if len(inputs) != 1 or len(inits) != 1:
        parser.raise_error("the short form { op } takes exactly one input and one init")
    op_type = parser.ctx.get_optional_op(name)
    if op_type is None:
        parser.raise_error(f"unknown payload operation {name}")
    element_in, element_acc = _element(inputs[0].type), _element(inits[0].type)
    block = Block(arg_types=[element_in, element_acc])
    properties: dict[str, Attribute] = {}
    if issubclass(op_type, IRDLOperation):
        known = op_type.get_irdl_definition().properties
        properties = {k: v for k, v in attributes.items() if k in known}
        attributes = {k: v for k, v in attributes.items() if k not in known}
        op = op_type.build(
            operands=[block.args[1], block.args[0]],
            result_types=[element_acc],
            properties=properties,
            attributes=attributes,
        )
    else:
        op = op_type.create(
            operands=[block.args[1], block.args[0]],
            result_types=[element_acc],
            attributes=attributes,
        )
    block.add_op(op)
    block.add_op(YieldOp(op.results[0]))
    return Region(block)


LINALG_REPLACEMENTS: tuple[type[Operation], ...] = (GenericOp, MatmulOp, ReduceOp)
LINALG_ADDITIONS: tuple[type[Operation], ...] = (BatchMatmulOp, DivOp)
