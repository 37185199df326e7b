"""Index divisions on concrete values: the core-group arithmetic of KTIR kernels
(`%group = arith.divui %pid, %c4`, `%lane = arith.remui %pid, %c4`; design note 94).

`DIVISIONS` maps each division op's name to its meaning on Python ints, as MLIR defines it:
`divui` / `remui` on non-negative values, `divsi` truncating toward zero and `remsi` with the
dividend's sign. `divide(name, a, b)` is None when the op is not defined there (a zero
divisor, a negative operand of an unsigned division): the caller refuses, never guesses.
spyre-schedule-dataflow folds them per core (a core coordinate still symbolic makes each core
walked on its own), and the frontend's pointer arithmetic folds them per core likewise.
"""

from __future__ import annotations

from collections.abc import Callable


def _trunc_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


DIVISIONS: dict[str, Callable[[int, int], int]] = {
    "arith.divui": lambda a, b: a // b,
    "arith.remui": lambda a, b: a % b,
    "arith.divsi": _trunc_div,
    "arith.remsi": lambda a, b: a - b * _trunc_div(a, b),
}


def divide(name: str, a: int, b: int) -> int | None:
    """`a name b` (a key of DIVISIONS), or None where the op is undefined."""
    if b == 0 or (name.endswith("ui") and (a < 0 or b < 0)):
        return None
    return DIVISIONS[name](a, b)
