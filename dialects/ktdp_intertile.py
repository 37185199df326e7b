"""Inter-tile communication in the ktdp dialect: one produce op and its delivery ops.

A communication is a `ktdp.inter_tile_produce`, which names what each producer tile
contributes (its region yields the partials), and exactly one delivery op that uses the
returned `!ktdp.tile_future`: `ktdp.inter_tile_reduce` folds the partials of a group with a
combiner region, `ktdp.inter_tile_consume` hands one producer's partial to each consumer. The
def-use edge is the only synchronisation. Tile sets are affine sets `(i)[g]`: tile i belongs
to group g. Registered by the `KTDP` dialect in `ktdp.py`.

Besides the frontend's per-op checks, the delivery ops verify the rules the frontend leaves to
its legality pass whenever the sets can be enumerated (all groups bounded): consumers are
producers and a reduce is all-reduce or reduce-to-one (R13, R14), dependency sets stay inside
the producers and cover them (R3, R4), and every consume has exactly one source (R8).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from xdsl.dialects.builtin import AffineSetAttr, IndexType, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineSet
from xdsl.irdl import (
    IRDLOperation,
    Operand,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, Pure, RecursiveMemoryEffect, get_effects
from xdsl.utils.exceptions import VerifyException

from spyrec.dialects.ktdp_affine import points_1d, set_contains
from spyrec.dialects.ktdp_types import TileFutureType, parse_ktdp_type

# Enumerating tile sets is for verification only; past this many groups the checks are skipped.
_MAX_GROUPS = 4096


def rank_reduced(result: Attribute, partial: Attribute) -> bool:
    """Whether `result` is `partial` with some of its unit dims dropped (`tensor<128xf16>`
    delivered from partials `tensor<1x128xf16>`, as the public ring-reduce examples write
    it; RFC 0682 is silent): the same elements in the same order, so delivering it is a
    reshape."""
    if not isinstance(result, TensorType) or not isinstance(partial, TensorType) \
            or result.element_type != partial.element_type or result == partial:
        return False
    return _drops_unit_dims(list(result.get_shape()), list(partial.get_shape()))


def _drops_unit_dims(kept: list[int], full: list[int]) -> bool:
    """Whether `kept` is `full` with some size-1 entries removed (a subsequence that skips
    only 1s)."""
    at = 0
    for n in full:
        if at < len(kept) and kept[at] == n:
            at += 1
        elif n != 1:
            return False
    return at == len(kept)


def _types_str(types: Sequence[Attribute]) -> str:
    return ", ".join(str(t) for t in types)


def _verify_tile_set(name: str, tile_set: AffineSet, symbols: tuple[int, ...]) -> None:
    """A per-group tile set is `(i)[...]`: one dim, and one of the allowed symbol counts."""
    if tile_set.num_dims != 1 or tile_set.num_symbols not in symbols:
        wanted = " or ".join(str(n) for n in symbols)
        raise VerifyException(
            f"{name} must have 1 dim and {wanted} symbol(s), got {tile_set.num_dims} dims and "
            f"{tile_set.num_symbols} symbols"
        )


def _verify_yield(block: Block, op_name: str, yield_name: str, partials: Sequence[Attribute]):
    terminator = block.last_op
    if terminator is None or terminator.name != yield_name:
        raise VerifyException(f"{op_name} region must end with {yield_name}")
    yielded = [value.type for value in terminator.operands]
    if yielded != list(partials):
        raise VerifyException(
            f"{yield_name} yields ({_types_str(yielded)}) but the future carries "
            f"({_types_str(partials)})"
        )


def _parse_set_keyword(parser: Parser, keyword: str) -> AffineSetAttr:
    parser.parse_keyword(keyword)
    parser.parse_punctuation("=")
    start = parser.pos
    value = parser.parse_attribute()
    if not isinstance(value, AffineSetAttr):
        parser.raise_error(f"{keyword} must be an affine_set, got {value}", start, parser.pos)
    return value


def _parse_result_types(parser: Parser) -> Sequence[Attribute]:
    if parser.parse_optional_punctuation("(") is not None:
        types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation(")")
        return types
    return parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)


class _RegionYieldOp(IRDLOperation):
    """Base of the terminators of inter-tile regions: a list of tensors."""

    values = var_operand_def(TensorType)

    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])


@irdl_op_definition
class YieldPartialOp(_RegionYieldOp):
    """Ends a produce region, naming this tile's contribution for each partial role.

    ktdp.yield_partial %p : tensor<1x64xf16>
    """

    name = "ktdp.yield_partial"

    traits = lazy_traits_def(lambda: (IsTerminator(), Pure(), HasParent(InterTileProduceOp)))


@irdl_op_definition
class YieldReducedOp(_RegionYieldOp):
    """Ends a reduce combiner, yielding the combined value of each partial role.

    ktdp.yield_reduced %sum : tensor<1x64xf16>
    """

    name = "ktdp.yield_reduced"

    traits = lazy_traits_def(lambda: (IsTerminator(), Pure(), HasParent(InterTileReduceOp)))


@irdl_op_definition
class InterTileProduceOp(IRDLOperation):
    """Name what each producer tile contributes to an inter-tile communication.

        %f = ktdp.inter_tile_produce
               producer_tiles_per_group = affine_set<(i)[g] : (i - 4 * g >= 0,
                                                              -i + 4 * g + 3 >= 0)>
               -> !ktdp.tile_future<(tensor<1x64xf16>),
                                    groups = affine_set<(g) : (g >= 0, -g + 7 >= 0)>> {
        ^bb0(%gid: index):
          ktdp.yield_partial %partial : tensor<1x64xf16>
        }

    Tile t produces for the group g whose `producer_tiles_per_group(g)` holds t; the region
    runs on that tile with `%gid = g`, and tiles of no group skip it. Groups must not share a
    producer (R1), and the future has exactly one use, its delivery op (R2). The older form
    `producer_tiles_per_group = #P : T -> !ktdp.tile_future<T, #G>` parses too.
    """

    name = "ktdp.inter_tile_produce"

    producer_tiles_per_group = prop_def(AffineSetAttr)
    future = result_def(TileFutureType)
    body = region_def("single_block")

    traits = traits_def(RecursiveMemoryEffect())

    def __init__(
        self,
        producer_tiles_per_group: AffineSet | AffineSetAttr,
        future: TileFutureType,
        body: Region,
    ):
        if isinstance(producer_tiles_per_group, AffineSet):
            producer_tiles_per_group = AffineSetAttr(producer_tiles_per_group)
        super().__init__(
            result_types=[future],
            properties={"producer_tiles_per_group": producer_tiles_per_group},
            regions=[body],
        )

    @property
    def future_type(self) -> TileFutureType:
        return cast(TileFutureType, self.future.type)

    @classmethod
    def parse(cls, parser: Parser) -> InterTileProduceOp:
        producers = _parse_set_keyword(parser, "producer_tiles_per_group")
        attributes = parser.parse_optional_attr_dict()
        partials: list[Attribute] | None = None
        if parser.parse_optional_punctuation(":") is not None:
            partials = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation("->")
        start = parser.pos
        future = parse_ktdp_type(parser, TileFutureType)
        if partials is not None and list(future.partials) != partials:
            parser.raise_error(
                f"partial types ({_types_str(partials)}) differ from the future's "
                f"({_types_str(future.partials)})",
                start,
                parser.pos,
            )
        body = parser.parse_region()
        op = cls(producers, future, body)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" producer_tiles_per_group = ")
        printer.print_attribute(self.producer_tiles_per_group)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" -> ")
        printer.print_attribute(self.future.type)
        printer.print_string(" ")
        printer.print_region(self.body)

    def verify_(self) -> None:
        producers = self.producer_tiles_per_group.data
        _verify_tile_set("producer_tiles_per_group", producers, (1,))
        block = self.body.block
        if len(block.args) != 1 or not isinstance(block.args[0].type, IndexType):
            raise VerifyException(
                "inter_tile_produce region takes one index argument (the group id), got "
                f"({_types_str([arg.type for arg in block.args])})"
            )
        _verify_yield(block, self.name, YieldPartialOp.name, self.future_type.partials)
        uses = self.future.uses.get_length()
        if uses != 1:
            raise VerifyException(
                f"future result must have exactly one use (its delivery op), got {uses}"
            )
        groups = points_1d(self.future_type.groups.data, [], _MAX_GROUPS)
        if groups is None:
            return
        owner: dict[int, int] = {}
        for group in groups:
            for tile in points_1d(producers, [group]) or []:
                if tile in owner:
                    raise VerifyException(
                        f"producer tile {tile} belongs to groups {owner[tile]} and {group}; "
                        "producer_tiles_per_group must give disjoint groups"
                    )
                owner[tile] = group


class _DeliveryOp(IRDLOperation):
    """Shared parts of the delivery ops: the consumer-side sets and the delivered values.

    Subclasses define the `future` operand themselves, first, so that operand order matches
    the frontend's (IRDL lists a subclass's fields before its bases').
    """

    if TYPE_CHECKING:  # defined by each subclass (IRDL would read an annotation as a field)
        future: Operand

    consumer_tiles_per_group = prop_def(AffineSetAttr)
    producer_dependency_per_consumer = opt_prop_def(AffineSetAttr)
    delivered = var_result_def(TensorType)

    @property
    def future_type(self) -> TileFutureType:
        return cast(TileFutureType, self.future.type)

    def producer_op(self) -> InterTileProduceOp | None:
        owner = self.future.owner
        return owner if isinstance(owner, InterTileProduceOp) else None

    def _verify_delivery(self) -> None:
        consumers = self.consumer_tiles_per_group.data
        _verify_tile_set("consumer_tiles_per_group", consumers, (1,))
        dependency = self.producer_dependency_per_consumer
        if dependency is not None:
            _verify_tile_set("producer_dependency_per_consumer", dependency.data, (1, 2))
        partials = list(self.future_type.partials)
        result_types = [result.type for result in self.delivered]
        if len(result_types) != len(partials) or not all(
                r == p or rank_reduced(r, p) for r, p in zip(result_types, partials)):
            raise VerifyException(
                f"result types ({_types_str(result_types)}) must equal the future's partial "
                f"types ({_types_str(partials)}), or drop only their unit dims"
            )

    def enumerate_groups(
        self,
    ) -> list[tuple[int, list[int], list[int]]] | None:
        """(group, producer tiles, consumer tiles) for every group, if all are enumerable."""
        produce = self.producer_op()
        if produce is None:
            return None
        groups = points_1d(self.future_type.groups.data, [], _MAX_GROUPS)
        if groups is None:
            return None
        table: list[tuple[int, list[int], list[int]]] = []
        for group in groups:
            producers = points_1d(produce.producer_tiles_per_group.data, [group])
            consumers = points_1d(self.consumer_tiles_per_group.data, [group])
            if producers is None or consumers is None:
                return None
            table.append((group, producers, consumers))
        return table

    def dependencies(self, consumer: int, group: int, producers: Sequence[int]) -> list[int]:
        """The producer tiles `consumer` of `group` waits on and receives from."""
        dependency = self.producer_dependency_per_consumer
        if dependency is None:
            return list(producers)
        symbols = [consumer, group][: dependency.data.num_symbols]
        return [p for p in producers if set_contains(dependency.data, [p], symbols)]

    def _verify_dependencies(self, table: list[tuple[int, list[int], list[int]]]) -> None:
        """R3 (dependencies are producers) and R4 (every producer has a reader)."""
        dependency = self.producer_dependency_per_consumer
        if dependency is None:
            return
        for group, producers, consumers in table:
            read: set[int] = set()
            for consumer in consumers:
                symbols = [consumer, group][: dependency.data.num_symbols]
                declared = points_1d(dependency.data, symbols)
                if declared is not None:
                    strays = sorted(set(declared) - set(producers))
                    if strays:
                        raise VerifyException(
                            f"consumer tile {consumer} of group {group} depends on tiles "
                            f"{strays}, which are not producers of that group"
                        )
                read.update(self.dependencies(consumer, group, producers))
            unread = sorted(set(producers) - read)
            if unread:
                raise VerifyException(
                    f"producer tiles {unread} of group {group} are read by no consumer "
                    "(producer_dependency_per_consumer must cover every producer)"
                )

    def _print_sets(self, printer: Printer, trailing_comma: bool) -> None:
        printer.print_string("(")
        printer.print_ssa_value(self.future)
        printer.print_string(") consumer_tiles_per_group = ")
        printer.print_attribute(self.consumer_tiles_per_group)
        if self.producer_dependency_per_consumer is not None:
            printer.print_string(", producer_dependency_per_consumer = ")
            printer.print_attribute(self.producer_dependency_per_consumer)
        if trailing_comma:
            printer.print_string(",")

    def _print_types(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.future.type)
        printer.print_string(" -> ")
        printer.print_list([result.type for result in self.delivered], printer.print_attribute)


@irdl_op_definition
class InterTileReduceOp(_DeliveryOp):
    """Fold the partials of each group with a combiner and deliver the result to consumers.

        %r = ktdp.inter_tile_reduce(%f)
               consumer_tiles_per_group = affine_set<(i)[g] : (i - 4 * g >= 0,
                                                              -i + 4 * g + 3 >= 0)>,
               identity(%zero : tensor<1x64xf16>)
             : !ktdp.tile_future<(tensor<1x64xf16>), groups = #groups> -> tensor<1x64xf16> {
        ^bb0(%lhs: tensor<1x64xf16>, %rhs: tensor<1x64xf16>):
          %s = arith.addf %lhs, %rhs : tensor<1x64xf16>
          ktdp.yield_reduced %s : tensor<1x64xf16>
        }

    With N partial roles the combiner takes 2N arguments (all lhs, then all rhs) and must be
    pure, associative and commutative. Identity, partial and result types are equal. Without
    `producer_dependency_per_consumer = (p)[c(, g)]` a consumer folds every producer of its
    group; with it, only the producers the set names (a partial reduction). The consumer set
    must equal the producer set (all-reduce) or be one tile (reduce-to-one).
    """

    name = "ktdp.inter_tile_reduce"

    future = operand_def(TileFutureType)
    identity = var_operand_def(TensorType)
    combiner = region_def("single_block")

    traits = traits_def(RecursiveMemoryEffect())

    def __init__(
        self,
        future: SSAValue,
        identity: Sequence[SSAValue],
        consumer_tiles_per_group: AffineSet | AffineSetAttr,
        combiner: Region,
        producer_dependency_per_consumer: AffineSet | AffineSetAttr | None = None,
    ):
        if isinstance(consumer_tiles_per_group, AffineSet):
            consumer_tiles_per_group = AffineSetAttr(consumer_tiles_per_group)
        if isinstance(producer_dependency_per_consumer, AffineSet):
            producer_dependency_per_consumer = AffineSetAttr(producer_dependency_per_consumer)
        super().__init__(
            operands=[future, identity],
            result_types=[list(cast(TileFutureType, future.type).partials)],
            properties={
                "consumer_tiles_per_group": consumer_tiles_per_group,
                "producer_dependency_per_consumer": producer_dependency_per_consumer,
            },
            regions=[combiner],
        )

    @classmethod
    def parse(cls, parser: Parser) -> InterTileReduceOp:
        parser.parse_punctuation("(")
        future = parser.parse_unresolved_operand()
        parser.parse_punctuation(")")
        consumers = _parse_set_keyword(parser, "consumer_tiles_per_group")
        parser.parse_punctuation(",")
        dependency: AffineSetAttr | None = None
        if parser.parse_optional_keyword("identity") is None:
            dependency = _parse_set_keyword(parser, "producer_dependency_per_consumer")
            parser.parse_punctuation(",")
            parser.parse_keyword("identity")
        parser.parse_punctuation("(")
        identity: Sequence[SSAValue] = []
        if parser.parse_optional_punctuation(")") is None:
            names = parser.parse_comma_separated_list(
                Parser.Delimiter.NONE, parser.parse_unresolved_operand
            )
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
            parser.parse_punctuation(")")
            identity = parser.resolve_operands(names, types, parser.pos)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        future_type = parse_ktdp_type(parser, TileFutureType)
        parser.parse_punctuation("->")
        result_types = _parse_result_types(parser)
        combiner = parser.parse_region()
        op = cls.build(
            operands=[parser.resolve_operand(future, future_type), identity],
            result_types=[result_types],
            properties={
                "consumer_tiles_per_group": consumers,
                "producer_dependency_per_consumer": dependency,
            },
            attributes=attributes,
            regions=[combiner],
        )
        return op

    @property
    def sums_its_arguments(self) -> bool:
        """Whether the combiner is one `arith.addf` of its two arguments, yielded: the
        only fold `ring.reduce` implements (design note 59)."""
        block = self.combiner.block
        ops = list(block.ops)
        if [o.name for o in ops] != ["arith.addf", "ktdp.yield_reduced"]:
            return False
        add, yielded = ops
        return set(add.operands) == set(block.args) and yielded.operands[0] is add.results[0]

    def print(self, printer: Printer) -> None:
        self._print_sets(printer, trailing_comma=True)
        printer.print_string(" identity(")
        if self.identity:
            printer.print_list(self.identity, printer.print_ssa_value)
            printer.print_string(" : ")
            printer.print_list([value.type for value in self.identity], printer.print_attribute)
        printer.print_string(")")
        self._print_types(printer)
        printer.print_string(" ")
        printer.print_region(self.combiner)

    def verify_(self) -> None:
        self._verify_delivery()
        partials = list(self.future_type.partials)
        identity_types = [value.type for value in self.identity]
        if identity_types != partials:
            raise VerifyException(
                f"identity types ({_types_str(identity_types)}) must equal the result types "
                f"({_types_str(partials)})"
            )
        block = self.combiner.block
        arg_types = [arg.type for arg in block.args]
        if arg_types != partials * 2:
            raise VerifyException(
                f"combiner takes ({_types_str(arg_types)}) but must take "
                f"({_types_str(partials * 2)}): all lhs partials, then all rhs partials"
            )
        _verify_yield(block, self.name, YieldReducedOp.name, partials)
        for nested in self.combiner.walk():
            if _has_memory_effects(nested):
                raise VerifyException(
                    f"combiner must be pure, but {nested.name} has memory effects"
                )
        table = self.enumerate_groups()
        if table is None:
            return
        for group, producers, consumers in table:
            strays = sorted(set(consumers) - set(producers))
            if strays:
                raise VerifyException(
                    f"consumer tiles {strays} of group {group} are not producers of it; "
                    "inter_tile_reduce needs consumer_tiles_per_group within "
                    "producer_tiles_per_group"
                )
            if len(consumers) > 1 and consumers != producers:
                raise VerifyException(
                    f"group {group} has consumers {consumers} and producers {producers}: "
                    "reduce-to-subset is unsupported (consumers must be all producers or one "
                    "tile)"
                )
        self._verify_dependencies(table)


def _has_memory_effects(op: Operation) -> bool:
    """True when `op` declares reads or writes (unknown effects count as pure here)."""
    effects = get_effects(op)
    return bool(effects)


@irdl_op_definition
class InterTileConsumeOp(_DeliveryOp):
    """Deliver one producer's partials unchanged to each consumer tile (broadcast, routing).

        %w = ktdp.inter_tile_consume(%f)
               consumer_tiles_per_group = affine_set<(i)[g] : (i - 4 * g >= 0,
                                                              -i + 4 * g + 3 >= 0)>
             : !ktdp.tile_future<(tensor<64x128xf16>), groups = #one> -> tensor<64x128xf16>

    Every consumer tile needs exactly one source (R8): the group's only producer, or the one
    `producer_dependency_per_consumer = (p)[c(, g)]` picks for it.
    """

    name = "ktdp.inter_tile_consume"

    future = operand_def(TileFutureType)

    traits = traits_def(RecursiveMemoryEffect())

    def __init__(
        self,
        future: SSAValue,
        consumer_tiles_per_group: AffineSet | AffineSetAttr,
        producer_dependency_per_consumer: AffineSet | AffineSetAttr | None = None,
    ):
        if isinstance(consumer_tiles_per_group, AffineSet):
            consumer_tiles_per_group = AffineSetAttr(consumer_tiles_per_group)
        if isinstance(producer_dependency_per_consumer, AffineSet):
            producer_dependency_per_consumer = AffineSetAttr(producer_dependency_per_consumer)
        super().__init__(
            operands=[future],
            result_types=[list(cast(TileFutureType, future.type).partials)],
            properties={
                "consumer_tiles_per_group": consumer_tiles_per_group,
                "producer_dependency_per_consumer": producer_dependency_per_consumer,
            },
        )

    @classmethod
    def parse(cls, parser: Parser) -> InterTileConsumeOp:
        parser.parse_punctuation("(")
        future = parser.parse_unresolved_operand()
        parser.parse_punctuation(")")
        consumers = _parse_set_keyword(parser, "consumer_tiles_per_group")
        dependency: AffineSetAttr | None = None
        if parser.parse_optional_punctuation(",") is not None:
            dependency = _parse_set_keyword(parser, "producer_dependency_per_consumer")
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        future_type = parse_ktdp_type(parser, TileFutureType)
        parser.parse_punctuation("->")
        result_types = _parse_result_types(parser)
        return cls.build(
            operands=[parser.resolve_operand(future, future_type)],
            result_types=[result_types],
            properties={
                "consumer_tiles_per_group": consumers,
                "producer_dependency_per_consumer": dependency,
            },
            attributes=attributes,
        )

    def print(self, printer: Printer) -> None:
        self._print_sets(printer, trailing_comma=False)
        self._print_types(printer)

    def verify_(self) -> None:
        self._verify_delivery()
        table = self.enumerate_groups()
        if table is None:
            return
        for group, producers, consumers in table:
            for consumer in consumers:
                sources = self.dependencies(consumer, group, producers)
                if len(sources) != 1:
                    hint = (
                        "; name one with producer_dependency_per_consumer"
                        if self.producer_dependency_per_consumer is None and sources
                        else ""
                    )
                    raise VerifyException(
                        f"consumer tile {consumer} of group {group} receives from "
                        f"{len(sources)} producers {sources}; inter_tile_consume needs exactly "
                        f"one{hint}"
                    )
        self._verify_dependencies(table)
