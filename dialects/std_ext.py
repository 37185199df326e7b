"""Standard dialects as spyrec registers them: xDSL's, with the forms KTIR kernels need.

xDSL 0.74 cannot parse several spellings upstream MLIR accepts and KTIR kernels use (bare
`scf.for ... -> T`, the `linalg.reduce { op }` short form, multi-result `linalg.generic`,
tensor `arith.select`/`cmpf`/casts) and lacks some named ops (`linalg.batch_matmul`). The
replacement op classes live in `std_ext_arith.py` and `std_ext_linalg.py`; `scf.for` is here.
`ARITH`, `LINALG` and `SCF` are xDSL's dialects with those classes swapped in by op name;
spyrec's registry maps the dialect names to them, and the opt tool and the driver let that
registry override xDSL's own. Nothing in site-packages is touched.

Classes that only parse differently subclass xDSL's (so `isinstance(op, scf.ForOp)` still
holds); the ones whose operands or types change are new definitions under the same name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.dialects.linalg import Linalg
from xdsl.dialects.utils import parse_assignment
from xdsl.ir import Attribute, Dialect, Operation
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.traits import SingleBlockImplicitTerminator, ensure_terminator

from spyrec.dialects.std_ext_arith import ARITH_REPLACEMENTS
from spyrec.dialects.std_ext_linalg import LINALG_ADDITIONS, LINALG_REPLACEMENTS


class ForOp(scf.ForOp):
    """`scf.for`, also accepting one loop-carried type without parentheses.

        %r = scf.for %i = %lb to %ub step %s iter_args(%acc = %init) -> tensor<1x64xf16> {

    Upstream MLIR reads the result types with `parseArrowTypeList`, which takes both `-> T`
    and `-> (T, ...)`; xDSL wants the parentheses. Printing is xDSL's (parenthesised).
    """

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        induction = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lower = parser.parse_unresolved_operand()
        parser.parse_keyword("to")
        upper = parser.parse_unresolved_operand()
        parser.parse_keyword("step")
        step = parser.parse_unresolved_operand()
        start = parser.pos
        carried: list[Parser.UnresolvedArgument] = []
        initial: list[UnresolvedOperand] = []
        carried_types: Sequence[Attribute] = []
        if parser.parse_optional_keyword("iter_args") is not None:
            for argument, value in parser.parse_comma_separated_list(
                Parser.Delimiter.PAREN, lambda: parse_assignment(parser)
            ):
                carried.append(argument)
                initial.append(value)
            parser.parse_punctuation("->")
            types = parser.parse_optional_comma_separated_list(
                Parser.Delimiter.PAREN, parser.parse_type
            )
            carried_types = types if types is not None else [parser.parse_type()]
        initial_values = parser.resolve_operands(initial, carried_types, start)
        induction_type = (
            parser.parse_type() if parser.parse_optional_punctuation(":") else IndexType()
        )
        first, last, stride = (parser.resolve_operand(value, induction_type)
                               for value in (lower, upper, step))
        arguments = [
            induction.resolve(induction_type),
            *(arg.resolve(t) for arg, t in zip(carried, carried_types, strict=True)),
        ]
        body = parser.parse_region(arguments)
        attributes = parser.parse_optional_attr_dict()
        op = cls(first, last, stride, initial_values, body)
        op.attributes |= attributes
        if not carried:
            for trait in op.get_traits_of_type(SingleBlockImplicitTerminator):
                ensure_terminator(op, trait)
        return op


def _patched(dialect: Dialect, replacements: Iterable[type[Operation]], additions=()) -> Dialect:
    """`dialect` with each op replaced by the class of the same name, plus `additions`."""
    by_name = {op.name: op for op in replacements}
    operations = [by_name.pop(op.name, op) for op in dialect.operations]
    return Dialect(
        dialect.name,
        [*operations, *by_name.values(), *additions],
        list(dialect.attributes),
    )


ARITH = _patched(arith.Arith, ARITH_REPLACEMENTS)
LINALG = _patched(Linalg, LINALG_REPLACEMENTS, LINALG_ADDITIONS)
SCF = _patched(scf.Scf, [ForOp])
