"""Row maps: which stored row a kernel reads or writes for each logical row.

In the row-sticked layout a tensor is rows x sticks, so `spyre.reshape`, `spyre.permute_rows`,
`spyre.expand_rows` and `spyre.slice_rows` only change which stored row a logical leading index
names. A chain of them between a stored tensor and the op that reads it (or between an op and the
tensor it writes) is a map from the op's leading index (i_0, ..., i_{n-1}) to a stored row. When
that map has the form

    f(i) = base + sum_j coef_j * (i_j floordiv div_j)        (div_{n-1} = 1)

every logical dim moves with one stride (in groups of `div_j`, as the query heads sharing a
key/value head do), and a run of rows along the last logical dim is a run of stored rows
`coef_{n-1}` apart: one DMA moves it. The reader can then take the stored tensor itself and
the chain costs no kernel and no LPDDR round trip.

`fit` finds that form by evaluating the chain on every index (shapes are static and small)
and checking the fit exactly, so any chain it accepts is correct by construction; one it
rejects is left to run as its own data-movement kernel.

Rows are counted in units of the reader's row (its innermost dim, padded to whole sticks). A
reshape that splits or merges the innermost dim in whole sticks ([B, S, H*D] -> [B, S, H, D])
keeps the element order, so a stored row of H*D elements is H unit rows: each value is
indexed by its leading dims plus, when its rows are wider than the unit, the unit's place in
the row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineExpr

from spyrec.dialects.spyre import (
    ELEMENT_BYTES,
    STICK_BYTES,
    ExpandRowsOp,
    PermuteRowsOp,
    ReshapeOp,
    SliceRowsOp,
)

MOVE_OPS = (ReshapeOp, PermuteRowsOp, ExpandRowsOp, SliceRowsOp)
Index = list[np.ndarray]


def lead_shape(value: SSAValue) -> tuple[int, ...]:
    """The leading (row) dims of a tensor: all but the innermost."""
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape()[:-1])


def padded_cols(value: SSAValue) -> int:
    """The innermost dim of a tensor padded to whole 128-byte sticks, in elements."""
    assert isinstance(value.type, TensorType)
    size = ELEMENT_BYTES[str(value.type.element_type)]
    shape = value.type.get_shape()
    per_stick = STICK_BYTES // size
    return -(-(shape[-1] if shape else 1) // per_stick) * per_stick


def unit_shape(value: SSAValue, unit: int) -> tuple[int, ...] | None:
    """The leading shape of `value` in rows of `unit` elements (None if its rows are not a
    whole number of units)."""
    cols = padded_cols(value)
    if cols == unit:
        return lead_shape(value)
    if cols % unit:
        return None
    return (*lead_shape(value), cols // unit)


def ravel(index: Index, shape: Sequence[int]) -> np.ndarray:
    """Row-major flat row of a multi-index (an empty shape has the one row 0)."""
    flat = np.zeros_like(index[0]) if index else np.zeros((), np.int64)
    for i, extent in zip(index, shape):
        flat = flat * extent + i
    return flat


def unravel(flat: np.ndarray, shape: Sequence[int]) -> Index:
    out = []
    for extent in reversed(shape):
        out.append(flat % extent)
        flat = flat // extent
    return out[::-1]


class NotRows(Exception):
    """A chain whose values are not whole numbers of unit rows."""


def _units(value: SSAValue, unit: int) -> tuple[int, ...]:
    shape = unit_shape(value, unit)
    if shape is None:
        raise NotRows
    return shape


def index_back(op: Operation, index: Index, unit: int) -> Index:
    """The operand index of each result index of a move op, in rows of `unit` elements."""
    if isinstance(op, ReshapeOp):
        return unravel(ravel(index, _units(op.result, unit)), _units(op.input, unit))
    assert isinstance(op, PermuteRowsOp | SliceRowsOp | ExpandRowsOp)
    extra = len(_units(op.input, unit)) - len(lead_shape(op.input))  # the unit's place in a row
    if isinstance(op, PermuteRowsOp):
        out: Index = list(index)
        for i, p in enumerate(op.perm[:-1]):
            out[p] = index[i]
        return out
    if isinstance(op, SliceRowsOp):
        dim, start, step = op.bounds
        out = list(index)
        out[dim] = index[dim] * step + start
        return out
    assert isinstance(op, ExpandRowsOp)
    src = lead_shape(op.input) + (0,) * extra
    return [np.zeros_like(i) if s == 1 else i for i, s in zip(index, src)]


def index_forward(op: Operation, index: Index, unit: int) -> Index:
    """The result index of each operand index of a reshape or permutation."""
    if isinstance(op, ReshapeOp):
        return unravel(ravel(index, _units(op.input, unit)), _units(op.result, unit))
    assert isinstance(op, PermuteRowsOp)
    perm = op.perm[:-1]
    return [index[p] for p in perm] + list(index[len(perm):])


@dataclass(frozen=True)
class RowMap:
    """f(i) = base + sum_j coef_j * (i_j floordiv div_j) over a logical leading shape; stored
    rows are `unit_cols` elements wide (the reader's padded row). `base` is non-zero when a
    slice of a leading dim starts past its first row."""

    shape: tuple[int, ...]
    coefs: tuple[int, ...]
    divs: tuple[int, ...]
    stored_rows: int
    unit_cols: int
    base: int = 0

    @property
    def run_stride(self) -> int:
        """Stored rows between consecutive rows along the last logical dim (0: broadcast)."""
        return self.coefs[-1] if self.coefs else 1

    def view_shape(self) -> tuple[int, int]:
        """The 2-D view [rows, run_stride * cols] of the stored tensor in which a run is a
        box: stored row f sits at view row f // stride, columns (f % stride) * cols on."""
        sigma = max(self.run_stride, 1)
        return self.stored_rows // sigma, sigma * self.unit_cols

    def origin(self, index: Sequence[AffineExpr]) -> tuple[AffineExpr, AffineExpr]:
        """View (row, column) of the run starting at logical `index` (affine expressions)."""
        cols = self.unit_cols
        sigma = max(self.run_stride, 1)
        terms = [(c, fdiv(e, d), (n - 1) // d)
                 for c, e, d, n in zip(self.coefs, index, self.divs, self.shape) if c]
        whole = [(c, e) for c, e, _ in terms if c % sigma == 0]
        part = [(c, e, top) for c, e, top in terms if c % sigma]
        if self.base % sigma == 0 and sum(c * top for c, _, top in part) < sigma:
            # the column terms never carry into the row
            row = add(const(self.base // sigma), *(mul(e, c // sigma) for c, e in whole))
            col = add(*(mul(e, c * cols) for c, e, _ in part))
            return row, col
        flat = add(const(self.base), *(mul(e, c) for c, e, _ in terms))
        return fdiv(flat, sigma), mul(flat % sigma, cols)


def fit(shape: Sequence[int], rows_of: Callable[[Index], np.ndarray], stored_rows: int,
        unit_cols: int) -> RowMap | None:
    """The RowMap equal to `rows_of` on every index of `shape`, or None if there is none."""
    shape = tuple(shape)
    index = [i.astype(np.int64) for i in np.indices(shape)] if shape else []
    try:
        # a one-row (rank-1) base gives the scalar row 0 for every index
        rows = np.broadcast_to(np.asarray(rows_of(index), dtype=np.int64), shape)
    except NotRows:
        return None
    base = int(rows.flat[0]) if rows.size else 0
    rows = rows - base
    coefs, divs = [], []
    for j in range(len(shape)):
        axis = rows[tuple(slice(None) if k == j else 0 for k in range(len(shape)))]
        moved = np.nonzero(axis)[0]
        div = int(moved[0]) if moved.size else 1
        coef = int(axis[div]) if moved.size else 0
        if j == len(shape) - 1 and div != 1 and coef:
            return None
        coefs.append(coef)
        divs.append(div)
    expected = sum((c * (i // d) for c, i, d in zip(coefs, index, divs)),
                   np.zeros(shape, np.int64))
    if not np.array_equal(expected, rows):
        return None
    return RowMap(shape, tuple(coefs), tuple(divs), stored_rows, unit_cols, base)


def read_map(chain: Sequence[Operation], base: SSAValue, reader: SSAValue,
             shape: Sequence[int], to_value: Callable[[Index], Index] | None = None
             ) -> RowMap | None:
    """The map of logical indices of `shape` to rows of `base`, read through `chain`
    (ordered from the base to `reader`, the value the op reads); `to_value` first maps a
    logical index to an index of `reader` (grouped-query heads)."""
    unit = padded_cols(reader)

    def rows_of(index: Index) -> np.ndarray:
        if to_value is not None:
            index = to_value(index)
        for op in reversed(chain):
            index = index_back(op, index, unit)
        return ravel(index, _units(base, unit))

    stored = unit_shape(base, unit)
    if stored is None:
        return None
    return fit(shape, rows_of, math.prod(stored), unit)


def write_map(chain: Sequence[Operation], writer: SSAValue, stored: SSAValue) -> RowMap | None:
    """The map of leading indices of `writer` (the op's result) to rows of `stored`, written
    through `chain` (ordered from the writer on)."""
    unit = padded_cols(writer)

    def rows_of(index: Index) -> np.ndarray:
        for op in chain:
            index = index_forward(op, index, unit)
        return ravel(index, _units(stored, unit))

    units = unit_shape(stored, unit)
    if units is None:
        return None
    return fit(lead_shape(writer), rows_of, math.prod(units), unit)


def head_indices(shape: Sequence[int], flat: AffineExpr) -> list[AffineExpr]:
    """Expressions of the leading dims of `shape` but the last, from their flat index."""
    out = []
    for j, extent in enumerate(shape[:-1]):
        inner = math.prod(shape[j + 1:-1])
        e = fdiv(flat, inner)
        out.append(e if j == 0 else e % extent)
    return out


# ---- affine expressions without trivial operations --------------------------------------------

def const(value: int) -> AffineExpr:
    return AffineExpr.constant(value)


def mul(e: AffineExpr, c: int) -> AffineExpr:
    if c == 0:
        return const(0)
    return e if c == 1 else e * c


def fdiv(e: AffineExpr, c: int) -> AffineExpr:
    return e if c == 1 else e // c


def add(*terms: AffineExpr) -> AffineExpr:
    nonzero = [t for t in terms if not (isinstance(t, AffineConstantExpr) and t.value == 0)]
    if not nonzero:
        return const(0)
    out = nonzero[0]
    for t in nonzero[1:]:
        out = out + t
    return out
