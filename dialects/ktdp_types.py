"""Attributes and types of the KTIR `ktdp` dialect (the ops are in `ktdp.py`).

- `#ktdp.memory_space<...>`: who may see a memory view; the pre-rename
  `#ktdp.spyre_memory_space<...>` spelling parses to the same attribute.
- `!ktdp.access_tile<...>`: the shape of a set of coordinates.
- `!ktdp.runtime_arg<...>`: a kernel argument known only at launch, with optional facts about it.
- `!ktdp.tile_future<...>`: the handle an inter-tile produce hands to its delivery op.

MLIR prints dialect types inside ktdp ops without the `!ktdp.name` prefix (`: <32x64xindex>`);
`parse_ktdp_type` reads both spellings.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal, TypeVar, cast

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AffineSetAttr,
    AnyFloat,
    ArrayAttr,
    ContainerType,
    IndexType,
    IntAttr,
    IntegerType,
    NoneAttr,
    ShapedType,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, TypeAttribute
from xdsl.ir.affine import AffineConstraintKind, AffineSet
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

MemorySpaceKind = Literal["global", "ct_local"]


@irdl_attr_definition
class MemorySpaceAttr(ParametrizedAttribute):
    """Who may see a memory view: every compute tile (`global`) or one tile (`ct_local`).

        #ktdp.memory_space<global>
        #ktdp.memory_space<ct_local, ct_id = 3>

    `global` is off-chip memory; `ct_local` is the LX scratchpad of compute tile `ct_id`.
    The pre-rename spelling `#ktdp.spyre_memory_space<...>` parses to this attribute too
    (see `LegacyMemorySpaceSpelling`).
    """

    name = "ktdp.memory_space"

    space: StringAttr
    tile: IntAttr | NoneAttr

    KINDS: ClassVar[tuple[str, ...]] = ("global", "ct_local")

    def __init__(self, kind: MemorySpaceKind, ct_id: int | None = None):
        super().__init__(StringAttr(kind), NoneAttr() if ct_id is None else IntAttr(ct_id))

    @classmethod
    def global_(cls) -> MemorySpaceAttr:
        return cls("global")

    @classmethod
    def ct_local(cls, ct_id: int) -> MemorySpaceAttr:
        return cls("ct_local", ct_id)

    @property
    def kind(self) -> MemorySpaceKind:
        return cast(MemorySpaceKind, self.space.data)

    @property
    def ct_id(self) -> int | None:
        return None if isinstance(self.tile, NoneAttr) else self.tile.data

    def verify(self) -> None:
        if self.space.data not in self.KINDS:
            raise VerifyException(
                f"memory space kind must be 'global' or 'ct_local', got '{self.space.data}'"
            )
        if self.kind == "global" and self.ct_id is not None:
            raise VerifyException(f"global memory has no ct_id, got ct_id = {self.ct_id}")
        if self.kind == "ct_local" and (self.ct_id is None or self.ct_id < 0):
            raise VerifyException(f"ct_local memory needs ct_id >= 0, got {self.ct_id}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            start = parser.pos
            kind = parser.parse_identifier("memory space kind (global or ct_local)")
            if kind == "global":
                return (StringAttr(kind), NoneAttr())
            if kind != "ct_local":
                parser.raise_error(
                    f"unknown memory space '{kind}', expected global or ct_local", start, parser.pos
                )
            if parser.parse_optional_punctuation(",") is None:
                parser.raise_error("ct_local memory needs ', ct_id = N' naming its compute tile")
            parser.parse_keyword("ct_id")
            parser.parse_punctuation("=")
            ct_id = parser.parse_integer(allow_boolean=False, allow_negative=False)
            return (StringAttr(kind), IntAttr(ct_id))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.kind)
            if self.ct_id is not None:
                printer.print_string(f", ct_id = {self.ct_id}")


class LegacyMemorySpaceSpelling(ParametrizedAttribute):
    """Parser-only alias: `#ktdp.spyre_memory_space<...>` read as a `MemorySpaceAttr`.

        #ktdp.spyre_memory_space<HBM>           ->  #ktdp.memory_space<global>
        #ktdp.spyre_memory_space<LX, core = 7>  ->  #ktdp.memory_space<ct_local, ct_id = 7>

    `L0` maps like `LX`. Registering this class under the old name makes the attribute parser
    call its `parse_parameters` and `new`; `new` builds the current attribute, so no instance
    of this class ever exists and the printer only knows the current spelling. (It is not an
    IRDL definition: those are final and always construct their own class.)
    """

    name = "ktdp.spyre_memory_space"

    LEGACY_KINDS: ClassVar[dict[str, MemorySpaceKind]] = {
        "HBM": "global",
        "LX": "ct_local",
        "L0": "ct_local",
    }

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        start = parser.pos
        with parser.in_angle_brackets():
            legacy = parser.parse_identifier("memory space (HBM, LX or L0)")
            if legacy not in cls.LEGACY_KINDS:
                parser.raise_error(
                    f"unsupported spyre memory space '{legacy}', expected HBM, LX or L0",
                    start,
                    parser.pos,
                )
            core: int | None = None
            if parser.parse_optional_punctuation(",") is not None:
                parser.parse_keyword("core")
                parser.parse_punctuation("=")
                core = parser.parse_integer(allow_boolean=False)
        kind = cls.LEGACY_KINDS[legacy]
        if kind == "global" and core is not None:
            parser.raise_error(
                "core affinity is only valid for LX or L0 memory spaces, "
                f"but got memory space '{legacy}' with core = {core}",
                start,
                parser.pos,
            )
        if kind == "ct_local" and (core is None or core < 0):
            parser.raise_error(
                f"memory space '{legacy}' needs core = N (N >= 0) to name its compute tile",
                start,
                parser.pos,
            )
        return (StringAttr(kind), NoneAttr() if core is None else IntAttr(core))

    # Returning another class than `cls` is the point of this alias, hence the ignore.
    @classmethod
    def new(cls, params: Sequence[Attribute]) -> MemorySpaceAttr:
        return MemorySpaceAttr.new(params)


class _BareSyntaxType(ABC):
    """A ktdp type whose `<...>` body may appear without the `!ktdp.name` prefix in ops."""

    @classmethod
    @abstractmethod
    def parse_body(cls, parser: AttrParser) -> Sequence[Attribute]:
        """Parse what sits between `<` and `>`."""

    @abstractmethod
    def print_body(self, printer: Printer) -> None:
        """Print what sits between `<` and `>`."""

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return cls.parse_body(parser)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            self.print_body(printer)


@irdl_attr_definition
class AccessTileType(
    _BareSyntaxType, ParametrizedAttribute, TypeAttribute, ShapedType, ContainerType[IndexType]
):
    """The shape of a set of coordinates selected by an access tile.

        !ktdp.access_tile<32x64xindex>
        !ktdp.access_tile<?x64xindex>
        !ktdp.access_tile<index>          (rank 0: a single point)

    The type does not name the view it indexes; that link is the SSA def-use chain.
    """

    name = "ktdp.access_tile"

    shape: ArrayAttr[IntAttr]
    element_type: Attribute

    def __init__(self, shape: Iterable[int], element_type: Attribute | None = None):
        super().__init__(
            ArrayAttr(IntAttr(dim) for dim in shape),
            IndexType() if element_type is None else element_type,
        )

    def get_num_dims(self) -> int:
        return len(self.shape.data)

    def get_shape(self) -> tuple[int, ...]:
        return tuple(dim.data for dim in self.shape.data)

    def get_element_type(self) -> IndexType:
        return cast(IndexType, self.element_type)

    def verify(self) -> None:
        if not isinstance(self.element_type, IndexType):
            raise VerifyException(
                f"tile element type must be 'index', but got: {self.element_type}"
            )
        for position, dim in enumerate(self.get_shape()):
            if dim < 0 and dim != DYNAMIC_INDEX:
                raise VerifyException(f"access tile dim {position} is {dim}, must be >= 0 or ?")

    @classmethod
    def parse_body(cls, parser: AttrParser) -> Sequence[Attribute]:
        dims, element_type = parser.parse_ranked_shape()
        return (ArrayAttr(IntAttr(dim) for dim in dims), element_type)

    def print_body(self, printer: Printer) -> None:
        printer.print_dimension_list(self.get_shape())
        if self.shape.data:
            printer.print_string("x")
        printer.print_attribute(self.element_type)


RuntimeArgField = Literal["value", "granularity", "upperbound"]


@irdl_attr_definition
class RuntimeArgType(_BareSyntaxType, ParametrizedAttribute, TypeAttribute):
    """A kernel argument whose value is known only at launch.

        !ktdp.runtime_arg<index>
        !ktdp.runtime_arg<index, granularity = 32, upperbound = 96>

    `granularity = N`: the value is a multiple of N. `upperbound = M`: it is at most M. The
    value type is index, an integer or a float. Keywords parse in either order; the
    granularity prints first.
    """

    name = "ktdp.runtime_arg"

    value_type: Attribute
    granularity_attr: IntAttr | NoneAttr
    upperbound_attr: IntAttr | NoneAttr

    KEYWORDS: ClassVar[tuple[str, ...]] = ("granularity", "upperbound")

    def __init__(
        self, value_type: Attribute, granularity: int | None = None, upperbound: int | None = None
    ):
        super().__init__(
            value_type,
            NoneAttr() if granularity is None else IntAttr(granularity),
            NoneAttr() if upperbound is None else IntAttr(upperbound),
        )

    @property
    def granularity(self) -> int | None:
        return None if isinstance(self.granularity_attr, NoneAttr) else self.granularity_attr.data

    @property
    def upperbound(self) -> int | None:
        return None if isinstance(self.upperbound_attr, NoneAttr) else self.upperbound_attr.data

    def verify(self) -> None:
        if not isinstance(self.value_type, IndexType | IntegerType | AnyFloat):
            raise VerifyException(
                f"runtime_arg value type must be index, an integer or a float, got "
                f"{self.value_type}"
            )
        for keyword, value in (("granularity", self.granularity), ("upperbound", self.upperbound)):
            if value is not None and value <= 0:
                raise VerifyException(f"runtime_arg {keyword} must be positive, got {value}")

    @classmethod
    def parse_body(cls, parser: AttrParser) -> Sequence[Attribute]:
        value_type = parser.parse_type()
        values: dict[str, Attribute] = {}
        while parser.parse_optional_punctuation(",") is not None:
            start = parser.pos
            keyword = parser.parse_identifier("granularity or upperbound")
            if keyword not in cls.KEYWORDS or keyword in values:
                parser.raise_error(
                    f"expected granularity or upperbound (each at most once), got {keyword}",
                    start,
                    parser.pos,
                )
            parser.parse_punctuation("=")
            values[keyword] = IntAttr(parser.parse_integer(allow_boolean=False))
        return (value_type, *(values.get(keyword, NoneAttr()) for keyword in cls.KEYWORDS))

    def print_body(self, printer: Printer) -> None:
        printer.print_attribute(self.value_type)
        for keyword, value in (("granularity", self.granularity), ("upperbound", self.upperbound)):
            if value is not None:
                printer.print_string(f", {keyword} = {value}")


@irdl_attr_definition
class TileFutureType(_BareSyntaxType, ParametrizedAttribute, TypeAttribute):
    """Handle to the per-tile partial contributions of one `ktdp.inter_tile_produce`.

        !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g >= 0, -g + 7 >= 0)>>
        !ktdp.tile_future<(tensor<128xf32>, tensor<128xi32>), groups = #groups>

    Each partial type is one role a producer tile contributes (a ranked tensor); `groups` is
    the 1-D, symbol-free set of group indices. The older spellings without parentheses,
    `<T, groups = #G>` and `<T1, T2, #G>`, parse to the same type; the printer emits the
    parenthesised form, with a set that has an inequality as an alias `#groups` when the
    module is printed by `KtirPrinter` (`needs_alias`).
    """

    name = "ktdp.tile_future"

    partial_types: ArrayAttr[Attribute]
    groups: AffineSetAttr

    def __init__(self, partial_types: Iterable[Attribute], groups: AffineSetAttr | AffineSet):
        if isinstance(groups, AffineSet):
            groups = AffineSetAttr(groups)
        super().__init__(ArrayAttr(partial_types), groups)

    @property
    def partials(self) -> tuple[Attribute, ...]:
        return self.partial_types.data

    def verify(self) -> None:
        if not self.partials:
            raise VerifyException("tile_future needs at least one partial type")
        for position, partial in enumerate(self.partials):
            if not isinstance(partial, TensorType):
                raise VerifyException(
                    f"tile_future partial {position} must be a ranked tensor, got {partial}"
                )
        groups = self.groups.data
        if groups.num_dims != 1 or groups.num_symbols:
            raise VerifyException(
                f"tile_future groups must be a 1-D set without symbols, got {groups.num_dims} "
                f"dims and {groups.num_symbols} symbols"
            )

    @classmethod
    def parse_body(cls, parser: AttrParser) -> Sequence[Attribute]:
        if parser.parse_optional_punctuation("(") is not None:
            partials = parser.parse_comma_separated_list(
                AttrParser.Delimiter.NONE, parser.parse_type
            )
            parser.parse_punctuation(")")
            parser.parse_punctuation(",")
            parser.parse_keyword("groups")
            parser.parse_punctuation("=")
            return (ArrayAttr(partials), cls._parse_groups(parser))
        # Older spellings: `T1, ..., TN, groups = G` or `T1, ..., TN, G`.
        partials: list[Attribute] = []
        while True:
            if parser.parse_optional_keyword("groups") is not None:
                parser.parse_punctuation("=")
                return (ArrayAttr(partials), cls._parse_groups(parser))
            start = parser.pos
            entry = parser.parse_attribute()
            if isinstance(entry, AffineSetAttr):
                return (ArrayAttr(partials), entry)
            if not isinstance(entry, TypeAttribute):
                parser.raise_error(
                    f"expected a partial type or the groups set, got {entry}", start, parser.pos
                )
            partials.append(entry)
            parser.parse_punctuation(",")

    @staticmethod
    def _parse_groups(parser: AttrParser) -> AffineSetAttr:
        start = parser.pos
        groups = parser.parse_attribute()
        if not isinstance(groups, AffineSetAttr):
            parser.raise_error(f"groups must be an affine_set, got {groups}", start, parser.pos)
        return groups

    def print_body(self, printer: Printer) -> None:
        with printer.in_parens():
            printer.print_list(self.partials, printer.print_attribute)
        printer.print_string(", groups = ")
        alias = getattr(printer, "set_aliases", {}).get(self.groups)
        if alias is None:
            printer.print_attribute(self.groups)
        else:
            printer.print_string(alias)


def needs_alias(groups: AffineSetAttr) -> bool:
    """Whether a group set prints as an alias (`#groups = affine_set<...>` before the module,
    `groups = #groups` in the type): it has an inequality. Upstream MLIR without ktdp reads a
    dialect type's body by matching brackets, so the `>` of an inline `>=` would close
    `!ktdp.tile_future<` early and the module would not parse there (docs/ktir.md §1)."""
    return any(c.kind != AffineConstraintKind.eq for c in groups.data.constraints)


def group_set_aliases(module: Operation) -> dict[AffineSetAttr, str]:
    """`#groups`, `#groups1`, ... for each distinct group set of a tile_future in `module`
    that needs an alias, in order of first appearance."""
    aliases: dict[AffineSetAttr, str] = {}
    for op in module.walk():
        values = [*op.results, *(arg for region in op.regions for block in region.blocks
                                 for arg in block.args)]
        for value in values:
            if isinstance(value.type, TileFutureType) and needs_alias(value.type.groups) \
                    and value.type.groups not in aliases:
                aliases[value.type.groups] = f"#groups{len(aliases) or ''}"
    return aliases


@dataclass(eq=False, repr=False)
class KtirPrinter(Printer):
    """xDSL's printer, with the attribute aliases KTIR's types need: `print_module` prints
    an alias definition for each group set `needs_alias` names, then the module, whose
    tile_future types refer to them. A plain `Printer` prints every set inline, which spyrec
    and a parser that knows ktdp read as well."""

    set_aliases: dict[AffineSetAttr, str] = field(default_factory=dict[AffineSetAttr, str])

    def print_module(self, module: Operation) -> None:
        self.set_aliases = group_set_aliases(module)
        for groups, name in self.set_aliases.items():
            self.print_string(f"{name} = ")
            self.print_attribute(groups)
            self.print_string("\n")
        self.print_op(module)


_BareSyntaxTypeT = TypeVar("_BareSyntaxTypeT", AccessTileType, RuntimeArgType, TileFutureType)


def parse_ktdp_type(parser: Parser, type_class: type[_BareSyntaxTypeT]) -> _BareSyntaxTypeT:
    """Parse `!ktdp.name<...>` or the bare `<...>` MLIR prints inside ktdp ops."""
    start = parser.pos
    if parser.parse_optional_punctuation("<") is not None:
        params = type_class.parse_body(parser)
        parser.parse_punctuation(">")
        parsed: Attribute = type_class.new(params)
    else:
        parsed = parser.parse_type()
    if not isinstance(parsed, type_class):
        parser.raise_error(f"expected !{type_class.name}, got {parsed}", start, parser.pos)
    return parsed
