"""What every spyre-legalize pattern set shares: the run's rewriter and memo
(`LegalizeRewriter`), the refusal a pattern raises (`Unsupported`), readers of an ATen op's
arguments and operands, and small builders used by several families (casts, broadcasts of
rows, unary SFU ops).

A pattern ("selector") takes one `spyre.aten` op and the run's `LegalizeRewriter`, inserts
the Spyre ops that compute it before it, and returns their result (a value, a list of
values for a multi-result op, or one op that replaces it), or raises `Unsupported` with the
reason, which the pass reports with the op's FX node and source line.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import Rewriter

from spyrec.dialects.spyre import (
    BINARY_OPS,
    UNARY_OPS,
    AtenOp,
    CastOp,
    ExpandRowsOp,
    ParamOp,
    ReshapeOp,
)
from spyrec.passes.graph.graph_build import element as _element_name
from spyrec.passes.graph.graph_build import emit as _emit
from spyrec.passes.graph.graph_build import shape as _shape
from spyrec.target import SpyreTarget

FLOAT_ELEMENTS = ("f16", "bf16", "f32")
INT_ELEMENTS = ("i32", "i64")


# the largest constant summation matrix a leading-dim reduction may store (elements)
MAX_ROW_MATRIX = 1 << 22


class LegalizeRewriter(Rewriter):
    """The rewriter of one spyre-legalize run, and what that run remembers between the
    ops it selects; made afresh by each `SpyreLegalize.apply`, so two runs (or two modules)
    never share it."""

    def __init__(self, target: SpyreTarget) -> None:
        self.target = target  # the description the module is compiled for
        # the transposed copies made of each weight op, for reuse by its other readers
        self.transposed: dict[ParamOp, list[ParamOp]] = {}
        # device transposes (`movement.device_transpose`) by their result op: the value
        # they transpose
        self.device_transposes: dict[Operation, SSAValue] = {}
        # additive masks made from predicates, by (predicate, query element type)
        self.additive_masks: dict[tuple[SSAValue, str], SSAValue] = {}
        # the n x n identities device transposes multiply by, by (n, element type): one
        # per size and type, not one per transpose (n^2 bytes each)
        self.identities: dict[tuple[int, str], list[ParamOp]] = {}


class Unsupported(Exception):
    """One op cannot be selected; the message says why."""


Selector = Callable[[AtenOp, LegalizeRewriter], "Operation | SSAValue | list[SSAValue | None]"]


def arg(op: AtenOp, name: str, default: object = None) -> object:
    """The non-tensor argument `name` of `op` as a Python value (`default` when absent)."""
    attr = op.args.data.get(name)
    if attr is None:
        return default
    if isinstance(attr, IntegerAttr):
        if attr.type == IntegerType(1):
            return bool(attr.value.data)
        return attr.value.data
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    return attr


def operand(op: AtenOp, name: str) -> SSAValue | None:
    """The tensor operand `name` of `op`, or None when that argument is not a tensor."""
    names = [n.data for n in op.operand_names.data]  # type: ignore[attr-defined]
    return op.operands[names.index(name)] if name in names else None


def number_arg(op: AtenOp, name: str) -> float | None:
    """A scalar argument as a float (None when absent); a tensor there is refused."""
    value = arg(op, name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unsupported(f"`{name}` is not a Python number")
    return float(value)


def require_float(op: AtenOp) -> None:
    for v in [*op.operands, *op.results]:
        if _element_name(v) not in FLOAT_ELEMENTS:
            raise Unsupported(f"element type {_element_name(v)} (only f16, bf16, f32 so far)")


def with_shape(value: SSAValue, shape: list[int]) -> TensorType:
    assert isinstance(value.type, TensorType)
    return TensorType(value.type.element_type, shape)


def numel(value: SSAValue) -> int:
    out = 1
    for d in _shape(value):
        out *= d
    return out


def cast_to(op: AtenOp, rewriter: LegalizeRewriter, value: SSAValue, like: SSAValue) -> SSAValue:
    """`value` in the element type of `like`, its shape kept."""
    if _element_name(value) == _element_name(like):
        return value
    return _emit(rewriter, op, CastOp(value, with_shape(like, _shape(value))))


def unary_op(op: AtenOp, rewriter: LegalizeRewriter, name: str, x: SSAValue) -> SSAValue:
    return _emit(rewriter, op, UNARY_OPS[name](x, x.type))


def int_constant(value: SSAValue) -> np.ndarray | None:
    """The values of a small folded integer / boolean constant (`spyre.int_values`)."""
    owner = value.owner
    if isinstance(owner, ParamOp) and "spyre.int_values" in owner.attributes:
        values = owner.attributes["spyre.int_values"].get_values()  # type: ignore[attr-defined]
        return np.array(values, dtype=np.int64).reshape(_shape(value))
    return None


def scalar_constant(value: SSAValue) -> float | None:
    """The value of a one-element constant (a 0-d or size-1 weight, buffer, constant or
    folded node: a float one carries its `value`, an integer or boolean one its
    `spyre.int_values`), else None."""
    owner = value.owner
    if not isinstance(owner, ParamOp) or numel(value) != 1:
        return None
    if owner.value is not None:
        first = owner.value.get_values()[0]
        assert isinstance(first, int | float)  # not a complex constant
        return float(first)
    values = int_constant(value)
    return None if values is None else float(values.reshape(-1)[0])


def broadcast_rows(op: AtenOp, rewriter: LegalizeRewriter, value: SSAValue,
                   out: list[int], column: bool = False) -> SSAValue:
    """`value` broadcast to the shape `out` by NumPy's rules, as the kernels read it: the
    full tensor, one row of it (broadcast over all rows) or one column of it (one value per
    row, broadcast along the row) as is; an operand repeated along leading dims (a [16, 64]
    table for [2, 16, 64] rows, as rotary embeddings multiply; a [B, 1, 1, S] mask for
    [B, H, L, S] scores) expanded to the output's rows by spyre.expand_rows, a DMA-only
    move. An operand whose innermost dim is 1 where the output's is not (a [B, 1, 1]
    scale, a 0-d tensor) is a column: the kernels broadcast it along its rows but not over
    leading dims, so it is expanded to one value per output row. `column`: treat `value`
    as a column even when the output's innermost dim is 1 too."""
    shape = _shape(value)
    padded = [1] * (len(out) - len(shape)) + shape
    column = column or (padded[-1:] == [1] and out[-1:] != [1])
    rows = math.prod(padded[:-1])
    if rows == math.prod(out[:-1]) or (rows == 1 and not column):
        return value
    if padded != shape:
        value = _emit(rewriter, op, ReshapeOp(value, with_shape(value, padded)))
    return _emit(rewriter, op, ExpandRowsOp(value, with_shape(value, out[:-1] + padded[-1:])))


# binary SFU ops whose operands may trade places (the ISA broadcasts its second operand)
COMMUTATIVE = ("add", "mul", "maximum", "minimum")


def broadcast_operands(op: AtenOp, rewriter: LegalizeRewriter, kind: str, a: SSAValue,
                       b: SSAValue, out: list[int]) -> tuple[SSAValue, SSAValue]:
    """The operands of a `kind` b with the result shape `out`, each as `broadcast_rows`
    gives it; a one-row first operand of an op that cannot trade places (sub, div, keep)
    against a full second one (not a column: that is an outer product) is expanded to the
    output's rows (the SFU broadcasts only its second operand along rows)."""
    a, b = (broadcast_rows(op, rewriter, v, out) for v in (a, b))

    def rows(v: SSAValue) -> int:  # 0: a column (one value per row)
        dims = _shape(v) or [1]
        return math.prod(dims[:-1]) if dims[-1:] == out[-1:] else 0

    if kind not in COMMUTATIVE and rows(a) == 1 < rows(b) == math.prod(out[:-1]):
        padded = [1] * (len(out) - len(_shape(a))) + _shape(a)
        if padded != _shape(a):
            a = _emit(rewriter, op, ReshapeOp(a, with_shape(a, padded)))
        a = _emit(rewriter, op, ExpandRowsOp(a, with_shape(a, out)))
    return a, b


def broadcast_binary(op: AtenOp, rewriter: LegalizeRewriter, kind: str, a: SSAValue,
                     b: SSAValue) -> SSAValue:
    """a `kind` b on the SFU with NumPy's broadcasting: the result has the broadcast shape
    of a and b and a's element type; the operands are read as `broadcast_operands` gives
    them."""
    out = list(np.broadcast_shapes(tuple(_shape(a)), tuple(_shape(b))))
    a2, b2 = broadcast_operands(op, rewriter, kind, a, b, out)
    return _emit(rewriter, op, BINARY_OPS[kind](a2, b2, with_shape(a, out)))
