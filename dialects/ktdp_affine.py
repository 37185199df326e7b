"""Affine helpers for the ktdp dialect (and the KTIR interpreter): SSA subscripts and sets.

Access tiles write their subscripts as affine expressions over SSA values (`%view[%r + %i, 0]`,
`(%t mod 64)`). `parse_ssa_affine_map`, `parse_ssa_affine_expr` and `print_ssa_affine_expr`
convert between that syntax and affine maps whose dims are the SSA values. `box_extents` reads
per-dim extents off an affine set whose constraints each bound one dim, and
`verify_tile_extents` checks an access tile's shape against them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any, cast

from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType
from xdsl.ir import SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSet,
    AffineSymExpr,
)
from xdsl.ir.affine.affine_set import AffineConstraintExpr, AffineConstraintKind
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException


def parse_ssa_affine_map(parser: Parser) -> tuple[AffineMap, Sequence[SSAValue[IndexType]]]:
    """Parse `[expr, ...]` over SSA values; dim I of the map is the I-th distinct value."""
    ssa_map, values = parser.parse_affine_map_of_ssa_ids()
    # xDSL numbers the SSA values as symbols; KTIR's base_map has them as dims.
    dims = [AffineExpr.dimension(i) for i in range(len(values))]
    return ssa_map.replace_dims_and_symbols([], dims, len(values), 0), values


def parse_ssa_affine_expr(
    parser: Parser, name_to_expr: Callable[[UnresolvedOperand], AffineExpr]
) -> AffineExpr:
    """Parse one affine expression whose variables are SSA names (`%t floordiv 64`).

    `name_to_expr` turns each SSA name into the dim or symbol it stands for. Grammar, lowest
    precedence first: `+`/`-`; then `*`, `floordiv`, `ceildiv`, `mod` (left-associative);
    then unary `-`, parentheses, integer literals and SSA names.
    """
    start = parser.pos
    try:
        return _parse_sum(parser, name_to_expr)
    except NotImplementedError as error:  # xDSL's AffineExpr rejects semi-affine products
        parser.raise_error(f"subscripts must be affine: {error}", start, parser.pos)


def _parse_sum(
    parser: Parser, name_to_expr: Callable[[UnresolvedOperand], AffineExpr]
) -> AffineExpr:
    expr = _parse_product(parser, name_to_expr)
    while True:
        if parser.parse_optional_punctuation("+") is not None:
            expr = expr + _parse_product(parser, name_to_expr)
        elif parser.parse_optional_punctuation("-") is not None:
            expr = expr - _parse_product(parser, name_to_expr)
        else:
            return expr


_PRODUCT_KEYWORDS = {
    "floordiv": AffineBinaryOpKind.FloorDiv,
    "ceildiv": AffineBinaryOpKind.CeilDiv,
    "mod": AffineBinaryOpKind.Mod,
}


def _parse_product(
    parser: Parser, name_to_expr: Callable[[UnresolvedOperand], AffineExpr]
) -> AffineExpr:
    expr = _parse_unary(parser, name_to_expr)
    while True:
        operator = parser.pos
        if parser.parse_optional_punctuation("*") is not None:
            kind = AffineBinaryOpKind.Mul
        elif (keyword := parser.parse_optional_keyword_in(tuple(_PRODUCT_KEYWORDS))) is not None:
            kind = _PRODUCT_KEYWORDS[keyword]
        elif parser.parse_optional_punctuation("/") is not None:
            # RFC 0682's examples write `%t / 64`; the dialect never accepted it
            parser.raise_error(
                "'/' is not an affine operator; KTIR spells integer division 'floordiv'",
                operator,
                operator + 1,
            )
        else:
            return expr
        expr = AffineExpr.binary(kind, expr, _parse_unary(parser, name_to_expr))


def _parse_unary(
    parser: Parser, name_to_expr: Callable[[UnresolvedOperand], AffineExpr]
) -> AffineExpr:
    if parser.parse_optional_punctuation("-") is not None:
        return -_parse_unary(parser, name_to_expr)
    if parser.parse_optional_punctuation("(") is not None:
        expr = _parse_sum(parser, name_to_expr)
        parser.parse_punctuation(")")
        return expr
    if (value := parser.parse_optional_integer(allow_boolean=False)) is not None:
        return AffineExpr.constant(value)
    if (name := parser.parse_optional_unresolved_operand()) is not None:
        return name_to_expr(name)
    parser.raise_error("expected an SSA value, an integer or '(' in an affine expression")


_ADD_PRECEDENCE = 1
_MUL_PRECEDENCE = 2


def print_ssa_affine_expr(
    printer: Printer, expr: AffineExpr, operands: Sequence[SSAValue], min_prec: int = 0
) -> None:
    """Print `expr` with each dim `dI` spelled as `operands[I]`, MLIR style (`%a - %b * 2`).

    Parenthesises only where the parser would otherwise build a different tree, so printing
    the parse of the output gives the output back.
    """
    match expr:
        case AffineConstantExpr(value=value):
            printer.print_string(str(value))
        case AffineDimExpr(position=position):
            printer.print_ssa_value(operands[position])
        case AffineSymExpr(position=position):
            printer.print_string(f"s{position}")
        case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Add, lhs=lhs, rhs=rhs):
            with printer.in_parens() if min_prec > _ADD_PRECEDENCE else nullcontext():
                print_ssa_affine_expr(printer, lhs, operands, _ADD_PRECEDENCE)
                match rhs:
                    case AffineConstantExpr(value=value) if value < 0:
                        printer.print_string(f" - {-value}")
                    case AffineBinaryOpExpr(
                        kind=AffineBinaryOpKind.Mul, lhs=term, rhs=AffineConstantExpr(value=c)
                    ) if c < 0:
                        printer.print_string(" - ")
                        scaled = term if c == -1 else term * -c
                        print_ssa_affine_expr(printer, scaled, operands, _ADD_PRECEDENCE + 1)
                    case _:
                        printer.print_string(" + ")
                        print_ssa_affine_expr(printer, rhs, operands, _ADD_PRECEDENCE + 1)
        case AffineBinaryOpExpr(
            kind=AffineBinaryOpKind.Mul, lhs=lhs, rhs=AffineConstantExpr(value=-1)
        ):
            printer.print_string("-")
            print_ssa_affine_expr(printer, lhs, operands, _MUL_PRECEDENCE + 1)
        case AffineBinaryOpExpr(kind=kind, lhs=lhs, rhs=rhs):
            with printer.in_parens() if min_prec > _MUL_PRECEDENCE else nullcontext():
                print_ssa_affine_expr(printer, lhs, operands, _MUL_PRECEDENCE)
                printer.print_string(f" {kind.get_token()} ")
                print_ssa_affine_expr(printer, rhs, operands, _MUL_PRECEDENCE + 1)
        case _:
            raise ValueError(f"unexpected affine expression {expr}")


def linear_terms(expr: AffineExpr) -> tuple[dict[AffineExpr, int], int] | None:
    """`expr` as ({dim or symbol: coefficient}, constant), or None if it is not linear."""
    match expr:
        case AffineConstantExpr(value=value):
            return {}, value
        case AffineDimExpr() | AffineSymExpr():
            return {expr: 1}, 0
        case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Add, lhs=lhs, rhs=rhs):
            left, right = linear_terms(lhs), linear_terms(rhs)
            if left is None or right is None:
                return None
            terms = dict(left[0])
            for var, coefficient in right[0].items():
                terms[var] = terms.get(var, 0) + coefficient
            return {v: c for v, c in terms.items() if c}, left[1] + right[1]
        case AffineBinaryOpExpr(
            kind=AffineBinaryOpKind.Mul, lhs=lhs, rhs=AffineConstantExpr(value=factor)
        ):
            inner = linear_terms(lhs)
            if inner is None:
                return None
            return {v: c * factor for v, c in inner[0].items() if c * factor}, inner[1] * factor
        case _:
            return None


def box_bounds(
    affine_set: AffineSet, ignore_coupled: bool = False
) -> list[tuple[int | None, int | None]] | None:
    """Per-dim inclusive (lower, upper) bounds of `affine_set` if it is a box.

    Returns None when some constraint couples dims or is not linear, unless `ignore_coupled`,
    which skips such constraints (the result then bounds the set's bounding box from outside).
    A bound that is missing or involves symbols is None. An empty interval has lower > upper.
    """
    lower: list[int | None] = [None] * affine_set.num_dims
    upper: list[int | None] = [None] * affine_set.num_dims
    symbolic = [False] * affine_set.num_dims
    for constraint in affine_set.constraints:
        linear = linear_terms(constraint.lhs - constraint.rhs)
        terms, constant = linear if linear is not None else ({}, 0)
        dims = [var for var in terms if isinstance(var, AffineDimExpr)]
        if linear is None or len(dims) > 1:
            if ignore_coupled:
                continue
            return None
        if not dims:
            continue
        dim = dims[0].position
        if len(terms) > 1:
            symbolic[dim] = True
            continue
        coefficient = terms[dims[0]]
        if constraint.kind == AffineConstraintKind.le:
            coefficient, constant = -coefficient, -constant
        # coefficient * d + constant  (>= | ==)  0
        low = -(constant // coefficient) if coefficient > 0 else None
        high = constant // -coefficient if coefficient < 0 else None
        if constraint.kind == AffineConstraintKind.eq:
            if constant % coefficient:
                low, high = 1, 0
            else:
                low = high = -constant // coefficient
        if low is not None:
            lower[dim] = low if lower[dim] is None else max(low, cast(int, lower[dim]))
        if high is not None:
            upper[dim] = high if upper[dim] is None else min(high, cast(int, upper[dim]))
    return [
        (None, None) if sym else (lo, hi)
        for lo, hi, sym in zip(lower, upper, symbolic, strict=True)
    ]


def is_box(affine_set: AffineSet) -> bool:
    """True when every constraint is linear in at most one dim and mentions no symbol."""
    for constraint in affine_set.constraints:
        linear = linear_terms(constraint.lhs - constraint.rhs)
        if linear is None or len(linear[0]) > 1:
            return False
        if any(not isinstance(var, AffineDimExpr) for var in linear[0]):
            return False
    return True


def box_extents(affine_set: AffineSet) -> list[int | None] | None:
    """Per-dim extent of `affine_set` if it is a box (every constraint bounds one dim).

    Returns None when some constraint couples dims or is not linear. A dim whose bounds are
    missing or involve symbols gets None. An empty interval has extent 0.
    """
    bounds = box_bounds(affine_set)
    if bounds is None:
        return None
    return [None if lo is None or hi is None else max(0, hi - lo + 1) for lo, hi in bounds]


def bind_symbols(affine_set: AffineSet, symbols: Sequence[int]) -> AffineSet:
    """`affine_set` with its leading symbols replaced by the given constants."""
    values = [AffineExpr.constant(value) for value in symbols]
    remaining = [AffineExpr.symbol(i) for i in range(affine_set.num_symbols - len(values))]
    constraints = tuple(
        AffineConstraintExpr(
            constraint.kind,
            constraint.lhs.replace_dims_and_symbols(
                [AffineExpr.dimension(i) for i in range(affine_set.num_dims)],
                [*values, *remaining],
            ),
            constraint.rhs.replace_dims_and_symbols(
                [AffineExpr.dimension(i) for i in range(affine_set.num_dims)],
                [*values, *remaining],
            ),
        )
        for constraint in affine_set.constraints
    )
    return AffineSet(affine_set.num_dims, len(remaining), constraints)


def set_contains(affine_set: AffineSet, dims: Sequence[Any], symbols: Sequence[int] = ()) -> Any:
    """Whether the points `dims` satisfy every constraint; works on ints and NumPy arrays."""
    inside: Any = True
    for constraint in affine_set.constraints:
        value = constraint.lhs.eval(dims, symbols) - constraint.rhs.eval(dims, symbols)
        match constraint.kind:
            case AffineConstraintKind.ge:
                holds = value >= 0
            case AffineConstraintKind.le:
                holds = value <= 0
            case AffineConstraintKind.eq:
                holds = value == 0
        inside = inside & holds
    return inside


def points_1d(
    affine_set: AffineSet, symbols: Sequence[int], limit: int = 1 << 16
) -> list[int] | None:
    """The points of a one-dim set with all symbols bound, in ascending order.

    None when the set is not bounded by single-dim constraints or spans more than `limit`
    values (the caller then skips whatever check needed the points).
    """
    bound = bind_symbols(affine_set, symbols)
    bounds = box_bounds(bound)
    if bounds is None or bound.num_dims != 1:
        return None
    low, high = bounds[0]
    if low is None or high is None or high - low + 1 > limit:
        return None
    return [point for point in range(low, high + 1) if set_contains(bound, [point])]


def shape_str(shape: Sequence[int]) -> str:
    """`32x?x64`, the way shapes are written in types."""
    return "x".join("?" if dim == DYNAMIC_INDEX else str(dim) for dim in shape)


def verify_tile_extents(
    tile_shape: Sequence[int], tile_set: AffineSet, order: AffineMap, set_name: str
) -> None:
    """Check a tile's static extents against its box-shaped set, permuted by the order.

    Points are enumerated in order(p) order, so the tile's dim j spans the set's extent in the
    dim that order result j names. Sets that are not boxes, orders that are not permutations,
    and `?` extents on either side are not checked.
    """
    extents = box_extents(tile_set)
    if extents is None or not order.is_projected_permutation():
        return
    set_shape = [DYNAMIC_INDEX if extent is None else extent for extent in extents]
    expected = order.apply_permutation(set_shape)
    for position, (actual, extent) in enumerate(zip(tile_shape, expected, strict=True)):
        if DYNAMIC_INDEX not in (actual, extent) and actual != extent:
            raise VerifyException(
                f"access tile dim {position} is {actual} but {set_name} spans {extent} there "
                f"(set extents {shape_str(set_shape)} permuted by the order)"
            )


def print_symbols_and_attrs(printer: Printer, symbols: Sequence[SSAValue],
                            props: dict[str, Any], attributes: dict[str, Any]) -> None:
    """The ` symbols(%n, ...) {attrs}` tail the access-tile ops share."""
    if symbols:
        printer.print_string(" symbols")
        with printer.in_parens():
            printer.print_list(symbols, printer.print_ssa_value)
    printer.print_string(" ")
    printer.print_attr_dict(props | attributes)
