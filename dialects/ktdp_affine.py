"""Affine helpers for the ktdp dialect: subscripts over SSA values and box-shaped sets.

`construct_access_tile` writes its base point as affine expressions over SSA values
(`%view[%r + %i, 0]`); `parse_ssa_affine_map` and `print_ssa_affine_expr` convert between that
syntax and an `AffineMap` whose dims are the SSA values. `box_extents` reads the per-dim extents
off an affine set whose constraints each bound a single dim.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from typing import cast

from xdsl.dialects.builtin import IndexType
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
from xdsl.ir.affine.affine_set import AffineConstraintKind
from xdsl.parser import Parser
from xdsl.printer import Printer


def parse_ssa_affine_map(parser: Parser) -> tuple[AffineMap, Sequence[SSAValue[IndexType]]]:
    """Parse `[expr, ...]` over SSA values; dim I of the map is the I-th distinct value."""
    ssa_map, values = parser.parse_affine_map_of_ssa_ids()
    # xDSL numbers the SSA values as symbols; KTIR's base_map has them as dims.
    dims = [AffineExpr.dimension(i) for i in range(len(values))]
    return ssa_map.replace_dims_and_symbols([], dims, len(values), 0), values


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


def _linear_terms(expr: AffineExpr) -> tuple[dict[AffineExpr, int], int] | None:
    """`expr` as ({dim or symbol: coefficient}, constant), or None if it is not linear."""
    match expr:
        case AffineConstantExpr(value=value):
            return {}, value
        case AffineDimExpr() | AffineSymExpr():
            return {expr: 1}, 0
        case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Add, lhs=lhs, rhs=rhs):
            left, right = _linear_terms(lhs), _linear_terms(rhs)
            if left is None or right is None:
                return None
            terms = dict(left[0])
            for var, coefficient in right[0].items():
                terms[var] = terms.get(var, 0) + coefficient
            return {v: c for v, c in terms.items() if c}, left[1] + right[1]
        case AffineBinaryOpExpr(
            kind=AffineBinaryOpKind.Mul, lhs=lhs, rhs=AffineConstantExpr(value=factor)
        ):
            inner = _linear_terms(lhs)
            if inner is None:
                return None
            return {v: c * factor for v, c in inner[0].items() if c * factor}, inner[1] * factor
        case _:
            return None


def box_extents(affine_set: AffineSet) -> list[int | None] | None:
    """Per-dim extent of `affine_set` if it is a box (every constraint bounds one dim).

    Returns None when some constraint couples dims or is not linear. A dim whose bounds are
    missing or involve symbols gets None. An empty interval has extent 0.
    """
    lower: list[int | None] = [None] * affine_set.num_dims
    upper: list[int | None] = [None] * affine_set.num_dims
    symbolic = [False] * affine_set.num_dims
    for constraint in affine_set.constraints:
        linear = _linear_terms(constraint.lhs - constraint.rhs)
        if linear is None:
            return None
        terms, constant = linear
        dims = [var for var in terms if isinstance(var, AffineDimExpr)]
        if len(dims) > 1:
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
        None if sym or lo is None or hi is None else max(0, hi - lo + 1)
        for lo, hi, sym in zip(lower, upper, symbolic, strict=True)
    ]
