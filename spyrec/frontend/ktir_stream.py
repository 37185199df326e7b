"""Rows too wide for LX: a kernel's row tile streamed through it in chunks, one pass per
reduction.

A softmax over a 262,144-element row (ktir-cpu's softmax_wide; a vocabulary-wide softmax
of an LLM's logits) loads the whole row as one tile, reduces it twice and stores it: half
a megabyte in f16, and each f32 temporary the row's computation needs another megabyte, in
a scratchpad of 1.6 MB. `stream_wide_rows(kernel)` rewrites such a block so that no tile
is wider than a chunk of the row: every reduction of the row becomes an `scf.for` over its
chunks that reloads each chunk, recomputes the elementwise chain from the loads to the
reduction on it, and folds it into a carried accumulator; every store becomes a loop that
recomputes and stores each chunk. What the row's statistics depend on is computed before
the pass that reads them (each pass sits where the reduction or store it replaces was), so
the kernel computes what it wrote, its row read once per pass from LPDDR.

The semantics are the kernel's. An elementwise op is computed per element as before. A max
or min is exact in any order. A sum of f16 or bf16 values accumulates in f32 and is
rounded once to the declared type where it meets the reduction's init (docs/ktir.md §4, as
the interpreter sums): the loop carries an f32 sum, the chunk is extended to f32 before its
reduction, and the init is added after the loop, in f32, before the one rounding.

A block qualifies when its wide values (the results of loads whose tile is at least
`WIDE_BYTES` in f32, and of everything computed from them) flow only through elementwise
`arith` / `math` ops, splats of scalars and dense splat constants of the row's shape, into
`linalg.reduce` over the last dim with one `addf`, `maxnumf`, `minnumf`, `maximumf` or
`minimumf` combiner, and into `ktdp.store`s of plain tiles (identity order, a box from 0);
the row's length must be a multiple of the chunk. Anything else is left as written (and
refused by the memory placement, naming the largest tiles).
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, func, scf, tensor
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    TensorType,
    f32,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from spyrec.dialects.ktdp import (
    ConstructAccessTileOp,
    ConstructDistributedMemoryViewOp,
    ConstructMemoryViewOp,
    LoadOp,
    StoreOp,
)
from spyrec.dialects.ktdp_affine import box_bounds
from spyrec.dialects.ktdp_types import AccessTileType
from spyrec.dialects.ktdp_values import MASKED_KERNEL, MASKED_TILE
from spyrec.dialects.std_ext_linalg import ReduceOp
from spyrec.passes.ktir.ktir_builder import box_set

# a loaded row tile at least this large in f32 (the legalized kernel's temporaries) streams
WIDE_BYTES = 512 * 1024
# the chunk: this many f32 bytes of the row tile at most (a 16-row x 2048 or a 1 x 8192)
CHUNK_BYTES = 32 * 1024
# the module attribute and the binary's provenance key listing the streamed rows
STREAMED_ATTR = "spyre.ktir_streamed"
STREAMED_KEY = "ktir_streamed"
COMBINERS = {"arith.addf", "arith.maxnumf", "arith.minnumf", "arith.maximumf",
             "arith.minimumf"}
HALF = ("f16", "bf16")


class _Skip(Exception):
    """The block does not have the form the rewrite takes."""


def stream_wide_rows(kernel: func.FuncOp) -> list[str]:
    """Stream every block of `kernel` whose row tiles are too wide for LX (module
    docstring). Returns a note per streamed block (`%tile: N columns in chunks of C`)."""
    if MASKED_KERNEL in kernel.attributes:
        return []
    blocks: list[Block] = []
    for load in kernel.walk():
        if isinstance(load, LoadOp) and _wide(load) and load.parent_block() not in blocks:
            blocks.append(load.parent_block())  # type: ignore[arg-type]
    notes = []
    for block in blocks:
        try:
            notes.append(_Stream(block).rewrite())
        except _Skip:
            continue
    return notes


def _wide(load: LoadOp) -> bool:
    shape = list(load.result.type.get_shape())
    return len(shape) == 2 and math.prod(shape) * 4 >= WIDE_BYTES


class _Stream:
    """One block's wide values and the passes that replace them."""

    def __init__(self, block: Block):
        self.block = block
        loads = [o for o in block.ops if isinstance(o, LoadOp) and _wide(o)]
        self.shape = list(loads[0].result.type.get_shape())
        rows, cols = self.shape
        per_chunk = max(CHUNK_BYTES // (4 * rows), 1)
        self.chunk = max((c for c in range(64, min(cols, per_chunk) + 1, 64) if cols % c == 0),
                         default=0)
        if not self.chunk or self.chunk == cols:
            raise _Skip
        self.wide: list[Operation] = []  # in block order
        self.tiles: list[ConstructAccessTileOp] = []
        self.reduces: list[Operation] = []
        self.stores: list[StoreOp] = []
        self._collect(loads)

    def _is_wide(self, value: SSAValue) -> bool:
        return isinstance(value.type, TensorType) and \
            list(value.type.get_shape()) == self.shape

    def _collect(self, loads: list[LoadOp]) -> None:
        wide_values: set[SSAValue] = set()
        for op in self.block.ops:
            results_wide = any(self._is_wide(r) for r in op.results)
            operands_wide = [v for v in op.operands if v in wide_values]
            if isinstance(op, LoadOp) and results_wide:
                if op not in loads:
                    raise _Skip
                tile = op.tile.owner
                if not isinstance(tile, ConstructAccessTileOp) or not self._plain(tile):
                    raise _Skip
                self.tiles.append(tile)
            elif isinstance(op, StoreOp) and operands_wide:
                tile = op.tile.owner
                if not isinstance(tile, ConstructAccessTileOp) or not self._plain(tile):
                    raise _Skip
                self.tiles.append(tile)
                self.stores.append(op)
                continue
            elif op.name == "linalg.reduce" and operands_wide:
                self._check_reduce(op, wide_values)
                self.reduces.append(op)
                continue
            elif results_wide:
                if not self._elementwise(op, wide_values):
                    raise _Skip
            elif operands_wide:
                raise _Skip  # a wide value read some other way
            else:
                continue
            self.wide.append(op)
            wide_values.update(op.results)
        for value in wide_values:  # every use inside this block, by the ops above
            if any(u.operation.parent_block() is not self.block for u in value.uses):
                raise _Skip
        if not self.reduces and not self.stores:
            raise _Skip
        # each pass reloads the row: nothing the kernel stores may be what it reads (an
        # update in place would hand a later pass the stored values, not the loaded ones)
        function = self.block.parent_op()
        while function is not None and not isinstance(function, func.FuncOp):
            function = function.parent_op()
        assert function is not None
        read = set().union(*(_roots(t) for t in self.tiles
                             if any(isinstance(u.operation, LoadOp) for u in t.result.uses)))
        for store in function.walk():
            if isinstance(store, StoreOp) and _roots(store.tile.owner) & read:
                raise _Skip

    def _plain(self, tile: ConstructAccessTileOp) -> bool:
        shape = list(tile.result.type.get_shape())
        return (shape == self.shape and not tile.symbols
                and tile.access_tile_order.data == AffineMap.identity(2)
                and MASKED_TILE not in tile.attributes
                and box_bounds(tile.access_tile_set.data) == [(0, n - 1) for n in shape]
                and tile.parent_block() is self.block
                and all(isinstance(u.operation, (LoadOp, StoreOp)) for u in tile.result.uses))

    def _elementwise(self, op: Operation, wide_values: set[SSAValue]) -> bool:
        if isinstance(op, tensor.SplatOp):
            return True
        if isinstance(op, arith.ConstantOp):
            value = op.value
            return isinstance(value, DenseIntOrFPElementsAttr) and value.is_splat()
        return (op.dialect_name() in ("arith", "math") and len(op.results) == 1
                and not op.regions
                and all(v in wide_values or not isinstance(v.type, TensorType)
                        for v in op.operands))

    def _check_reduce(self, op: Operation, wide_values: set[SSAValue]) -> None:
        dims = op.properties.get("dimensions")
        body = list(op.regions[0].block.ops) if op.regions else []
        if len(op.operands) != 2 or op.operands[0] not in wide_values or \
                op.operands[1] in wide_values or not isinstance(dims, DenseArrayBase) or \
                tuple(dims.get_values()) != (1,) or len(body) != 2 or \
                body[0].name not in COMBINERS:
            raise _Skip

    # --- the rewrite ----------------------------------------------------------------------

    def rewrite(self) -> str:
        first = self.tiles[0]
        for reduce in self.reduces:
            self._reduce_pass(reduce)
        for store in self.stores:
            self._store_pass(store)
        name = first.result.name_hint or "tile"
        for op in [*reversed(self.wide), *self.tiles]:
            if not any(r.uses for r in op.results):
                op.detach()
                op.erase()
        return f"%{name}: {self.shape[1]} columns in chunks of {self.chunk}"

    def _loop(self, at: Operation, inits: list[SSAValue]) -> tuple[scf.ForOp, Block]:
        bounds = [arith.ConstantOp(IntegerAttr(n, IndexType()))
                  for n in (0, self.shape[1], self.chunk)]
        body = Block(arg_types=[IndexType(), *(v.type for v in inits)])
        body.args[0].name_hint = "chunk_col"
        loop = scf.ForOp(bounds[0].result, bounds[1].result, bounds[2].result, inits,
                         Region(body))
        self.block.insert_ops_before([*bounds, loop], at)
        return loop, body

    def _slice(self, value: SSAValue) -> list[Operation]:
        """The wide ops `value` is computed by, in block order."""
        need: set[Operation] = set()
        stack = [value]
        while stack:
            v = stack.pop()
            op = v.owner
            if isinstance(op, Operation) and op in self.wide and op not in need:
                need.add(op)
                stack.extend(op.operands)
        return [o for o in self.wide if o in need]

    def _chunk(self, value: SSAValue, body: Block, column: SSAValue) -> SSAValue:
        """Recompute `value`'s chunk at `column` in `body`; returns it."""
        mapping: dict[SSAValue, SSAValue] = {}
        rows, _ = self.shape
        ctype = (rows, self.chunk)
        for op in self._slice(value):
            if isinstance(op, LoadOp):
                tile = self._tile(op.tile.owner, body, column)  # type: ignore[arg-type]
                new = LoadOp.create(operands=[tile], result_types=[
                    TensorType(op.result.type.element_type, ctype)],
                    attributes=dict(op.attributes), properties=dict(op.properties))
            elif isinstance(op, arith.ConstantOp):
                dense = op.value
                assert isinstance(dense, DenseIntOrFPElementsAttr)
                rtype = TensorType(dense.get_element_type(), ctype)
                new = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(
                    rtype, [dense.get_values()[0]]))  # type: ignore[arg-type]
            else:
                rtype = TensorType(op.results[0].type.element_type, ctype)  # type: ignore[attr-defined]
                new = type(op).create(
                    operands=[mapping.get(v, v) for v in op.operands], result_types=[rtype],
                    attributes=dict(op.attributes), properties=dict(op.properties))
            body.add_op(new)
            new.results[0].name_hint = op.results[0].name_hint
            mapping[op.results[0]] = new.results[0]
        return mapping[value]

    def _tile(self, tile: ConstructAccessTileOp, body: Block,
              column: SSAValue) -> SSAValue:
        base = tile.base_map.data
        *lead, last = base.results
        n = base.num_dims
        new_base = AffineMap(n + 1, 0, (*lead, last + AffineExpr.dimension(n)))
        new = ConstructAccessTileOp(tile.base, [*tile.indices, column], new_base,
                                    box_set([self.shape[0], self.chunk]),
                                    AffineMap.identity(2),
                                    AccessTileType([self.shape[0], self.chunk]))
        for key, value in tile.attributes.items():
            new.attributes[key] = value
        new.result.name_hint = tile.result.name_hint
        body.add_op(new)
        return new.result

    def _reduce_pass(self, reduce: Operation) -> None:
        """`reduce` of the row as a loop over its chunks carrying the accumulator: a sum
        carries an f32 sum from 0 and adds the init once after the loop (one rounding to a
        16-bit type, module docstring); a max or min reduces each chunk from the init and
        combines it with the carried value (exact)."""
        assert isinstance(reduce, ReduceOp)
        source, init = reduce.operands
        combiner = next(iter(reduce.regions[0].block.ops)).name
        rtype = init.type
        assert isinstance(rtype, TensorType)
        half = str(rtype.element_type) in HALF
        summed = combiner == "arith.addf"
        acc_type = TensorType(f32, rtype.get_shape()) if summed else rtype
        first = init
        if summed:
            start = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(acc_type, [0.0]))
            self.block.insert_op_before(start, reduce)
            first = start.result
        loop, body = self._loop(reduce, [first])
        chunk = self._chunk(source, body, body.args[0])
        if summed and half:
            wide32 = arith.ExtFOp(chunk, TensorType(f32, (self.shape[0], self.chunk)))
            body.add_op(wide32)
            chunk = wide32.result
        partial = ReduceOp([chunk], [body.args[1] if summed else init], [1],
                           _combiner(combiner, acc_type.element_type))
        body.add_op(partial)
        carried = partial.res[0]
        if not summed:
            combined = _COMBINE[combiner](body.args[1], carried)
            body.add_op(combined)
            carried = combined.results[0]
        body.add_op(scf.YieldOp(carried))
        result = loop.results[0]
        if summed:
            added: list[Operation] = []
            init32 = init
            constant = _splat_constant(init)
            if constant is not None:  # a number: splat it in f32
                added += [arith.ConstantOp(FloatAttr(constant, f32))]
                added.append(tensor.SplatOp(added[-1].results[0], [], acc_type))
                init32 = added[-1].results[0]
            elif half:
                added.append(arith.ExtFOp(init, acc_type))
                init32 = added[-1].results[0]
            added.append(arith.AddfOp(result, init32))
            if half:
                added.append(arith.TruncFOp(added[-1].results[0], rtype))
            self.block.insert_ops_before(added, reduce)
            result = added[-1].results[0]
        result.name_hint = reduce.results[0].name_hint
        reduce.results[0].replace_all_uses_with(result)
        reduce.detach()
        reduce.erase()

    def _store_pass(self, store: StoreOp) -> None:
        """`store` of the row as a loop storing each chunk."""
        _, body = self._loop(store, [])
        chunk = self._chunk(store.value, body, body.args[0])
        tile = self._tile(store.tile.owner, body, body.args[0])  # type: ignore[arg-type]
        body.add_ops([StoreOp.create(operands=[chunk, tile], attributes=dict(store.attributes),
                                     properties=dict(store.properties)), scf.YieldOp()])
        store.detach()
        store.erase()


def _roots(tile: object) -> set[SSAValue]:
    """The pointer values (or views) an access tile's view is built on."""
    if not isinstance(tile, ConstructAccessTileOp):
        return set()
    view = tile.base.owner
    parts = list(view.operands) if isinstance(view, ConstructDistributedMemoryViewOp) \
        else [tile.base]
    found: set[SSAValue] = set()
    for part in parts:
        owner = part.owner
        found.add(owner.offset if isinstance(owner, ConstructMemoryViewOp) else part)
    return found


def _splat_constant(value: SSAValue) -> float | None:
    """The float a tensor of one repeated constant holds, None otherwise."""
    op = value.owner
    if isinstance(op, tensor.SplatOp):
        op = op.input.owner
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, FloatAttr):
            return float(op.value.value.data)
    elif isinstance(op, arith.ConstantOp) and isinstance(op.value, DenseIntOrFPElementsAttr) \
            and op.value.is_splat():
        first = op.value.get_values()[0]
        return float(first) if isinstance(first, (int, float)) else None
    return None


_COMBINE = {"arith.addf": arith.AddfOp, "arith.maxnumf": arith.MaxnumfOp,
            "arith.minnumf": arith.MinnumfOp, "arith.maximumf": arith.MaximumfOp,
            "arith.minimumf": arith.MinimumfOp}


def _combiner(name: str, element: object) -> Region:
    """A reduction body `name(acc, in)` over `element`."""
    block = Block(arg_types=[element, element])  # type: ignore[list-item]
    op = _COMBINE[name](block.args[1], block.args[0])
    block.add_ops([op, linalg.YieldOp(op.results[0])])
    return Region(block)
