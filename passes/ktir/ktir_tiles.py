"""The 2-D LX shape of a KTIR tensor value, as the Spyre engines see it.

Every tile in LX is `rows` rows of `cols` elements, each row starting on a 128-byte stick.
A tensor of rank >= 2 is the rows of its leading dims by its last dim; a rank-1 tensor is
one row, unless the op that made it says otherwise with `spyre.tile = array<i64: r, c>`
(a row reduction's rank-1 result is a column: one value per row, a stick each). A value
carried by `scf.for` has the shape of its init. A `ktdp.load` through a transposing tile
order (d1, d0), or one swapping the last two dims of a tile whose other dims are 1, puts
the block in LX as stored, so its LX shape is the tile's transpose.
Used by spyre-legalize-ktir, spyre-place-memory and spyre-schedule-dataflow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import scf
from xdsl.dialects.builtin import DenseArrayBase, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from spyrec.dialects.ktdp import ConstructAccessTileOp, LoadOp


def default_tile_dims(shape: Sequence[int]) -> tuple[int, int]:
    if not shape:
        return (1, 1)
    return (math.prod(shape[:-1]), shape[-1])


def tile_dims(value: SSAValue) -> tuple[int, int]:
    """(rows, cols) of `value` in LX."""
    owner = value.owner
    if isinstance(owner, Block):  # an scf.for iteration argument: its init's shape
        loop = owner.parent_op()
        if isinstance(loop, scf.ForOp) and value.index > 0:  # type: ignore[attr-defined]
            return tile_dims(loop.iter_args[value.index - 1])  # type: ignore[attr-defined]
    elif isinstance(owner, scf.ForOp):
        return tile_dims(owner.iter_args[value.index])  # type: ignore[attr-defined]
    elif isinstance(owner, Operation):
        attr = owner.attributes.get("spyre.tile")
        if isinstance(attr, DenseArrayBase):
            rows, cols = attr.get_values()
            return (int(rows), int(cols))
        if isinstance(owner, LoadOp) and transposed_load(owner):
            rows, cols = default_tile_dims(tensor_shape(value))
            return (cols, rows)
    return default_tile_dims(tensor_shape(value))


def transposed_load(op: LoadOp) -> bool:
    """True when `op` loads a 2-D tile through the order (d1, d0), or a tile of unit leading
    dims through an order that swaps its last two ((d0, d2, d1) of a [1, n, m] block): the
    block's transpose."""
    tile = op.tile.owner
    if not isinstance(tile, ConstructAccessTileOp):
        return False
    return is_transpose(tile.access_tile_order.data, tensor_shape(op.results[0]))


def is_transpose(order: AffineMap, shape: Sequence[int]) -> bool:
    """`order` swaps the last two dims and keeps the others, which are 1 in `shape` (the
    tile's shape): one 2-D block, transposed."""
    rank = order.num_dims
    if rank < 2 or len(shape) != rank or any(n != 1 for n in shape[:-2]):
        return False
    dims = [AffineExpr.dimension(i) for i in range(rank)]
    return list(order.results) == [*dims[:-2], dims[-1], dims[-2]]


def tensor_shape(value: SSAValue) -> list[int]:
    ttype = value.type
    assert isinstance(ttype, TensorType), f"%{value.name_hint} is not a tensor"
    return list(ttype.get_shape())
