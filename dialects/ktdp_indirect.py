"""`ktdp.construct_indirect_access_tile`: access tiles whose subscripts read index tensors.

A gather or scatter through an index table (paged KV caches, embedding lookups) cannot be a
box plus a base point. The indirect tile enumerates *intermediate variables* over a set, and
each base dimension is either a direct affine function of them or the value loaded from an
index view at an affine subscript. Registered by the `KTDP` dialect in `ktdp.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, cast

from xdsl.builder import ImplicitBuilder
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AffineSetAttr,
    ArrayAttr,
    BoolAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ShapedType,
    TensorType,
)
from xdsl.ir import Block, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap, AffineSet
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, MemoryReadEffect, SingleBlockImplicitTerminator
from xdsl.utils.exceptions import VerifyException

from spyrec.dialects.ktdp_affine import (
    parse_ssa_affine_expr,
    print_ssa_affine_expr,
    print_symbols_and_attrs,
    verify_tile_extents,
)
from spyrec.dialects.ktdp_types import AccessTileType, parse_ktdp_type


@irdl_op_definition
class RegionTerminatorOp(IRDLOperation):
    """Ends the hidden block of `construct_indirect_access_tile`; never written by hand.

    "ktdp.region_terminator"() : () -> ()
    """

    name = "ktdp.region_terminator"

    assembly_format = "attr-dict"

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ConstructIndirectAccessTileOp)))

    def __init__(self) -> None:
        super().__init__()


@irdl_op_definition
class ConstructIndirectAccessTileOp(IRDLOperation):
    """An access tile whose subscripts may be values read from index views.

        %t = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k)
               %X[ind(%IDX[%m, %k floordiv 64]), (%k mod 64)]
               {variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0,
                                                             d1 >= 0, -d1 + 127 >= 0)>,
                variables_space_order = affine_map<(d0, d1) -> (d0, d1)>}
             : memref<64x64xf16>, memref<4x2xi32> -> !ktdp.access_tile<4x128xindex>

    For each point v of `variables_space_set`, in `variables_space_order`, a `(expr)` dim takes
    expr(captured, v) and an `ind(%view[exprs])` dim takes `%view[exprs(captured, v)]`. The
    intermediate variables are the index arguments of a hidden block; outer SSA values used in
    subscripts are the `captured_variables` operands (first-use order). Each subscript map has
    dims (captured..., intermediate...); an indirect map has one result per index-view dim.
    The type list is the base's type, then one type per `ind` view.
    """

    name = "ktdp.construct_indirect_access_tile"

    base = operand_def(MemRefType | TensorType)
    indirect_memrefs = var_operand_def(MemRefType)
    captured_variables = var_operand_def(IndexType)
    symbol_operands = var_operand_def(IndexType)
    per_dim_subscript_kinds = prop_def(ArrayAttr[BoolAttr])
    per_dim_subscript_maps = prop_def(ArrayAttr[AffineMapAttr])
    variables_space_set = prop_def(AffineSetAttr)
    variables_space_order = prop_def(AffineMapAttr)
    result = result_def(AccessTileType)
    body = region_def("single_block")

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    traits = traits_def(MemoryReadEffect(), SingleBlockImplicitTerminator(RegionTerminatorOp))

    PRINTED_PROPERTIES: ClassVar[tuple[str, ...]] = (
        "variables_space_set",
        "variables_space_order",
    )

    def __init__(
        self,
        base: SSAValue,
        indirect_memrefs: Sequence[SSAValue],
        captured_variables: Sequence[SSAValue],
        subscript_kinds: Sequence[bool],
        subscript_maps: Sequence[AffineMap],
        variables_space_set: AffineSet,
        variables_space_order: AffineMap,
        result_type: AccessTileType,
        symbols: Sequence[SSAValue] = (),
        variable_names: Sequence[str | None] | None = None,
    ):
        """`subscript_maps[i]` gives base dim i over (captured..., intermediate...).

        `variable_names` names the intermediate variables, one per entry; by default there is
        one unnamed variable per dim of `variables_space_set`.
        """
        if variable_names is None:
            variable_names = [None] * variables_space_set.num_dims
        block = Block(arg_types=[IndexType()] * len(variable_names))
        for arg, name in zip(block.args, variable_names, strict=True):
            arg.name_hint = name
        with ImplicitBuilder(block):  # also keeps an enclosing implicit builder off it
            RegionTerminatorOp()
        super().__init__(
            operands=[base, indirect_memrefs, captured_variables, symbols],
            result_types=[result_type],
            properties={
                "per_dim_subscript_kinds": ArrayAttr(
                    IntegerAttr.from_bool(kind) for kind in subscript_kinds
                ),
                "per_dim_subscript_maps": ArrayAttr(AffineMapAttr(m) for m in subscript_maps),
                "variables_space_set": AffineSetAttr(variables_space_set),
                "variables_space_order": AffineMapAttr(variables_space_order),
            },
            regions=[Region(block)],
        )

    @property
    def intermediate_variables(self) -> Sequence[SSAValue]:
        """The hidden block's arguments: one index per dim of `variables_space_set`."""
        return self.body.block.args

    @property
    def subscript_kinds(self) -> list[bool]:
        """Per base dim: True if it reads an index view, False if it is a direct expression."""
        return [bool(kind.value.data) for kind in self.per_dim_subscript_kinds]

    @classmethod
    def parse(cls, parser: Parser) -> ConstructIndirectAccessTileOp:
        parser.parse_keyword("intermediate_variables")
        variables = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        names = [variable.operand_name for variable in variables]
        if len(set(names)) != len(names):
            parser.raise_error(f"intermediate variables must be distinct, got {names}")
        base = parser.parse_unresolved_operand()

        # Parse with captured values as symbols (numbered by first use) and intermediates as
        # dims; both counts are known only at the end, when the maps are renumbered.
        captured: list[UnresolvedOperand] = []
        captured_names: dict[str, int] = {}

        def name_to_expr(operand: UnresolvedOperand) -> AffineExpr:
            name = operand.operand_name
            if name in names:
                return AffineExpr.dimension(names.index(name))
            if name not in captured_names:
                captured_names[name] = len(captured)
                captured.append(operand)
            return AffineExpr.symbol(captured_names[name])

        def parse_expr() -> AffineExpr:
            return parse_ssa_affine_expr(parser, name_to_expr)

        kinds: list[bool] = []
        raw_maps: list[tuple[AffineExpr, ...]] = []
        views: list[UnresolvedOperand] = []

        def parse_subscript() -> None:
            if parser.parse_optional_keyword("ind") is None:
                kinds.append(False)
                raw_maps.append((parse_expr(),))
                return
            parser.parse_punctuation("(")
            views.append(parser.parse_unresolved_operand())
            kinds.append(True)
            raw_maps.append(
                tuple(parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parse_expr))
            )
            parser.parse_punctuation(")")

        parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parse_subscript)
        symbols: list[SSAValue] = []
        if parser.parse_optional_keyword("symbols") is not None:
            symbols = parser.parse_comma_separated_list(
                Parser.Delimiter.PAREN, lambda: parser.parse_operand(IndexType())
            )
        attributes_start = parser.pos
        attributes = parser.parse_optional_attr_dict()
        for name in cls.PRINTED_PROPERTIES:
            if name not in attributes:
                parser.raise_error(f"construct_indirect_access_tile needs {name}", attributes_start)
        variables_space_set = attributes.pop("variables_space_set")
        variables_space_order = attributes.pop("variables_space_order")
        if not isinstance(variables_space_set, AffineSetAttr) or not isinstance(
            variables_space_order, AffineMapAttr
        ):
            parser.raise_error(
                "variables_space_set must be an affine_set and variables_space_order an affine_map",
                attributes_start,
            )
        parser.parse_punctuation(":")
        types_start = parser.pos
        base_type, *view_types = parser.parse_comma_separated_list(
            Parser.Delimiter.NONE, parser.parse_type
        )
        if len(view_types) != len(views):
            parser.raise_error(
                f"expected the base type and {len(views)} index view types, got "
                f"{1 + len(view_types)} types",
                types_start,
                parser.pos,
            )
        parser.parse_punctuation("->")
        result_type = parse_ktdp_type(parser, AccessTileType)

        num_captured = len(captured)
        renumber_dims = [AffineExpr.dimension(num_captured + i) for i in range(len(names))]
        renumber_symbols = [AffineExpr.dimension(i) for i in range(num_captured)]
        maps = [
            AffineMap(0, 0, exprs).replace_dims_and_symbols(
                renumber_dims, renumber_symbols, num_captured + len(names), 0
            )
            for exprs in raw_maps
        ]
        op = cls(
            parser.resolve_operand(base, base_type),
            [parser.resolve_operand(v, t) for v, t in zip(views, view_types, strict=True)],
            [parser.resolve_operand(c, IndexType()) for c in captured],
            kinds,
            maps,
            variables_space_set.data,
            variables_space_order.data,
            result_type,
            symbols,
            # Numeric names (`%5`) are legal SSA ids but not name hints; the printer renumbers.
            [name if SSAValue.is_valid_name(name) else None for name in names],
        )
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" intermediate_variables")
        with printer.in_parens():
            printer.print_list(self.intermediate_variables, printer.print_ssa_value)
        printer.print_string(" ")
        printer.print_ssa_value(self.base)
        variables = [*self.captured_variables, *self.intermediate_variables]
        views = iter(self.indirect_memrefs)

        def print_expr(expr: AffineExpr) -> None:
            print_ssa_affine_expr(printer, expr, variables)

        def print_subscript(subscript: tuple[bool, AffineMapAttr]) -> None:
            indirect, subscript_map = subscript
            if not indirect:
                with printer.in_parens():
                    print_expr(subscript_map.data.results[0])
                return
            printer.print_string("ind(")
            printer.print_ssa_value(next(views))
            with printer.in_square_brackets():
                printer.print_list(subscript_map.data.results, print_expr)
            printer.print_string(")")

        with printer.in_square_brackets():
            printer.print_list(
                zip(self.subscript_kinds, self.per_dim_subscript_maps, strict=True),
                print_subscript,
            )
        print_symbols_and_attrs(
            printer, self.symbol_operands,
            {name: self.properties[name] for name in self.PRINTED_PROPERTIES}, self.attributes)
        printer.print_string(" : ")
        printer.print_list(
            [self.base.type, *(view.type for view in self.indirect_memrefs)],
            printer.print_attribute,
        )
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        tile_set = self.variables_space_set.data
        order = self.variables_space_order.data
        tile_type = cast(AccessTileType, self.result.type)
        num_variables = len(self.intermediate_variables)
        if tile_set.num_dims != num_variables:
            raise VerifyException(
                f"variables_space_set has {tile_set.num_dims} dims but there are "
                f"{num_variables} intermediate variables"
            )
        if order.num_dims != num_variables or len(order.results) != num_variables:
            raise VerifyException(
                f"variables_space_order maps {order.num_dims} dims to {len(order.results)} "
                f"results but there are {num_variables} intermediate variables"
            )
        if tile_set.num_symbols != len(self.symbol_operands):
            raise VerifyException(
                f"variables_space_set has {tile_set.num_symbols} symbols but "
                f"{len(self.symbol_operands)} symbol operands"
            )
        base_rank = cast(ShapedType, self.base.type).get_num_dims()
        kinds = self.subscript_kinds
        maps = [subscript_map.data for subscript_map in self.per_dim_subscript_maps]
        if not len(kinds) == len(maps) == base_rank:
            raise VerifyException(
                f"{len(kinds)} subscript kinds and {len(maps)} subscript maps for a base of "
                f"rank {base_rank}; there must be one of each per base dim"
            )
        if sum(kinds) != len(self.indirect_memrefs):
            raise VerifyException(
                f"{sum(kinds)} subscripts are indirect but there are "
                f"{len(self.indirect_memrefs)} index views"
            )
        num_inputs = len(self.captured_variables) + num_variables
        views = iter(self.indirect_memrefs)
        for position, (indirect, subscript_map) in enumerate(zip(kinds, maps, strict=True)):
            if subscript_map.num_dims != num_inputs or subscript_map.num_symbols:
                raise VerifyException(
                    f"subscript map {position} has {subscript_map.num_dims} dims and "
                    f"{subscript_map.num_symbols} symbols; expected {num_inputs} dims "
                    "(captured, then intermediate) and no symbols"
                )
            expected = 1
            if indirect:
                view_type = cast(MemRefType, next(views).type)
                if not isinstance(view_type.element_type, IntegerType | IndexType):
                    raise VerifyException(
                        f"index view of subscript {position} holds {view_type.element_type}, "
                        "expected integers"
                    )
                expected = view_type.get_num_dims()
            if len(subscript_map.results) != expected:
                raise VerifyException(
                    f"subscript map {position} has {len(subscript_map.results)} results but "
                    f"needs {expected}"
                    + (" (one per index view dim)" if indirect else " (a direct subscript)")
                )
        if tile_type.get_num_dims() != tile_set.num_dims:
            raise VerifyException(
                f"result {tile_type} has rank {tile_type.get_num_dims()} but "
                f"variables_space_set has {tile_set.num_dims} dims"
            )
        verify_tile_extents(tile_type.get_shape(), tile_set, order, "variables_space_set")
