"""Indirect access tiles as dma.gather / dma.scatter pieces (design notes 28 and 95).

A `ktdp.construct_indirect_access_tile` names, for every point of its variables space, a
table coordinate of which one dim (`j`) is read from an index view and the others are
affine in the variables and the captured values. The device moves rows: dma.gather copies
`rows` runs of `row_bytes` from `ddr + k * pitch` for k read from an int32 vector in LX
(checked against `limit`), to LX rows `lx_pitch` apart; dma.scatter is the reverse.

`indirect_tile` evaluates a tile on one core (the captured values are concrete there): it
enumerates the tile's rows (all its variables but the last, row-major: the LX tile's rows)
and, per row, the table address with coordinate j at 0 (`direct`) and the LPDDR address of
the row's index. Rows with the same direct address whose indices are consecutive int32
and whose LX rows are evenly spaced are one instruction (a `Piece`). So the gather of
consecutive embedding rows is one dma.gather, a paged read (one index per page, a block of
rows per index) one per row of a page, and a strided block per index (triton-ktir's
indexed_add) one per row of the block.

What the DMA cannot express is refused with the core and the coordinate: more than one
indirect subscript or one on the last dim (an element gather: the DMA moves runs of a
row), a last subscript that is not the last variable plus a constant, a run that does not
start on a stick or ends inside one short of the row's end (a scatter would overwrite its
neighbours), a direct subscript or an index position outside its view (the index values
themselves are checked by the DMA when it runs: `limit` is dim j's size), and indices
spread wider than the LX slot spyre-place-memory gave them (`index_slot_bytes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineMap

from spyrec.dialects.ktdp_affine import bind_symbols
from spyrec.dialects.ktdp_indirect import ConstructIndirectAccessTileOp
from spyrec.dialects.ktdp_values import Strided, indirect_subscript, set_bounds
from spyrec.target.layout import STICK_BYTES, stick_padded

INDEX_BYTES = 4  # the DMA's indices are int32 (int64 tensors are narrowed on the way in)


@dataclass(frozen=True)
class Piece:
    """One dma.gather / dma.scatter of a tile: `rows` rows, table row k of the first at
    byte `ddr + k * pitch`, their indices consecutive int32 from LPDDR byte `index_addr`,
    LX rows `lx_row`, `lx_row + lx_step`, ..."""

    ddr: int
    rows: int
    index_addr: int
    lx_row: int
    lx_step: int


@dataclass(frozen=True)
class IndirectTile:
    """A tile's pieces, the table's `pitch` along the indirect dim and its `limit` rows,
    the bytes of one row run (`row_bytes`, whole sticks), the tile's rows and columns, and
    the LPDDR bytes [index_lo, index_hi) holding every index the tile reads."""

    pieces: tuple[Piece, ...]
    pitch: int
    limit: int
    row_bytes: int
    rows: int
    cols: int
    index_lo: int
    index_hi: int


def indirect_tile(op: ConstructIndirectAccessTileOp, captured: list[int], symbols: list[int],
                  table: Strided, index: Strided, error) -> IndirectTile:
    """The pieces of `op` on one core (module docstring); `error(what)` makes the located
    CompileError of a refusal."""
    kinds = list(op.subscript_kinds)
    maps = [m.data for m in op.per_dim_subscript_maps]
    rank = len(maps)
    if kinds.count(True) != 1 or len(op.indirect_memrefs) != 1:
        raise error("the device gathers rows by one index per row: give exactly one "
                    "ind(...) subscript, from one index view")
    j = kinds.index(True)
    if j == rank - 1:
        raise error("the indirect subscript is on the last (contiguous) dim: that is an "
                    "element gather, and the DMA moves runs of a row; index a leading dim")
    nvars = op.variables_space_order.data.num_dims
    if op.variables_space_order.data != AffineMap.identity(nvars):
        raise error("only the identity variables_space_order maps to the DMA's rows")
    bounds = set_bounds(bind_symbols(op.variables_space_set.data, symbols))
    if bounds is None:
        raise error("its variables_space_set is unbounded")
    shape = tuple(int(d) for d in op.result.type.get_shape())
    if tuple(hi - lo + 1 for lo, hi in bounds) != shape:
        raise error(f"its variables_space_set {bounds} is not a box of the tile's shape "
                    f"{list(shape)}")
    grids = np.meshgrid(*(np.arange(lo, hi + 1, dtype=np.int64) for lo, hi in bounds),
                        indexing="ij")
    subs = [[np.broadcast_to(np.asarray(v, dtype=np.int64), shape)
             for v in indirect_subscript(m, captured, grids)] for m in maps]
    cols = shape[-1]
    last = subs[-1][0]
    steps = last - last[..., :1]
    if not np.array_equal(steps, np.broadcast_to(np.arange(cols), shape)):
        raise error("its last subscript must be the last variable plus a value fixed per "
                    "row (the DMA moves contiguous runs of a row)")
    for dim, coords in enumerate(subs[:-1]):
        if any(not np.all(c == c[..., :1]) for c in coords):
            raise error(f"subscript {dim} varies along the tile's last variable; only the "
                        "last subscript may (one row run per tile row)")
    # the row's coordinates: the first column of each tile row
    rows = [[c[..., 0].reshape(-1) for c in coords] for coords in subs]
    _check_inside(rows, j, table, index, error)
    if table.strides[-1] != 1:
        raise error("the table's last dim must be contiguous (stride 1)")
    if table.origin[j] != 0:
        raise error(f"the table view's coordinates along the indirect dim start at "
                    f"{table.origin[j]}; the DMA checks indices from 0")
    itemsize = table.itemsize
    start = (rows[-1][0] - table.origin[-1]) * itemsize
    row_bytes = stick_padded(cols * itemsize)
    run_end = rows[-1][0] - table.origin[-1] + cols
    if np.any(start % STICK_BYTES) or (
            cols * itemsize % STICK_BYTES and np.any(run_end != table.shape[-1])):
        raise error(f"its rows of {cols} elements start at column {int(rows[-1][0][0])}; the "
                    "DMA moves whole 128-byte sticks, so a row run must start on a stick and "
                    "fill its last one or end at the row's end")
    direct = np.full(len(rows[0][0]), int(table.base), dtype=np.int64)
    for dim, coords in enumerate(rows):
        if dim != j:
            (coord,) = coords
            direct += (coord - table.origin[dim]) * table.strides[dim] * itemsize
    index_at = np.full(len(direct), int(index.base), dtype=np.int64)
    for coord, origin, stride in zip(rows[j], index.origin, index.strides, strict=True):
        index_at += (coord - origin) * stride * index.itemsize
    lo, hi = int(index_at.min()), int(index_at.max()) + INDEX_BYTES
    return IndirectTile(_pieces(direct, index_at), table.strides[j] * itemsize,
                        table.shape[j], row_bytes, len(direct), cols, lo, hi)


def _check_inside(rows: list[list[np.ndarray]], j: int, table: Strided, index: Strided,
                  error) -> None:
    """Refuse a direct coordinate outside the table's view, or an index position outside
    the index view (the DMA checks only the index values)."""
    for dim, (coord,) in ((d, r) for d, r in enumerate(rows) if d != j):  # one result each
        low, high = table.origin[dim], table.origin[dim] + table.shape[dim]
        bad = np.flatnonzero((coord < low) | (coord >= high))
        if bad.size:
            raise error(f"tile row {int(bad[0])} reads coordinate {int(coord[bad[0]])} of "
                        f"dim {dim}, outside the table view's [{low}, {high})")
    for dim, coord in enumerate(rows[j]):
        low, high = index.origin[dim], index.origin[dim] + index.shape[dim]
        bad = np.flatnonzero((coord < low) | (coord >= high))
        if bad.size:
            raise error(f"tile row {int(bad[0])} reads its index at position "
                        f"{int(coord[bad[0]])} of the index view's dim {dim}, outside "
                        f"[{low}, {high})")


def _pieces(direct: np.ndarray, index_at: np.ndarray) -> tuple[Piece, ...]:
    """Rows with one direct address, consecutive indices and evenly spaced LX rows, as
    few pieces as that allows (rows of one direct address taken in tile order, so a
    scatter's repeated rows land in tile order, as the interpreter stores them)."""
    groups: dict[int, list[int]] = {}
    for row, addr in enumerate(direct.tolist()):
        groups.setdefault(addr, []).append(row)
    pieces = []
    for addr, members in groups.items():
        run = [members[0]]
        for row in members[1:]:
            step = run[1] - run[0] if len(run) > 1 else row - run[-1]
            if (row - run[-1] == step
                    and index_at[row] - index_at[run[-1]] == INDEX_BYTES):
                run.append(row)
                continue
            pieces.append(_piece(addr, run, index_at))
            run = [row]
        pieces.append(_piece(addr, run, index_at))
    return tuple(pieces)


def _piece(addr: int, run: list[int], index_at: np.ndarray) -> Piece:
    return Piece(addr, len(run), int(index_at[run[0]]), run[0],
                 run[1] - run[0] if len(run) > 1 else 1)


def index_slot_bytes(op: ConstructIndirectAccessTileOp, stick: int) -> int:
    """LX bytes spyre-place-memory reserves for a tile's index sticks: one stick more than
    one index per tile row fills (the indices may start anywhere in a stick), or the whole
    index view and a stick when that is less; `indirect_tile`'s span is checked against it
    where the walk knows the core's values."""
    rows = int(np.prod(op.result.type.get_shape()[:-1]))
    per_row = (-(-rows * INDEX_BYTES // stick) + 1) * stick
    view = op.indirect_memrefs[0].type
    assert isinstance(view, MemRefType)
    dims = list(view.get_shape())
    whole = int(np.prod(dims[:-1] or [1])) * stick_padded(dims[-1] * INDEX_BYTES) + stick
    return min(per_row, whole)


def index_sticks(tile: IndirectTile) -> tuple[int, int]:
    """The LPDDR address of the first stick holding the tile's indices, and the bytes of
    whole sticks from there to the last index."""
    first = tile.index_lo - tile.index_lo % STICK_BYTES
    return first, stick_padded(tile.index_hi - first)



def indirect_view_bytes(view: SSAValue, itemsize: int, cores: int,
                        trips: Callable[[Operation], int]) -> int | None:
    """The off-chip bytes a kernel moves through the view `view` when it is only the table
    of indirect tiles: the tiles' elements per load or store, on every core, every trip
    (`trips(op)`: how often op runs per core); None for a view read any other way (the
    kernel's minimum then counts the whole view)."""
    uses = list(view.uses)
    if not uses or any(not isinstance(u.operation, ConstructIndirectAccessTileOp)
                       or u.index != 0 for u in uses):
        return None
    moved = 0
    for use in uses:
        tile = use.operation
        assert isinstance(tile, ConstructIndirectAccessTileOp)
        elements = int(np.prod(tile.result.type.get_shape()))
        moved += sum(elements * itemsize * trips(a.operation) * cores
                     for a in tile.result.uses)
    return moved
