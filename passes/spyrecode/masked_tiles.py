"""Masked tails in the back end (docs/ktir.md §7, design note 88): a masked access tile
(`ktdp.masked`, or every tile of a `ktdp.masked_tails` kernel) that runs past the end of its
view moves only the lanes inside it.

`inside(...)` gives the part of such a tile that lies in its view, as the DMA moves it:
its leading rows and columns. The DMA moves those rows and whole sticks of those columns:
the last stick of a view that ends inside one is the device copy's stick padding, which
belongs to this tensor (every row of a device tensor is padded to whole 128-byte sticks and
the host writes the padding as zeros and never reads it back), so a load reads zeros there
and a store writes only padding: no read past the tensor's allocation, no byte of another
tensor or of the caller's data written, no read-modify-write needed. A load then fills the
rest of its LX tile with +0.0 (`zero_rest`), the value the interpreter gives lanes outside
the view; a store of a tile entirely outside moves nothing.

Unmasked tiles are not touched here: one that leaves its view is refused by the bounds
proof (`passes/ktir/ktir_bounds.py`) or faults in the emulator.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from spyrec.diagnostics import CompileError
from spyrec.dialects.ktdp_values import MASKED_KERNEL, MASKED_TILE
from spyrec.passes.spyrecode.schedule_templates import Affine, Symbolic
from spyrec.target.isa import BinaryFn, DType, f32_bits

if TYPE_CHECKING:
    from xdsl.ir import Operation

# `it`, `tile` and `lx` are core_walk's CoreWalk, Tile and LxTensor, typed Any: core_walk
# imports this module, and the checker reads core_walk under two paths (passes/ and
# spyrec/passes/), so its classes would not match themselves


def is_masked(it: Any, tile_op: Operation) -> bool:
    """Whether the tile built by `tile_op` drops its lanes outside the view."""
    return MASKED_TILE in tile_op.attributes or MASKED_KERNEL in it.fn.attributes


def inside(it: Any, op: Operation, tile: Any) -> tuple[int, int] | None:
    """(rows, cols) of a masked `tile` that lie in its view, the tile flattened to rows as
    the DMA moves it (0 rows or 0 columns: none); None when the tile is unmasked or wholly
    in its view. `Symbolic` while the tile's place depends on the core (each core is then
    scheduled on its own); a clip the DMA cannot express is a `CompileError`."""
    if not tile.masked:
        return None
    origin, shape = tile.origin, tile.shape
    if any(isinstance(o, Affine) for o in origin):
        raise Symbolic("a masked tile whose place depends on the core")
    view = tile.view.shape
    counts = [max(0, min(n, size - int(o))) for o, n, size in zip(origin, shape, view)]
    if counts == list(shape):
        return None
    if tile.transposed or any(c not in (0, n) for c, n in zip(counts[1:-1], shape[1:-1])):
        raise it.error(op, f"the masked {list(shape)} tile at {list(origin)} runs past its "
                       f"view {list(view)} in a way one DMA cannot clip (the back end clips "
                       "the leading dim and the last, of a tile read as stored)")
    rows = math.prod(counts[:-1]) if len(shape) > 1 else int(counts[-1] > 0)
    return rows, counts[-1]


def zero_rest(it: Any, lx: Any, rows: int, cols: int) -> None:
    """Fill the LX tile `lx` with +0.0 outside its first `rows` rows of `cols` columns (what
    a masked load moved, `cols` already whole sticks): keep(x, 0) gives -0.0 whatever LX held
    (NaN included), then + 0.0 gives +0.0, as the interpreter reads; an int32 tile is
    multiplied by 0."""
    from spyrec.passes.spyrecode.core_walk import whole

    total_rows, total_cols = lx.shape
    size = lx.dtype.itemsize
    regions = [(0, cols, rows, total_cols - cols), (rows, 0, total_rows - rows, total_cols)]
    steps = [(BinaryFn.MUL, 0.0)] if lx.dtype == DType.I32 else \
        [(BinaryFn.KEEP, 0.0), (BinaryFn.ADD, 0.0)]
    for row, col, count, width in regions:
        if count <= 0 or width <= 0:
            continue
        at = lx.addr + row * lx.pitch + col * size
        for fn, value in steps:
            it.stream.emit("sfu.scalar", whole(lx), whole(lx), fn=fn, src=at, dst=at,
                           rows=count, cols=width, src_pitch=lx.pitch, dst_pitch=lx.pitch,
                           src_dtype=lx.dtype, dst_dtype=lx.dtype, imm=f32_bits(value),
                           reverse=0)


def refuse_pieces(it: Any, op: Operation) -> CompileError:
    """A masked tail of a block loaded in pieces (notes 54, 57): not scheduled."""
    return it.error(op, "a masked tile that runs past its view is loaded in pieces "
                    "(spyre.load_pieces); the back end moves a masked tail in one DMA: make "
                    "the tile fit its view")
