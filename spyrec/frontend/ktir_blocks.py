"""Tiles narrower than a stick: the tensor's last dim stored in blocks of the tile width.

DMA moves whole 128-byte sticks, so a tile whose columns start part way into a stick of a
dense row cannot be loaded or stored as it is: Triton's small matmul takes 32-column f16
tiles (64 bytes) at columns 0 and 32 of 64-column rows, and a layer norm stores each row's
mean, one f16, at element `row` of a vector that 32 cores write. When every tile the kernel
builds on a tensor has the same width `w` in its last dim (not a whole number of sticks),
`block_narrow_tiles(kernel)` gives the tensor a device layout with that dim split into
blocks of `w` elements, each block padded to whole sticks on its own:

    memref<16x64xf16>, tiles 8x32 at [r, c]     ->  memref<16x2x32xf16>, tiles 8x1x32 at
                                                    [r, c floordiv 32, c mod 32]
    memref<1151xf16>, tiles 1 at [row]          ->  memref<1151x1xf16>, tiles 1x1 at
                                                    [row, 0]

Element c of a row is element `c mod w` of block `c floordiv w`, so the new view addresses
the same elements; the split of a row-major last dim is a reshape on the host, which the
binary records (`DeviceLayout.block`, the `spyre.host_blocks` of the graph) so callers pass
and receive the kernel's own shapes. A tile at a multiple of `w` is then one stick-aligned
block per row: each load and store moves whole sticks of its own, whatever the other cores
write beside it. A tile whose column is not a multiple of `w` gets an in-block offset above
0 and runs past the block, which the bounds proof refuses (never a read of the wrong
columns). Loads give the new tile shape and are collapsed back to the kernel's tensor (the
unit block dim merged into the rows), stores expand the kernel's tensor: both are no
instruction (LX holds the same rows, spyre-legalize-ktir). The price is the padding of each
block to whole sticks (a 32-column f16 tile moves 128 bytes per row for its 64), which the
DMA would move anyway.

A tensor qualifies when every use of its views is a direct access tile with the identity
order, a box set from 0, no symbols and no mask, and every use of those tiles a
`ktdp.load` or `ktdp.store`; anything else is left as written for the checks that follow.
"""

from __future__ import annotations

import math

from xdsl.dialects import func, tensor
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    MemRefType,
    TensorType,
    i64,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.ir.affine import (
    AffineExpr,
    AffineMap,
)

from spyrec.dialects.ktdp import (
    ConstructAccessTileOp,
    ConstructDistributedMemoryViewOp,
    ConstructMemoryViewOp,
    LoadOp,
    StoreOp,
)
from spyrec.dialects.ktdp_affine import box_bounds
from spyrec.dialects.ktdp_types import AccessTileType
from spyrec.dialects.ktdp_values import COLUMN_BLOCK, MASKED_KERNEL, MASKED_TILE
from spyrec.passes.ktir.ktir_builder import box_set
from spyrec.target.layout import ELEMENT_DEVICE_DTYPE, STICK_BYTES

Groups = ArrayAttr[ArrayAttr[IntegerAttr]]  # a reshape's reassociation
# the graph attribute naming each blocked argument's block width (program_tensors reads it)
HOST_BLOCKS = "spyre.host_blocks"


def block_narrow_tiles(kernel: func.FuncOp) -> dict[str, tuple[MemRefType, int]]:
    """Split the last dim of each pointer argument whose tiles are narrower than a stick into
    blocks of the tile width (module docstring). Returns, per blocked argument's name, the
    view type the kernel wrote (the host's shape) and the block width."""
    if MASKED_KERNEL in kernel.attributes:
        return {}
    blocked: dict[str, tuple[MemRefType, int]] = {}
    for arg in kernel.body.block.args:
        split = _block_width(arg)
        if split is None:
            continue
        width, columns = split
        views = [u.operation for u in arg.uses]
        host = views[0].results[0].type
        assert isinstance(host, MemRefType)
        for view in views:
            assert isinstance(view, ConstructMemoryViewOp)
            _split(view, width, columns)
        blocked[arg.name_hint or f"arg{arg.index}"] = (host, width)
    for op in [o for o in kernel.walk() if isinstance(o, ConstructDistributedMemoryViewOp)]:
        blocked.update(_split_parts(op))
    return blocked


def _split_parts(op: ConstructDistributedMemoryViewOp) -> dict[str, tuple[MemRefType, int]]:
    """A distributed view of several tensors whose tiles are narrower than a stick: every
    part blocked by the tiles' width, each part's coordinates in blocks too (its first
    column and its width multiples of the width), the view and its tiles rewritten as for
    one tensor. Returns the blocked arguments as `block_narrow_tiles` does; nothing when the
    view does not qualify."""
    parts = [p.owner for p in op.parts]
    if not all(isinstance(v, ConstructMemoryViewOp) and isinstance(v.offset, BlockArgument)
               and len(list(v.offset.uses)) == 1 and len(list(v.result.uses)) == 1
               and not (v.sizes or v.strides) for v in parts):
        return {}
    widths: set[int] = set()
    for use in op.result.uses:
        tile = use.operation
        if not isinstance(tile, ConstructAccessTileOp) or not _plain(tile):
            return {}
        widths.add(tile.result.type.get_shape()[-1])
    if len(widths) != 1:
        return {}
    tile_width = widths.pop()
    width = tile_width
    for view in parts:  # blocks every part's columns fill: the gcd with their bounds
        assert isinstance(view, ConstructMemoryViewOp)
        bounds = box_bounds(view.coordinate_set.data) or [(None, None)]
        low, high = bounds[-1]
        if low is None or high is None:
            return {}
        width = math.gcd(width, low, high + 1)
    copies: list[tuple[LoadOp, list[StoreOp]]] = []
    if width != tile_width:  # tiles of several blocks: only copied as they are
        copies = _copies(op, tile_width, width)
        if not copies:
            return {}
    boxes: list[list[tuple[int, int]]] = []
    for view in parts:
        assert isinstance(view, ConstructMemoryViewOp)
        mtype = view.result.type
        assert isinstance(mtype, MemRefType)
        shape = list(mtype.get_shape())
        itemsize = _itemsize(mtype)
        strides = [int(s) for s in view.static_strides.get_values()]
        bounds = box_bounds(view.coordinate_set.data) or []
        box = [(lo, hi) for lo, hi in bounds if lo is not None and hi is not None]
        if itemsize is None or strides != _dense(shape) \
                or len(box) != len(shape) or [hi - lo + 1 for lo, hi in box] != shape or \
                width % (STICK_BYTES // itemsize) == 0 or shape[-1] % width or \
                box[-1][0] % width:
            return {}
        boxes.append(box)
    new_parts = []
    blocked: dict[str, tuple[MemRefType, int]] = {}
    for view, box in zip(parts, boxes):
        assert isinstance(view, ConstructMemoryViewOp)
        mtype = view.result.type
        assert isinstance(mtype, MemRefType)
        *lead, last = mtype.get_shape()
        sizes = [*lead, last // width, width]
        lows = [lo for lo, _ in box[:-1]] + [box[-1][0] // width, 0]
        strides = _dense(sizes)
        part = ConstructMemoryViewOp(view.offset, sizes, strides,
                                     MemRefType(mtype.element_type, sizes),
                                     box_set(sizes, lows), view.memory_space)
        part.result.name_hint = view.result.name_hint
        assert view.parent is not None
        view.parent.insert_op_before(part, view)
        new_parts.append(part)
        arg = view.offset
        assert isinstance(arg, BlockArgument)
        blocked[arg.name_hint or f"arg{arg.index}"] = (mtype, width)
    rtype = op.result.type
    assert isinstance(rtype, MemRefType)
    rank = len(boxes[0])
    extent = [max(b[d][1] for b in boxes) + 1 for d in range(rank)]
    whole_sizes = [*extent[:-1], extent[-1] // width, width]
    whole = ConstructDistributedMemoryViewOp.create(
        operands=[p.result for p in new_parts],
        result_types=[MemRefType(rtype.element_type, whole_sizes)],
        properties=dict(op.properties), attributes=dict(op.attributes))
    whole.results[0].name_hint = op.result.name_hint
    assert op.parent is not None
    op.parent.insert_op_before(whole, op)
    for use in list(op.result.uses):
        tile = use.operation
        assert isinstance(tile, ConstructAccessTileOp)
        if copies:
            _split_copy_tile(tile, whole, width)  # type: ignore[arg-type]
        else:
            _split_tile(tile, whole, width, False)  # type: ignore[arg-type]
    destinations: list[ConstructMemoryViewOp] = []
    for _, stores in copies:  # the destinations, blocked alike (each view once)
        for store in stores:
            tile = store.tile.owner
            assert isinstance(tile, ConstructAccessTileOp)
            view = tile.base.owner
            assert isinstance(view, ConstructMemoryViewOp)
            if view not in destinations:
                destinations.append(view)
    for view in destinations:
        arg = view.offset
        assert isinstance(arg, BlockArgument)
        blocked[arg.name_hint or f"arg{arg.index}"] = (view.result.type, width)
        _split(view, width, False, copy=True)
    op.detach()
    op.erase()
    for view in parts:
        assert isinstance(view, ConstructMemoryViewOp)
        view.detach()
        view.erase()
    return blocked


def _block_width(arg: BlockArgument) -> tuple[int, bool] | None:
    """(block width, column tiles) to split `arg`'s last dim by, or None when it does not
    qualify. Column tiles: a vector only stored to, each time from a column of LX (one
    value per row, e.g. row statistics): blocks of one element, so each value is a stick of
    its own as in LX."""
    views = [u.operation for u in arg.uses]
    if not views or not all(isinstance(v, ConstructMemoryViewOp) and v.offset is arg
                            and not (v.sizes or v.strides) for v in views):
        return None
    mtype = views[0].results[0].type
    assert isinstance(mtype, MemRefType)
    shape = list(mtype.get_shape())
    itemsize = _itemsize(mtype)
    if itemsize is None or not shape or min(shape) < 1:
        return None
    widths: set[int] = set()
    columns, some_column = len(shape) == 1, False
    for view in views:
        assert isinstance(view, ConstructMemoryViewOp)
        strides = [int(s) for s in view.static_strides.get_values()]
        dense = _dense(shape)
        bounds = box_bounds(view.coordinate_set.data)
        if view.results[0].type != mtype or strides != dense or bounds != \
                [(0, n - 1) for n in shape]:
            return None
        for use in view.results[0].uses:
            tile = use.operation
            if not isinstance(tile, ConstructAccessTileOp) or not _plain(tile):
                return None
            widths.add(tile.result.type.get_shape()[-1])
            stored = [isinstance(u.operation, StoreOp) and _column(u.operation.value)
                      for u in tile.result.uses]
            columns &= all(stored)
            some_column |= any(stored)
    if len(widths) != 1 or (some_column and not columns):  # a column as a row: transposed
        return None
    width = widths.pop()
    if columns and shape[-1] > 1:
        return 1, True
    per_stick = STICK_BYTES // itemsize
    if width % per_stick == 0 or shape[-1] % width or shape[-1] == width:
        return None
    return width, False


def _column(value: SSAValue) -> bool:
    """True when `value`, a rank-1 tensor, is a column in LX: a reduction of a rank-2
    tensor's last dim, or an elementwise op of one (its other operands splats)."""
    op = value.owner
    if not isinstance(op, Operation) or not isinstance(value.type, TensorType) or \
            value.type.get_num_dims() != 1:
        return False
    if op.name == "linalg.reduce":
        source = op.operands[0].type
        dims = op.properties.get("dimensions")
        return isinstance(source, TensorType) and source.get_num_dims() == 2 and \
            isinstance(dims, DenseArrayBase) and tuple(dims.get_values()) == (1,)
    if op.dialect_name() in ("arith", "math") and len(op.results) == 1:
        return any(_column(o) for o in op.operands if o.type == value.type)
    return False


def _copies(op: ConstructDistributedMemoryViewOp, tile_width: int,
            width: int) -> list[tuple[LoadOp, list[StoreOp]]]:
    """The loads of `op`'s tiles and the stores of each loaded value, when the tiles span
    several blocks of `width` and are only copied: every tile only loaded, every load only
    stored, each store to a plain tile of `tile_width` on a view of its own argument whose
    tiles are all such stores (so that tensor can be blocked alike). Empty otherwise."""
    copies: list[tuple[LoadOp, list[StoreOp]]] = []
    for use in op.result.uses:
        for access in use.operation.results[0].uses:
            load = access.operation
            if not isinstance(load, LoadOp):
                return []
            stores = [u.operation for u in load.result.uses]
            if not stores or not all(isinstance(st, StoreOp) and st.value is load.result
                                     for st in stores):
                return []
            for store in stores:
                assert isinstance(store, StoreOp)
                tile = store.tile.owner
                view = tile.base.owner if isinstance(tile, ConstructAccessTileOp) else None
                if not isinstance(view, ConstructMemoryViewOp) or not isinstance(
                        view.offset, BlockArgument) or len(list(view.offset.uses)) != 1:
                    return []
                shape = list(view.result.type.get_shape())
                strides = [int(x) for x in view.static_strides.get_values()]
                if view.sizes or view.strides or shape[-1] % width or strides != _dense(shape) or \
                        box_bounds(view.coordinate_set.data) != [(0, n - 1) for n in shape]:
                    return []
                for other in view.result.uses:
                    dst = other.operation
                    if not isinstance(dst, ConstructAccessTileOp) or not _plain(dst) or \
                            COLUMN_BLOCK in dst.attributes or \
                            dst.result.type.get_shape()[-1] != tile_width or \
                            not all(isinstance(u.operation, StoreOp) for u in dst.result.uses):
                        return []
            copies.append((load, stores))  # type: ignore[arg-type]
    return copies


def _split_copy_tile(tile: ConstructAccessTileOp, view: ConstructMemoryViewOp,
                     width: int) -> None:
    """A tile of several blocks of `width`, only copied: `[..., n * width]` at column c
    becomes `[..., n, width]` at `[c floordiv width, c mod width]`, its loads and stores the
    blocked tensor as it is (the copy's source and destination are blocked alike)."""
    shape = list(tile.result.type.get_shape())
    new_shape = [*shape[:-1], shape[-1] // width, width]
    _rewrite_accesses(tile, _blocked_tile(tile, view, new_shape, width), new_shape, None)


def _dense(shape: list[int]) -> list[int]:
    """The row-major strides of `shape`, in elements."""
    return [math.prod(shape[i + 1:]) for i in range(len(shape))]


def _itemsize(mtype: MemRefType) -> int | None:
    """The device bytes of one element of `mtype` (None for a type with no device format)."""
    device = ELEMENT_DEVICE_DTYPE.get(str(mtype.element_type))
    return None if device is None else device.itemsize


def _plain(tile: ConstructAccessTileOp) -> bool:
    """A tile the split rewrites: identity order, a box from 0 of its shape, no symbols, no
    mask, read by loads and written by stores only."""
    shape = list(tile.result.type.get_shape())
    rank = len(shape)
    return (tile.access_tile_order.data == AffineMap.identity(rank) and not tile.symbols
            and MASKED_TILE not in tile.attributes
            and box_bounds(tile.access_tile_set.data) == [(0, n - 1) for n in shape]
            and all(isinstance(u.operation, LoadOp) or
                    (isinstance(u.operation, StoreOp) and u.index == 1)
                    for u in tile.result.uses))


def _split(view: ConstructMemoryViewOp, width: int, columns: bool, copy: bool = False) -> None:
    """Replace `view` by its last dim in blocks of `width`, and its tiles, loads and stores
    by the blocked forms (module docstring)."""
    mtype = view.result.type
    assert isinstance(mtype, MemRefType)
    *lead, last = mtype.get_shape()
    sizes = [*lead, last // width, width]
    strides = _dense(sizes)
    blocked = ConstructMemoryViewOp(view.offset, sizes, strides,
                                    MemRefType(mtype.element_type, sizes), box_set(sizes),
                                    view.memory_space)
    blocked.result.name_hint = view.result.name_hint
    assert view.parent is not None
    view.parent.insert_op_before(blocked, view)
    for use in list(view.result.uses):
        tile = use.operation
        assert isinstance(tile, ConstructAccessTileOp)
        if copy:
            _split_copy_tile(tile, blocked, width)
        else:
            _split_tile(tile, blocked, width, columns)
    view.detach()
    view.erase()


def _split_tile(tile: ConstructAccessTileOp, view: ConstructMemoryViewOp, width: int,
                columns: bool) -> None:
    shape = list(tile.result.type.get_shape())
    # a column's values are rows of one element; otherwise one block of each row
    new_shape = [shape[0], 1] if columns else [*shape[:-1], 1, width]
    new = _blocked_tile(tile, view, new_shape, width)
    # the unit dim merges into the rows (a rank-1 tile's two dims into its one)
    n = len(shape)
    groups = [[0, 1]] if n == 1 else [*([i] for i in range(n - 2)), [n - 2, n - 1], [n]]
    reassociation: Groups = ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in g]) for g in groups])
    _rewrite_accesses(tile, new, new_shape, reassociation)


def _blocked_tile(tile: ConstructAccessTileOp, view: ConstructMemoryViewOp,
                  new_shape: list[int], width: int) -> ConstructAccessTileOp:
    """`tile` over the blocked `view`: its column c at `[c floordiv width, c mod width]`
    (`[c, 0]` for blocks of one element), of `new_shape`, inserted before it."""
    base = tile.base_map.data
    *lead, column = base.results
    split = (column, AffineExpr.constant(0)) if width == 1 else (column // width, column % width)
    new = ConstructAccessTileOp(view.result, list(tile.indices),
                                AffineMap(base.num_dims, 0, (*lead, *split)),
                                box_set(new_shape), AffineMap.identity(len(new_shape)),
                                AccessTileType(new_shape))
    for key, value in tile.attributes.items():
        new.attributes[key] = value
    new.attributes[COLUMN_BLOCK] = IntegerAttr(width, i64)
    new.result.name_hint = tile.result.name_hint
    assert tile.parent is not None
    tile.parent.insert_op_before(new, tile)
    return new


def _rewrite_accesses(tile: ConstructAccessTileOp, new: ConstructAccessTileOp,
                      shape: list[int], reassociation: Groups | None) -> None:
    """Each load and store of `tile` through `new` (reshaped back to the kernel's tensor by
    `reassociation`, or as it is when None), then `tile` erased."""
    for use in list(tile.result.uses):
        access = use.operation
        if isinstance(access, LoadOp):
            _load(access, new, shape, reassociation)
        else:
            assert isinstance(access, StoreOp)
            _store(access, new, shape, reassociation)
    tile.detach()
    tile.erase()


def _load(load: LoadOp, tile: ConstructAccessTileOp, shape: list[int],
          reassociation: Groups | None) -> None:
    rtype = load.result.type
    assert isinstance(rtype, TensorType)
    wide = LoadOp.create(operands=[tile.result], result_types=[
        TensorType(rtype.element_type, shape)], attributes=dict(load.attributes),
        properties=dict(load.properties))
    wide.results[0].name_hint = load.result.name_hint
    ops: list[Operation] = [wide]
    if reassociation is not None:
        ops.append(tensor.CollapseShapeOp.create(
            operands=[wide.results[0]], result_types=[rtype],
            properties={"reassociation": reassociation}))
    assert load.parent is not None
    load.parent.insert_ops_before(ops, load)
    load.result.replace_all_uses_with(ops[-1].results[0])
    load.detach()
    load.erase()


def _store(store: StoreOp, tile: ConstructAccessTileOp, shape: list[int],
           reassociation: Groups | None) -> None:
    vtype = store.value.type
    assert isinstance(vtype, TensorType)
    ops: list[Operation] = []
    value = store.value
    if reassociation is not None:
        ops.append(tensor.ExpandShapeOp(store.value, [], reassociation,
                                        DenseArrayBase.from_list(i64, shape),
                                        TensorType(vtype.element_type, shape)))
        value = ops[-1].results[0]
    ops.append(StoreOp.create(operands=[value, tile.result], attributes=dict(store.attributes),
                              properties=dict(store.properties)))
    assert store.parent is not None
    store.parent.insert_ops_before(ops, store)
    store.detach()
    store.erase()
