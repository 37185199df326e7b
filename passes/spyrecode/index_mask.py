"""An index-dependent mask on concrete values: the `index_mask` generics of spyre-legalize-ktir
(design note 109), evaluated for one core's tile as sfu.mask instructions.

The generic's body computes a condition from `linalg.index 0` (the row), `linalg.index 1`
(the column) and index values of the kernel (its inputs after the tile: loop counters, core
coordinates, scalar arguments), and selects the tile's element where the condition keeps it,
a constant elsewhere. `runs(...)` evaluates the condition over a corelet's rows at once (NumPy
on int64, with MLIR's meaning of each integer op: unsigned ops on values that must not be
negative, `divsi` truncating toward zero), checks that every row keeps a prefix of its columns
and returns one sfu.mask per run of rows whose limits step by one (sfu.mask masks column c of
its row r when c > r + diag). A row that keeps other columns, a zero divisor or a negative
operand of an unsigned op is refused with the core and the row; a value still symbolic (a
template being built) raises `Symbolic`, so the core is walked on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, IntegerType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue

from spyrec.passes.spyrecode.index_division import DIVISIONS
from spyrec.passes.spyrecode.schedule_templates import Affine, Symbolic

Array = np.ndarray

_BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
    "arith.minsi": np.minimum, "arith.maxsi": np.maximum, "arith.andi": np.bitwise_and,
    "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor,
    "arith.minui": np.minimum, "arith.maxui": np.maximum,
}
# arith.cmpi predicates by number: eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge
_CMPI: list[Callable[[Array, Array], Array]] = [
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.less, np.less_equal, np.greater, np.greater_equal]
_UNSIGNED = ("arith.divui", "arith.remui", "arith.minui", "arith.maxui")


def _program(it: Any, key: object) -> tuple:
    """The generic's body as (result, op name, operands, constant or predicate) steps, its
    block arguments, whether the select keeps the tile where the condition holds, and the
    condition."""
    op = key[0]  # type: ignore[index]
    assert isinstance(op, linalg.GenericOp)
    block = op.body.block
    steps = []
    select = None
    for inner in block.ops:
        if inner.name == "arith.select":
            select = inner
        elif isinstance(inner, linalg.IndexOp):
            steps.append((inner.result, "linalg.index", (), inner.dim.value.data))
        elif isinstance(inner, arith.ConstantOp):
            if isinstance(inner.value, IntegerAttr):
                steps.append((inner.result, "arith.constant", (), inner.value.value.data))
        elif inner.name == "arith.cmpi":
            predicate = inner.properties["predicate"]
            assert isinstance(predicate, IntegerAttr)
            steps.append((inner.results[0], "arith.cmpi", tuple(inner.operands),
                          predicate.value.data))
        elif not isinstance(inner, linalg.YieldOp):
            steps.append((inner.results[0], inner.name, tuple(inner.operands), None))
    assert select is not None
    bits = tuple(r for r, *_ in steps if isinstance(r.type, IntegerType) and r.type.width.data == 1)
    return (steps, tuple(block.args), "spyre.keep_true" in op.attributes, select.operands[0],
            bits)


def _divide(name: str, x: Array, y: Array) -> Array:
    """An integer division op on arrays (y has no zero): MLIR's rounding, as the walk's own
    `index_division.DIVISIONS` has it for one value; floordivsi and ceildivsi round down
    and up."""
    if name == "arith.floordivsi":
        return np.floor_divide(x, y)
    if name == "arith.ceildivsi":
        return -np.floor_divide(-x, y)
    return np.vectorize(DIVISIONS[name], otypes=[np.int64])(x, y)


def runs(it: Any, op: Operation, ins: list[object], row: int, count: int,
         cols: int) -> list[tuple[int, int, int]]:
    """(first row relative to `row`, rows, diag) of each sfu.mask of rows [row, row + count)."""
    steps, args, keep_true, cond, bits = it.memo((op, "index_mask"), _program)
    env: dict[SSAValue, Array | int] = {}
    for arg, given in zip(args[1:], ins[1:]):
        if isinstance(given, Affine):
            raise Symbolic("a mask whose condition depends on a symbolic value")
        env[arg] = int(given)  # type: ignore[call-overload]
    rows = np.arange(row, row + count, dtype=np.int64)[:, None]
    columns = np.arange(cols, dtype=np.int64)[None, :]
    for result, name, operands, extra in steps:
        a = [np.asarray(env[v], dtype=np.int64) for v in operands]
        value: Array | int
        if name == "linalg.index":
            value = rows if extra == 0 else columns
        elif name == "arith.constant":
            value = int(extra)
        elif name == "arith.index_cast":
            value = a[0]
        elif name == "arith.cmpi":
            x, y = a
            if extra >= 6:  # unsigned: a negative index compares as a huge one
                x, y = x.view(np.uint64), y.view(np.uint64)
            value = _CMPI[extra](x, y).astype(np.int64)
        else:
            x, y = a
            if name in _UNSIGNED and (np.any(x < 0) or np.any(y < 0)):
                raise it.error(op, f"{name} of a negative value in its mask (rows {row} to "
                               f"{row + count - 1}) is undefined")
            if name not in _BINARY and np.any(y == 0):
                raise it.error(op, f"{name} by zero in its mask (rows {row} to "
                               f"{row + count - 1})")
            value = _BINARY[name](x, y) if name in _BINARY else _divide(name, x, y)
        # an i1 (`true` may be stored as -1) keeps its one bit, so `xori %c, true` negates
        env[result] = np.asarray(value) & 1 if result in bits else value
    keep = np.broadcast_to(np.asarray(env[cond]) != 0, (count, cols))
    if not keep_true:
        keep = ~keep
    # the columns each row keeps: a prefix [0, limit)
    limits = np.where(keep.all(axis=1), cols, np.argmin(keep, axis=1))
    prefix = columns < limits[:, None]
    if not np.array_equal(keep, prefix):
        bad = int(np.argmax((keep != prefix).any(axis=1)))
        raise it.error(op, f"its mask keeps columns {_spans(keep[bad])} of row {row + bad}, "
                       "not a prefix of the row; the SFU masks the columns past a limit "
                       "that steps by one a row (sfu.mask): keep a prefix of each row, or "
                       "compute the mask as a tensor and add it")
    out: list[tuple[int, int, int]] = []
    for r, limit in enumerate(limits.tolist()):
        if out:
            first, n, diag = out[-1]
            reach = r - first + diag + 1  # the run masks the columns from `reach` on here
            if min(max(reach, 0), cols) == limit:
                out[-1] = (first, n + 1, diag)
                continue
        # a row masked whole starts a run that masks every row after it whole too
        out.append((r, 1, limit - 1 if limit else -count - 1))
    return out


def _spans(kept: Array) -> str:
    """The set columns of a boolean row as `a..b` spans: `9..31`, `0, 4..7`."""
    columns = np.flatnonzero(kept).tolist()
    spans: list[list[int]] = []
    for c in columns:
        if spans and spans[-1][1] == c - 1:
            spans[-1][1] = c
        else:
            spans.append([c, c])
    return ", ".join(f"{a}..{b}" if b > a else f"{a}" for a, b in spans) or "none"
