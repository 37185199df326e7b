"""The KTIR `ktdp` dialect: memory views, access tiles and tile-granular loads and stores.

KTIR describes a Spyre kernel as a grid of compute tiles. Each tile builds *memory views*
over memory that is already allocated, selects *access tiles* (sets of coordinates) inside
them, and moves whole tiles between memory and tensors with `ktdp.load` / `ktdp.store`.

The semantics follow the KTIR spec (RFC 0682) and the ktir-mlir-frontend TableGen; where they
disagree on spelling, the parser accepts both and the printer emits the current form. On top
of the frontend's checks this module verifies memref extents against static sizes, the
coordinate set's rank, tile extents against a box-shaped access set, and load/store element
types against the viewed memref.

Attributes and types live in `ktdp_types.py`, the indirect access tile in `ktdp_indirect.py`,
the inter-tile communication ops in `ktdp_intertile.py`; all are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar, cast

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I32,
    AffineMapAttr,
    AffineSetAttr,
    ContainerType,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    ShapedType,
    StringAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.dialects.utils import (
    DynamicIndexList,
    get_dynamic_index_list,
    split_dynamic_index_list,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.ir.affine import AffineMap, AffineSet
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, Pure
from xdsl.utils.exceptions import VerifyException

from spyrec.dialects.ktdp_affine import (
    box_extents,
    parse_ssa_affine_map,
    print_ssa_affine_expr,
    print_symbols_and_attrs,
    shape_str,
    verify_tile_extents,
)
from spyrec.dialects.ktdp_indirect import ConstructIndirectAccessTileOp, RegionTerminatorOp
from spyrec.dialects.ktdp_intertile import (
    InterTileConsumeOp,
    InterTileProduceOp,
    InterTileReduceOp,
    YieldPartialOp,
    YieldReducedOp,
)
from spyrec.dialects.ktdp_spellings import UpgradesProperties
from spyrec.dialects.ktdp_types import (
    AccessTileType,
    LegacyMemorySpaceSpelling,
    MemorySpaceAttr,
    MemorySpaceKind,
    RuntimeArgField,
    RuntimeArgType,
    TileFutureType,
    parse_ktdp_type,
)

__all__ = [
    "KTDP",
    "AccessTileType",
    "ConstructAccessTileOp",
    "ConstructDistributedMemoryViewOp",
    "ConstructIndirectAccessTileOp",
    "ConstructMemoryViewOp",
    "GetComputeTileIdOp",
    "InterTileConsumeOp",
    "InterTileProduceOp",
    "InterTileReduceOp",
    "LegacyMemorySpaceSpelling",
    "LoadOp",
    "MemorySpaceAttr",
    "MemorySpaceKind",
    "RegionTerminatorOp",
    "RuntimeArgExtractOp",
    "RuntimeArgField",
    "RuntimeArgType",
    "StoreOp",
    "TileFutureType",
    "YieldPartialOp",
    "YieldReducedOp",
    "box_extents",
]


@irdl_op_definition
class GetComputeTileIdOp(IRDLOperation):
    """The running compute tile's coordinates in the kernel grid, x first.

        %x = ktdp.get_compute_tile_id : index
        %x, %y = ktdp.get_compute_tile_id : index, index

    The grid comes from the enclosing function's `grid = [X, Y(, Z)]` attribute.
    """

    name = "ktdp.get_compute_tile_id"

    ids = var_result_def()

    assembly_format = "attr-dict `:` type($ids)"

    traits = traits_def(Pure())

    def __init__(self, num_results: int = 1):
        super().__init__(result_types=[[IndexType()] * num_results])

    def verify_(self) -> None:
        if not self.ids:
            raise VerifyException("get_compute_tile_id needs at least 1 result, got 0")
        for position, tile_id in enumerate(self.ids):
            if not isinstance(tile_id.type, IndexType):
                raise VerifyException(
                    f"get_compute_tile_id result {position} is {tile_id.type}, expected index"
                )


@irdl_op_definition
class ConstructMemoryViewOp(IRDLOperation):
    """View already-allocated memory as a strided memref; allocates nothing.

        %v = ktdp.construct_memory_view %off, sizes: [96, %M], strides: [%s, 1]
               {coordinate_set = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + 95 >= 0,
                                                          d1 >= 0, -d1 + s0 - 1 >= 0)>,
                memory_space = #ktdp.memory_space<global>} : memref<96x?xf16>

    Element (i0, i1) sits at `offset + i0 * strides[0] + i1 * strides[1]`, counted in
    elements of the view's dtype. `coordinate_set` is the part of the global (possibly
    distributed) tensor this view owns, in global coordinates; its symbols bind, in order,
    to the dynamic `sizes` operands.
    """

    name = "ktdp.construct_memory_view"

    offset = operand_def(IndexType)
    sizes = var_operand_def(IndexType)
    strides = var_operand_def(IndexType)
    static_sizes = prop_def(DenseArrayBase.constr(i64))
    static_strides = prop_def(DenseArrayBase.constr(i64))
    coordinate_set = prop_def(AffineSetAttr)
    memory_space = prop_def(MemorySpaceAttr)
    result = result_def(MemRefType)

    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())

    assembly_format = (
        "$offset `,` `sizes` `` `:` custom<DynamicIndexList>($sizes, $static_sizes) `,` "
        "`strides` `` `:` custom<DynamicIndexList>($strides, $static_strides) "
        "attr-dict `:` type($result)"
    )

    custom_directives = (DynamicIndexList,)

    traits = traits_def(Pure())

    def __init__(
        self,
        offset: SSAValue,
        sizes: Sequence[int | SSAValue],
        strides: Sequence[int | SSAValue],
        result_type: MemRefType,
        coordinate_set: AffineSetAttr | AffineSet,
        memory_space: MemorySpaceAttr,
    ):
        static_sizes, dynamic_sizes = split_dynamic_index_list(sizes, DYNAMIC_INDEX)
        static_strides, dynamic_strides = split_dynamic_index_list(strides, DYNAMIC_INDEX)
        if isinstance(coordinate_set, AffineSet):
            coordinate_set = AffineSetAttr(coordinate_set)
        super().__init__(
            operands=[offset, dynamic_sizes, dynamic_strides],
            result_types=[result_type],
            properties={
                "static_sizes": DenseArrayBase.from_list(i64, static_sizes),
                "static_strides": DenseArrayBase.from_list(i64, static_strides),
                "coordinate_set": coordinate_set,
                "memory_space": memory_space,
            },
        )

    def mixed_sizes(self) -> list[SSAValue | int]:
        """Sizes with dynamic entries replaced by their SSA operands."""
        return get_dynamic_index_list(self.static_sizes.get_values(), self.sizes, DYNAMIC_INDEX)

    def mixed_strides(self) -> list[SSAValue | int]:
        """Strides with dynamic entries replaced by their SSA operands."""
        return get_dynamic_index_list(self.static_strides.get_values(), self.strides, DYNAMIC_INDEX)

    def verify_(self) -> None:
        sizes = self.static_sizes.get_values()
        strides = self.static_strides.get_values()
        if len(sizes) != len(strides):
            raise VerifyException(f"sizes has {len(sizes)} entries but strides has {len(strides)}")
        for name, static, dynamic in (
            ("sizes", sizes, self.sizes),
            ("strides", strides, self.strides),
        ):
            markers = static.count(DYNAMIC_INDEX)
            if markers != len(dynamic):
                raise VerifyException(
                    f"{name} has {markers} dynamic entries but {len(dynamic)} dynamic operands"
                )
        for position, size in enumerate(sizes):
            if size < 0 and size != DYNAMIC_INDEX:
                raise VerifyException(f"sizes[{position}] is {size}, must be >= 0")
        view_type = cast(MemRefType, self.result.type)
        shape = view_type.get_shape()
        if len(shape) != len(sizes):
            raise VerifyException(
                f"result {view_type} has rank {len(shape)} but sizes has {len(sizes)} entries"
            )
        for position, (extent, size) in enumerate(zip(shape, sizes, strict=True)):
            if DYNAMIC_INDEX not in (extent, size) and extent != size:
                raise VerifyException(
                    f"memref dim {position} is {extent} but sizes[{position}] is {size}"
                )
        coordinate_set = self.coordinate_set.data
        if coordinate_set.num_dims != len(shape):
            raise VerifyException(
                f"coordinate_set has {coordinate_set.num_dims} dims but the view has rank "
                f"{len(shape)}"
            )
        if coordinate_set.num_symbols > len(self.sizes):
            raise VerifyException(
                f"coordinate_set has {coordinate_set.num_symbols} symbols but only "
                f"{len(self.sizes)} dynamic sizes bind them"
            )
        type_space = view_type.memory_space
        if isinstance(type_space, MemorySpaceAttr) and type_space != self.memory_space:
            raise VerifyException(
                f"result memory space {type_space} differs from memory_space {self.memory_space}"
            )


@irdl_op_definition
class ConstructDistributedMemoryViewOp(IRDLOperation):
    """One logical memref made of several views, e.g. rows split between HBM and LX.

        %d = ktdp.construct_distributed_memory_view(%a, %b : memref<96x64xf16>,
               memref<32x64xf16>) : memref<128x64xf16>

    The domain is the union of the parts' coordinate sets (global coordinates). Parts may
    differ in memory space and strides but share element type and rank.
    """

    name = "ktdp.construct_distributed_memory_view"

    parts = var_operand_def(MemRefType)
    result = result_def(MemRefType)

    assembly_format = "`(` $parts `:` type($parts) `)` attr-dict `:` type($result)"

    traits = traits_def(Pure())

    def __init__(self, parts: Sequence[SSAValue], result_type: MemRefType):
        super().__init__(operands=[parts], result_types=[result_type])

    def verify_(self) -> None:
        if not self.parts:
            raise VerifyException("construct_distributed_memory_view needs at least 1 part")
        view_type = cast(MemRefType, self.result.type)
        for position, part in enumerate(self.parts):
            part_type = cast(MemRefType, part.type)
            if part_type.element_type != view_type.element_type:
                raise VerifyException(
                    f"part {position} has element type {part_type.element_type} but the "
                    f"result has {view_type.element_type}"
                )
            if part_type.get_num_dims() != view_type.get_num_dims():
                raise VerifyException(
                    f"part {position} has rank {part_type.get_num_dims()} but the result has "
                    f"rank {view_type.get_num_dims()}"
                )


@irdl_op_definition
class ConstructAccessTileOp(IRDLOperation):
    """Select the coordinates `base_map(indices) + p` for every point p of a set.

        %t = ktdp.construct_access_tile %view[%row + %i, 0] {
               access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>,
               access_tile_order = affine_map<(d0, d1) -> (d0, d1)>}
             : memref<96x64xf16> -> !ktdp.access_tile<1x64xindex>

    The bracket holds affine expressions over SSA values and literals; its distinct SSA
    values, in first-use order, are the `indices` operands and the dims of `base_map`.
    Points are visited in lexicographic order of `access_tile_order(p)` (rightmost output
    innermost), and the tile's shape is the set's extents permuted by that order.
    `symbols(...)` binds the symbols of `access_tile_set`.
    """

    name = "ktdp.construct_access_tile"

    base = operand_def(MemRefType | TensorType)
    indices = var_operand_def(IndexType)
    symbols = var_operand_def(IndexType)
    base_map = prop_def(AffineMapAttr)
    access_tile_set = prop_def(AffineSetAttr)
    access_tile_order = prop_def(AffineMapAttr)
    result = result_def(AccessTileType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    traits = traits_def(Pure())

    PRINTED_PROPERTIES: ClassVar[tuple[str, ...]] = ("access_tile_set", "access_tile_order")

    def __init__(
        self,
        base: SSAValue,
        indices: Sequence[SSAValue],
        base_map: AffineMap | AffineMapAttr,
        access_tile_set: AffineSet | AffineSetAttr,
        access_tile_order: AffineMap | AffineMapAttr,
        result_type: AccessTileType,
        symbols: Sequence[SSAValue] = (),
    ):
        if isinstance(base_map, AffineMap):
            base_map = AffineMapAttr(base_map)
        if isinstance(access_tile_set, AffineSet):
            access_tile_set = AffineSetAttr(access_tile_set)
        if isinstance(access_tile_order, AffineMap):
            access_tile_order = AffineMapAttr(access_tile_order)
        super().__init__(
            operands=[base, indices, symbols],
            result_types=[result_type],
            properties={
                "base_map": base_map,
                "access_tile_set": access_tile_set,
                "access_tile_order": access_tile_order,
            },
        )

    @classmethod
    def parse(cls, parser: Parser) -> ConstructAccessTileOp:
        base = parser.parse_unresolved_operand()
        base_map, indices = parse_ssa_affine_map(parser)
        symbols: list[SSAValue] = []
        if parser.parse_optional_keyword("symbols") is not None:
            symbols = parser.parse_comma_separated_list(
                Parser.Delimiter.PAREN, lambda: parser.parse_operand(IndexType())
            )
        attributes_start = parser.pos
        attributes = parser.parse_optional_attr_dict()
        properties: dict[str, Attribute] = {}
        for name in cls.PRINTED_PROPERTIES:
            if name not in attributes:
                parser.raise_error(f"construct_access_tile needs {name}", attributes_start)
            properties[name] = attributes.pop(name)
        parser.parse_punctuation(":")
        base_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parse_ktdp_type(parser, AccessTileType)
        return cls.build(
            operands=[parser.resolve_operand(base, base_type), indices, symbols],
            result_types=[result_type],
            properties={"base_map": AffineMapAttr(base_map), **properties},
            attributes=attributes,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.base)
        with printer.in_square_brackets():
            printer.print_list(
                self.base_map.data.results,
                lambda expr: print_ssa_affine_expr(printer, expr, self.indices),
            )
        print_symbols_and_attrs(
            printer, self.symbols,
            {name: self.properties[name] for name in self.PRINTED_PROPERTIES}, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.base.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        base_map = self.base_map.data
        tile_set = self.access_tile_set.data
        order = self.access_tile_order.data
        tile_type = cast(AccessTileType, self.result.type)
        if base_map.num_dims != len(self.indices) or base_map.num_symbols:
            raise VerifyException(
                f"base_map has {base_map.num_dims} dims and {base_map.num_symbols} symbols "
                f"but there are {len(self.indices)} indices (and symbols are not allowed)"
            )
        base_rank = cast(ShapedType, self.base.type).get_num_dims()
        if len(base_map.results) != base_rank:
            raise VerifyException(
                f"base_map has {len(base_map.results)} results but the base has rank {base_rank}"
            )
        if tile_set.num_dims != len(base_map.results):
            raise VerifyException(
                f"access_tile_set has {tile_set.num_dims} dims but base_map has "
                f"{len(base_map.results)} results"
            )
        if tile_set.num_symbols != len(self.symbols):
            raise VerifyException(
                f"access_tile_set has {tile_set.num_symbols} symbols but "
                f"{len(self.symbols)} symbol operands"
            )
        if order.num_dims != tile_set.num_dims or len(order.results) != tile_set.num_dims:
            raise VerifyException(
                f"access_tile_order maps {order.num_dims} dims to {len(order.results)} "
                f"results but access_tile_set has {tile_set.num_dims} dims"
            )
        if tile_type.get_num_dims() != tile_set.num_dims:
            raise VerifyException(
                f"result {tile_type} has rank {tile_type.get_num_dims()} but "
                f"access_tile_set has {tile_set.num_dims} dims"
            )
        verify_tile_extents(tile_type.get_shape(), tile_set, order, "access_tile_set")


def _viewed_element_type(tile: SSAValue) -> Attribute | None:
    """Element type of the memref or tensor an access tile indexes, when it is visible."""
    if not isinstance(tile.owner, ConstructAccessTileOp | ConstructIndirectAccessTileOp):
        return None
    return cast(ContainerType[Attribute], tile.owner.base.type).get_element_type()


def _verify_tile_transfer(verb: str, data: TensorType, tile: SSAValue) -> None:
    """Shared load/store rule: same shape as the tile, same element type as the view."""
    tile_shape = cast(AccessTileType, tile.type).get_shape()
    if data.get_shape() != tile_shape:
        raise VerifyException(
            f"{verb} tensor shape {shape_str(data.get_shape())} does not match access tile "
            f"shape {shape_str(tile_shape)}"
        )
    viewed = _viewed_element_type(tile)
    if viewed is not None and viewed != data.element_type:
        raise VerifyException(
            f"{verb} tensor element type {data.element_type} does not match the viewed "
            f"element type {viewed}"
        )


@irdl_op_definition
class LoadOp(IRDLOperation):
    """Gather an access tile's elements, in tile order, into a tensor of the tile's shape.

        %d = ktdp.load %t : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>

    The bare tile type (`: <32x64xindex> -> ...`) is accepted as well.
    """

    name = "ktdp.load"

    tile = operand_def(AccessTileType)
    result = result_def(TensorType)

    traits = traits_def(MemoryReadEffect())

    def __init__(self, tile: SSAValue, result_type: TensorType):
        super().__init__(operands=[tile], result_types=[result_type])

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        tile = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        tile_type = parse_ktdp_type(parser, AccessTileType)
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        return cls.build(
            operands=[parser.resolve_operand(tile, tile_type)],
            result_types=[result_type],
            attributes=attributes,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.tile)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.tile.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        _verify_tile_transfer("load", cast(TensorType, self.result.type), self.tile)


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Scatter a tensor into the coordinates of an access tile, one element per point.

        ktdp.store %d, %t : tensor<32x64xf16>, !ktdp.access_tile<32x64xindex>

    The bare tile type (`..., <32x64xindex>`) is accepted as well.
    """

    name = "ktdp.store"

    value = operand_def(TensorType)
    tile = operand_def(AccessTileType)

    traits = traits_def(MemoryWriteEffect())

    def __init__(self, value: SSAValue, tile: SSAValue):
        super().__init__(operands=[value, tile])

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        tile = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        value_type = parser.parse_type()
        parser.parse_punctuation(",")
        tile_type = parse_ktdp_type(parser, AccessTileType)
        return cls.build(
            operands=[
                parser.resolve_operand(value, value_type),
                parser.resolve_operand(tile, tile_type),
            ],
            attributes=attributes,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.value)
        printer.print_string(", ")
        printer.print_ssa_value(self.tile)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)
        printer.print_string(", ")
        printer.print_attribute(self.tile.type)

    def verify_(self) -> None:
        _verify_tile_transfer("store", cast(TensorType, self.value.type), self.tile)


@irdl_op_definition
class RuntimeArgExtractOp(UpgradesProperties):
    """Read a runtime argument's value, or one of the facts its type states about it.

        %m = ktdp.runtime_arg_extract value from %M : !ktdp.runtime_arg<index, granularity = 32>
               -> index
        %g = ktdp.runtime_arg_extract granularity from %M : <index, granularity = 32> -> index

    `value` yields the argument's value type; `granularity` and `upperbound` yield the
    constant from the type as an index, and the type must state it. As in the reference
    dialect, the choice is the property `kind`, an i32 enum (0 value, 1 granularity,
    2 upperbound: generic form `<{kind = 1 : i32}>`), and an attribute dictionary comes after
    the argument's type. The older spellings still parse: the dictionary before the `:`, and
    the generic property `<{field = "granularity"}>`.
    """

    name = "ktdp.runtime_arg_extract"

    arg = operand_def(RuntimeArgType)
    kind = prop_def(IntegerAttr[I32])
    result = result_def()

    traits = traits_def(Pure())

    FIELDS: ClassVar[tuple[str, ...]] = ("value", "granularity", "upperbound")

    def __init__(self, arg: SSAValue, field: RuntimeArgField, result_type: Attribute | None = None):
        if result_type is None:
            arg_type = cast(RuntimeArgType, arg.type)
            result_type = arg_type.value_type if field == "value" else IndexType()
        super().__init__(
            operands=[arg], result_types=[result_type], properties={"kind": self._kind(field)}
        )

    @classmethod
    def _kind(cls, field: str) -> IntegerAttr:
        return IntegerAttr(cls.FIELDS.index(field), i32)

    @classmethod
    def upgrade_properties(
        cls, properties: Mapping[str, Attribute], operands: Sequence[SSAValue]
    ) -> Mapping[str, Attribute]:
        """The older `field = "name"` of a known name becomes `kind` (an unknown name stays,
        and verification rejects the op for want of a kind)."""
        old = properties.get("field")
        if not (isinstance(old, StringAttr) and old.data in cls.FIELDS) or "kind" in properties:
            return properties
        return {**{k: v for k, v in properties.items() if k != "field"},
                "kind": cls._kind(old.data)}

    @property
    def field(self) -> str:
        """The name of what is extracted: value, granularity or upperbound."""
        return self.FIELDS[self.kind.value.data]

    @classmethod
    def parse(cls, parser: Parser) -> RuntimeArgExtractOp:
        start = parser.pos
        field = parser.parse_identifier("value, granularity or upperbound")
        if field not in cls.FIELDS:
            parser.raise_error(
                f"expected value, granularity or upperbound, got {field}", start, parser.pos
            )
        parser.parse_keyword("from")
        arg = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()  # the older position
        parser.parse_punctuation(":")
        arg_type = parse_ktdp_type(parser, RuntimeArgType)
        attributes |= parser.parse_optional_attr_dict()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        return cls.build(
            operands=[parser.resolve_operand(arg, arg_type)],
            result_types=[result_type],
            properties={"kind": cls._kind(field)},
            attributes=attributes,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.field} from ")
        printer.print_ssa_value(self.arg)
        printer.print_string(" : ")
        printer.print_attribute(self.arg.type)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        kind = self.kind.value.data
        if not 0 <= kind < len(self.FIELDS):
            raise VerifyException(
                f"runtime_arg_extract kind must be 0 (value), 1 (granularity) or 2 (upperbound), "
                f"got {kind}"
            )
        field = self.field
        arg_type = cast(RuntimeArgType, self.arg.type)
        expected = arg_type.value_type if field == "value" else IndexType()
        if self.result.type != expected:
            raise VerifyException(
                f"runtime_arg_extract {field} yields {expected}, but the result is "
                f"{self.result.type}"
            )
        if field != "value" and getattr(arg_type, field) is None:
            raise VerifyException(f"runtime_arg_extract {field}: {arg_type} has no {field}")


KTDP = Dialect(
    "ktdp",
    [
        GetComputeTileIdOp,
        ConstructMemoryViewOp,
        ConstructDistributedMemoryViewOp,
        ConstructAccessTileOp,
        ConstructIndirectAccessTileOp,
        RegionTerminatorOp,
        LoadOp,
        StoreOp,
        RuntimeArgExtractOp,
        InterTileProduceOp,
        YieldPartialOp,
        InterTileReduceOp,
        YieldReducedOp,
        InterTileConsumeOp,
    ],
    [MemorySpaceAttr, LegacyMemorySpaceSpelling, AccessTileType, RuntimeArgType, TileFutureType],
)
