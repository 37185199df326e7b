"""The per-core walk of spyre-schedule-dataflow: one KTIR kernel evaluated for one core.

`CoreWalk` runs a kernel's ops for the core at grid coordinates `core` with its address
arguments `args` (ints, or `Affine` forms while a template is built, note
`schedule_templates`) and emits that core's SpyreCode instructions in the order the kernel
unrolls: a `ktdp.load`/`ktdp.store` a DMA at the tile's byte address, a matmul generic PT
instructions, an epilogue generic an SFU instruction, an inter-tile reduce a `ring.reduce`.
Each instruction's dependences are the LX slots it reads and writes (`_Stream`). What a
view, a tile or a core's coordinates mean is KTIR's (`dialects/ktdp_values.py`); what is
here is how they become instructions. Guarantees: a program for every kernel the pass
documents, or a `CompileError` naming the kernel, the core and the op; `Symbolic` where a
symbolic value would be needed concretely (the template falls back, never guesses).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from xdsl.dialects import arith, func, scf, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)

from spyrec.diagnostics import CompileError
from spyrec.dialects.ktdp import (
    ConstructAccessTileOp,
    ConstructDistributedMemoryViewOp,
    ConstructMemoryViewOp,
    GetComputeTileIdOp,
    LoadOp,
    StoreOp,
)
from spyrec.dialects.ktdp_indirect import ConstructIndirectAccessTileOp
from spyrec.dialects.ktdp_intertile import InterTileProduceOp, InterTileReduceOp
from spyrec.dialects.ktdp_values import (
    KtirError,
    Strided,
    group_tiles,
    linear_core,
    set_bounds,
    tile_groups,
    view_origin,
)
from spyrec.passes.ktir.ktir_indirect import (
    INDEX_BYTES,
    IndirectTile,
    index_sticks,
    indirect_tile,
)
from spyrec.passes.ktir.ktir_tiles import is_transpose, tile_dims
from spyrec.passes.planning.kernel_analysis import UNARY_FN
from spyrec.passes.spyrecode import index_division, index_mask, masked_tiles, sfu_fill
from spyrec.passes.spyrecode.masked_tiles import is_masked
from spyrec.passes.spyrecode.schedule_templates import Affine, Symbolic, index_value
from spyrec.target.isa import (
    SPECS_BY_NAME,
    BinaryFn,
    DType,
    EncodingError,
    Instr,
    ReduceFn,
    UnaryFn,
    bits_f32,
    f32_bits,
)
from spyrec.target.layout import ELEMENT_DEVICE_DTYPE, STICK_BYTES, stick_padded

DTYPES = ELEMENT_DEVICE_DTYPE
_T = TypeVar("_T")
STICK = STICK_BYTES
REDUCE_FN = {"reduce_sum": ReduceFn.SUM, "reduce_max": ReduceFn.MAX, "reduce_min": ReduceFn.MIN}
COMMUTATIVE = {"add", "mul", "maximum", "minimum"}
BINARY_FN = {"add": BinaryFn.ADD, "sub": BinaryFn.SUB, "mul": BinaryFn.MUL,
             "div": BinaryFn.DIV, "maximum": BinaryFn.MAX, "minimum": BinaryFn.MIN,
             "keep": BinaryFn.KEEP}


@dataclass
class LxPart:
    """A `ct_local` memory view: part of a tensor kept in core `core`'s LX (note 61), its
    element at the coordinate set's lowest corner (`view.origin`) at LX byte `view.base`."""

    view: Strided
    core: int


@dataclass
class LxParts:
    """A distributed view of `ct_local` parts: a tensor kept in its cores' LX. `block` is
    (mc, nc) when core (x, y) holds the block at (x * mc, y * nc), every part alike, as
    convert-spyre-to-ktir builds them: then a core's own part is found from its coordinates
    even while they are symbolic (a template for every core)."""

    parts: list[LxPart]
    block: tuple[int, int] | None = None


@dataclass
class LpddrParts:
    """A distributed view of LPDDR parts: several tensors addressed as one (the parts'
    coordinate sets are disjoint boxes, `Strided.origin` to origin + shape). A tile over it
    moves one piece per part it reaches (`_pieces`)."""

    parts: list[Strided]


@dataclass
class Tile:
    """An access tile as the DMA moves it: the block of `shape` (in view dims) from global
    coordinate `origin` of `view`. The origin is the tile's base map at its indices and the
    shape its type's, not the points of its `access_tile_set`: the same for the tiles the
    compiler builds (boxes from 0), kept for the hand-written ones (docs/layers/spyrecode.md)."""

    view: Strided | LxParts | LpddrParts
    origin: tuple[int, ...]  # global coordinates of the block's first element
    shape: tuple[int, ...]  # the block in view coordinates
    transposed: bool = False  # read through the order (d1, d0): LX holds the block as stored
    masked: bool = False  # lanes outside the view are not moved (`masked_tiles`)

    @property
    def addr(self) -> int:
        """The byte address of the block's first element (a view in LPDDR)."""
        assert isinstance(self.view, Strided)
        return self.view.address(self.origin)


@dataclass
class LxTensor:
    """A tensor value living in LX: its slot, shape and device type."""

    addr: int
    shape: tuple[int, ...]
    dtype: DType
    zero: bool = False  # produced by linalg.fill 0, not yet written by an instruction
    fill: float | None = None  # produced by linalg.fill of this value, not yet written
    transposed: bool = False  # holds the transpose of its value (a transposing load)
    row_pitch: int = 0  # a slice of a wider tile: the wider tile's pitch
    key: int = -1  # a slice within one piece of a block loaded in pieces: the piece's address
    kept: bool = False  # part of a tensor kept in LX between kernels, read in place (note 61)

    @property
    def pitch(self) -> int:
        """Rows of an LX tile start on stick boundaries (a one-column tile: a stick a row)."""
        if self.row_pitch:
            return self.row_pitch
        return stick_padded(self.shape[-1] * self.dtype.itemsize)


Key = tuple[int, int]  # (LX slot address, row half)


def whole(t: LxTensor) -> list[Key]:
    """Dependence keys of a whole tile: both row halves (of the piece a slice lies in)."""
    addr = t.addr if t.key < 0 else t.key
    return [(addr, 0), (addr, 1)]


def row_halves(rows: int) -> list[tuple[int, int, int]]:
    """(half, first row, row count) of the per-corelet split of `rows`.

    Both corelets share the core's LX, so a tile op with an even number of at least 16
    rows runs as two instructions, one per corelet, each on half of the rows.
    """
    if rows >= 16 and rows % 2 == 0:
        return [(0, 0, rows // 2), (1, rows // 2, rows // 2)]
    return [(0, 0, rows)]


def part(t: LxTensor, half: int, halves: int) -> list[Key]:
    """Keys of one corelet's half of a tile's rows; a slice of a piece reads the whole piece
    (its rows need not be the piece's halves)."""
    return whole(t) if halves == 1 or t.key >= 0 else [(t.addr, half)]


@dataclass
class _Stream:
    """One core's instruction list with dependences derived from the LX it touches."""

    instrs: list[Instr] = field(default_factory=list)
    writer: dict[Key, int] = field(default_factory=dict)
    readers: dict[Key, list[int]] = field(default_factory=dict)

    def emit(self, op: str, reads: list[Key], writes: list[Key], unit: int = 0,
             **fields: int) -> None:
        deps: set[int] = set()
        for key in reads:
            if key in self.writer:
                deps.add(self.writer[key])
        for key in writes:
            if key in self.writer:
                deps.add(self.writer[key])
            deps.update(self.readers.get(key, ()))
        index = len(self.instrs)
        names = SPECS_BY_NAME[op].fields
        if len(names) != len(fields):
            raise EncodingError(f"{op}: fields {sorted(fields)}, expected {list(names)}")
        # a field is an int, or an affine form while a template is interpreted
        args = tuple(v if isinstance(v, Affine) else int(v) for v in map(fields.__getitem__, names))
        self.instrs.append(Instr(op, args, unit, tuple(sorted(deps))))
        for key in reads:
            self.readers.setdefault(key, []).append(index)
        for key in writes:
            self.writer[key] = index
            self.readers[key] = []


class CoreWalk:
    """Evaluates a KTIR kernel for one core of its `grid`, emitting its instruction stream
    (`run`); `paced` and `paced_loads` name the instructions `prefetch_order` spreads."""

    def __init__(self, fn: func.FuncOp, core: tuple[object, object], args: list[object],
                 grid: tuple[int, int]):
        self.fn = fn
        self.core = core
        self.grid = grid
        self.env: dict[SSAValue, object] = {}
        self.stream = _Stream()
        self.slot_turn: dict[Operation, int] = {}
        self.args = args
        self.symbolic = any(isinstance(v, Affine) for v in (*core, *args))
        self.paced: set[int] = set()  # store pieces, spread over the next tile's matmuls
        self.paced_loads: set[int] = set()  # slices of a resident block, spread over loads
        # LX slot of a block loaded in pieces -> (0 by rows or 1 by columns, the piece size)
        self.sliced: dict[int, tuple[int, int]] = {}
        # each inter-tile reduce's ring group on this core: (first, count, stride, root)
        self.groups: dict[Operation, tuple[int, int, int, int]] = {}
        # what the walk reads of the IR, worked out at an op's (block's, value's) first visit
        # and reused at every loop iteration after it (`memo`): the IR does not change
        # during a walk, and xDSL's accessors cost more than the walk's own arithmetic
        self.static: dict[object, object] = {}
        self.slot_values: dict[Operation, tuple[int, ...]] = {}
        self.dense_views = "spyre.dense_views" in fn.attributes

    def memo(self, key: Any, build: Callable[[CoreWalk, Any], _T]) -> _T:
        """`build(self, key)`, computed once per walk."""
        found = self.static.get(key)
        if found is None:
            found = self.static[key] = build(self, key)
        return found  # type: ignore[return-value]

    def run(self) -> list[Instr]:
        for arg, addr in zip(self.fn.body.block.args, self.args):
            self.env[arg] = addr  # a byte address: an LPDDR view's offset as it stands
        self.block(self.fn.body.block)
        return self.stream.instrs

    def block(self, ops: Block | list[Operation]) -> list[object]:
        """Run `ops` (a block, or some of its ops) in order; an `scf.yield` ends it with
        the values it yields."""
        steps = self.memo(ops, _steps) if isinstance(ops, Block) else _steps(self, ops)
        for op, handler in steps:
            if handler is None:
                return [self.env[v] for v in op.operands]
            handler(self, op)
        return []

    def slot(self, op: Operation) -> int:
        """Alternate between the op's two LX slots on every execution (ping-pong)."""
        values = self.slot_values.get(op)
        if values is None:
            slots = op.attributes.get("lx_slots")
            if not isinstance(slots, DenseArrayBase):
                raise CompileError(f"kernel @{self.fn.sym_name.data}: {op.name} has no "
                                   "lx_slots; run spyre-place-memory first")
            values = self.slot_values[op] = tuple(slots.get_values())
        turn = self.slot_turn.get(op, 0)
        self.slot_turn[op] = turn + 1
        return int(values[turn % 2])

    def lx_tensor(self, value: SSAValue, addr: int) -> LxTensor:
        shape, dtype = self.memo(value, _lx_type)
        return LxTensor(addr, shape, dtype)

    def error(self, op: Operation, what: str) -> CompileError:
        return CompileError(f"kernel @{self.fn.sym_name.data}, core {self.core}: {op.name}: "
                            f"{what}")


def _steps(it: CoreWalk, ops: Block | list[Operation]) -> list[tuple[Operation, Callable | None]]:
    """Each op of `ops` with its handler, in order, up to an `scf.yield` (handler None). An
    op the walk cannot run gets a handler that raises when it is reached, as the walk would
    have there."""
    steps: list[tuple[Operation, Callable | None]] = []
    for op in (ops.ops if isinstance(ops, Block) else ops):
        if isinstance(op, scf.YieldOp):
            steps.append((op, None))
            break
        handler = HANDLERS_BY_NAME.get(op.name)
        if it.symbolic and op.name not in SYMBOLIC_OPS:
            handler = _not_symbolic
        elif handler is None:
            handler = _unscheduled
        steps.append((op, handler))
    return steps


def _not_symbolic(it: CoreWalk, op: Operation) -> None:
    raise Symbolic(f"{op.name} is not interpreted symbolically")


def _unscheduled(it: CoreWalk, op: Operation) -> None:
    raise CompileError(f"kernel @{it.fn.sym_name.data}: spyre-schedule-dataflow cannot "
                       f"schedule {op.name}")


def _lx_type(it: CoreWalk, value: object) -> tuple[tuple[int, ...], DType]:
    """(LX shape, device type) of a tensor value."""
    assert isinstance(value, SSAValue)
    ttype = value.type
    assert isinstance(ttype, TensorType)
    return tile_dims(value), DTYPES[str(ttype.element_type)]


def affine_function(amap: AffineMap) -> Callable[[list[object]], tuple[object, ...]]:
    """`amap.eval(dims, [])` as a Python function of the dims (the same operators, so ints
    and `Affine` forms alike), built once: xDSL's `eval` walks the expression tree on
    every call."""
    if amap.num_symbols:  # not an access tile's base map: evaluated as xDSL does
        return lambda dims: tuple(amap.eval(dims, []))  # type: ignore[arg-type]
    if amap == AffineMap.identity(amap.num_dims):
        return tuple
    parts = [_affine_expr(e) for e in amap.results]
    return lambda dims: tuple(part(dims) for part in parts)


_AFFINE_OPS: dict[AffineBinaryOpKind, Callable[[object, object], object]] = {
    AffineBinaryOpKind.Add: lambda a, b: a + b,  # type: ignore[operator]
    AffineBinaryOpKind.Mul: lambda a, b: a * b,  # type: ignore[operator]
    AffineBinaryOpKind.Mod: lambda a, b: a % b,  # type: ignore[operator]
    AffineBinaryOpKind.FloorDiv: lambda a, b: a // b,  # type: ignore[operator]
    AffineBinaryOpKind.CeilDiv: lambda a, b: -(-a // b),  # type: ignore[operator]
}


def _affine_expr(expr: AffineExpr) -> Callable[[list[object]], object]:
    if isinstance(expr, AffineConstantExpr):
        value = expr.value
        return lambda dims: value
    if isinstance(expr, AffineBinaryOpExpr):
        lhs, rhs, fn = _affine_expr(expr.lhs), _affine_expr(expr.rhs), _AFFINE_OPS[expr.kind]
        return lambda dims: fn(lhs(dims), rhs(dims))
    assert isinstance(expr, AffineDimExpr), f"{expr}: the map has no symbols"
    position = expr.position
    return lambda dims: dims[position]


def _constant(it: CoreWalk, op: arith.ConstantOp) -> None:
    value = op.value
    it.env[op.result] = value.value.data if isinstance(value, IntegerAttr) else value


def _binary_index(fn: Callable[[int, int], int]) -> Callable[[CoreWalk, Operation], None]:
    def handler(it: CoreWalk, op: Operation) -> None:
        a, b, result = it.memo(op, _operands_and_result)
        it.env[result] = fn(it.env[a], it.env[b])  # type: ignore[arg-type]
    return handler


def _operands_and_result(it: CoreWalk, op: object) -> tuple:
    assert isinstance(op, Operation)
    return (*op.operands, op.results[0])


def _index_division(it: CoreWalk, op: Operation) -> None:
    """divui / remui / divsi / remsi of concrete index values (core groups, note 94)."""
    a, b = (it.env[v] for v in op.operands)
    if isinstance(a, Affine) or isinstance(b, Affine):
        raise Symbolic(f"{op.name} of a core coordinate")
    value = index_division.divide(op.name, int(a), int(b))  # type: ignore[call-overload]
    if value is None:
        raise it.error(op, f"{op.name} of {a} by {b} is undefined")
    it.env[op.results[0]] = value


def _tile_id(it: CoreWalk, op: GetComputeTileIdOp) -> None:
    for r, v in zip(op.results, it.core):
        it.env[r] = v


def _view(it: CoreWalk, op: ConstructMemoryViewOp) -> None:
    mtype = op.result.type
    assert isinstance(mtype, MemRefType)
    itemsize = DTYPES[str(mtype.element_type)].itemsize
    strides = tuple(int(s) for s in op.static_strides.get_values())
    sizes = tuple(int(s) for s in op.static_sizes.get_values())
    space = op.memory_space
    if space.kind != "ct_local":  # LPDDR: the offset is the tensor's byte address argument
        it.env[op.result] = Strided(index_value(it.env[op.offset]), sizes, strides, itemsize,
                                    view_origin(op.coordinate_set.data))
        return
    if set_bounds(op.coordinate_set.data) is None or len(sizes) != 2 or strides[-1] != 1:
        raise it.error(op, "a ct_local view must be a row-major 2-D box")
    # an LX view's offset is in elements, as KTIR has it
    base = int(index_value(it.env[op.offset])) * itemsize  # type: ignore[call-overload]
    view = Strided(base, sizes, strides, itemsize, view_origin(op.coordinate_set.data))
    it.env[op.result] = LxPart(view, int(space.ct_id))  # type: ignore[arg-type]


def _distributed_view(it: CoreWalk, op: ConstructDistributedMemoryViewOp) -> None:
    """A tensor kept in its cores' LX (note 61): each core reads and writes its own part."""
    found = [it.env[v] for v in op.parts]
    if all(isinstance(p, Strided) for p in found):  # LPDDR tensors addressed as one
        it.env[op.result] = LpddrParts(found)  # type: ignore[arg-type]
        return
    parts = [p for p in found if isinstance(p, LxPart)]
    if len(parts) != len(found):
        raise it.error(op, "only distributed views of ct_local parts (a tensor kept in LX "
                       "between kernels) are scheduled; LPDDR parts are not")
    gm, gn = it.grid
    first = parts[0]
    mc, nc = first.view.shape
    regular = len(parts) == gm * gn and all(
        p.view.base == first.view.base and p.view.strides == first.view.strides
        and p.view.shape == first.view.shape
        and p.view.origin == (p.core % gm * mc, p.core // gm * nc)
        for p in parts)
    it.env[op.result] = LxParts(parts, (mc, nc) if regular else None)


def _own_part(it: CoreWalk, op: Operation, tile: Tile) -> LxTensor:
    """The block `tile` names in this core's part of a tensor kept in LX, as an LX tensor
    (refused when it reaches into another core's part: that would be a ring transfer)."""
    parts = tile.view
    assert isinstance(parts, LxParts)
    if parts.block is not None:  # core (x, y)'s part starts at (x * mc, y * nc)
        part = parts.parts[0]
        low = [it.core[0] * parts.block[0], it.core[1] * parts.block[1]]  # type: ignore[operator]
        # a grid dim of one core has coordinate 0, even while the coordinate is symbolic
        # (a matmul's A tile at K offset k of a core's whole rows: k - y * K is k)
        low = [0 if extent == 1 and isinstance(o - lo, Affine) else lo
               for extent, o, lo in zip(it.grid, tile.origin, low)]
        where = "its core's"
    else:
        core = _linear_core(it)
        found = next((p for p in parts.parts if p.core == core), None)
        if found is None:
            raise it.error(op, f"no part of its distributed view is in core {core}'s LX")
        part, low, where = found, list(found.view.origin), f"core {core}'s"
    # the tile's place in the part: concrete once the core's own origin cancels
    rel = [o - lo for o, lo in zip(tile.origin, low)]
    if any(isinstance(r, Affine) for r in rel):
        raise Symbolic("a tile whose place in the core's LX part depends on the core")
    view = part.view
    if tile.transposed or len(rel) != 2 or any(
            r < 0 or r + n > size for r, n, size in zip(rel, tile.shape, view.shape)):
        raise it.error(op, f"the {list(tile.shape)} tile at {list(tile.origin)} is not within "
                       f"{where} own LX part of its distributed view; only a core's own part "
                       "is read or written")
    dtype = DTYPES[str(op.results[0].type.element_type if isinstance(op, LoadOp)  # type: ignore[attr-defined]
                       else op.value.type.element_type)]  # type: ignore[attr-defined]
    return LxTensor(view.local_address(rel), tuple(tile.shape), dtype,
                    row_pitch=view.strides[0] * view.itemsize, kept=True)


def _access_tile(it: CoreWalk, op: ConstructAccessTileOp) -> None:
    indices, origin_of, base, result, shape, transposed, masked = it.memo(op, _tile_static)
    it.env[result] = Tile(it.env[base], origin_of([it.env[v] for v in indices]), shape,  # type: ignore[arg-type]
                          transposed, masked)


def _tile_static(it: CoreWalk, op: object) -> tuple:
    """What an access tile op fixes: its index values, its base map as a function, its
    view's value, its result, the block's shape (transposed by the order), whether it is
    transposed and whether it is masked."""
    assert isinstance(op, ConstructAccessTileOp)
    indices = tuple(op.indices)
    base_map = op.base_map.data
    if len(indices) != base_map.num_dims:
        raise it.error(op, f"{len(indices)} indices for a base map of {base_map.num_dims} dims")
    shape = tuple(op.result.type.get_shape())
    order = op.access_tile_order.data
    transposed = False
    if order != AffineMap.identity(len(shape)):
        if not is_transpose(order, shape):
            raise it.error(op, f"access_tile_order {order} has no DMA mapping (identity, or "
                           "a transpose of the last two dims of a tile whose other dims are "
                           "1, feeding a matmul)")
        shape, transposed = (*shape[:-2], shape[-1], shape[-2]), True
    return (indices, affine_function(base_map), op.base, op.result, shape, transposed,
            is_masked(it, op))


def _dma_geometry(it: CoreWalk, op: Operation, tile: Tile,
                  store: bool) -> tuple[int, int, int, list[tuple[int, int]]]:
    """(rows, row_bytes, ddr_pitch, runs) of the DMAs moving `tile`: its innermost leading
    dims merged into rows a constant pitch apart, each row whole sticks, one DMA per index
    of the outer leading dims that do not merge with them (`runs`: each one's byte offset in
    memory and first row in LX; one run (0, 0) when all merge); refused when that is not
    exact. A masked tile past its view's end moves its part inside the view
    (`masked_tiles.inside`; 0 rows or 0 bytes when none is), in one run."""
    view, shape = tile.view, tile.shape
    assert isinstance(view, Strided)  # LX parts are never moved by DMA
    strides = view.strides
    if strides[-1] != 1:
        raise it.error(op, "the view's last dim is strided; DMA moves contiguous rows")
    # the leading dims the tile spans (extent above 1): the innermost that merge into
    # evenly spaced rows are one DMA; the ones outside them index its runs
    spanned = [i for i in range(len(shape) - 1) if shape[i] > 1]
    split = max(len(spanned) - 1, 0)
    while split > 0 and strides[spanned[split - 1]] == \
            strides[spanned[split]] * shape[spanned[split]]:
        split -= 1
    outer, spanned = spanned[:split], spanned[split:]
    cols = shape[-1]
    rows = math.prod(shape[i] for i in spanned)
    runs = [(sum(i * strides[d] * view.itemsize for i, d in zip(index, outer)), n * rows)
            for n, index in enumerate(itertools.product(*(range(shape[d]) for d in outer)))]
    if outer and masked_tiles.inside(it, op, tile) is not None:
        raise it.error(op, f"tile {list(shape)} does not flatten to evenly spaced rows of "
                       f"the view (strides {list(strides)}) and is masked; a masked tile "
                       "moves in one DMA")
    # the tile's first column in its view (a part of a distributed view starts at its
    # coordinate set's lowest point, not at 0)
    start = tile.origin[-1] - view.origin[-1] if tile.origin else 0
    if isinstance(start, Affine) and view.shape[-1] % cols:
        raise Symbolic("a tile that may run past its view's row")  # per core, below
    if isinstance(start, int) and 0 <= start < view.shape[-1] < start + cols:
        # a tile wider than the rest of its view's stick-padded row: a kernel mixing f16
        # and f32 tiles columns in f16 sticks (64 elements), and an f32 view of 67 columns
        # ends 3 sticks (96 elements) in, short of the 128-column tile. The DMA moves the
        # view's sticks only; the tile's columns past them are padding either way
        cols = view.shape[-1] - start
    clipped = masked_tiles.inside(it, op, tile)
    if clipped is not None:
        rows, cols = clipped
        if not rows * cols:
            return 0, 0, strides[-2] * view.itemsize if len(shape) > 1 else 0, runs
    row_bytes = _stick_bytes(cols * view.itemsize)
    # the pitch of the innermost dim the tile spans (a unit dim between rows is skipped)
    row_dim = spanned[-1] if spanned else len(shape) - 2
    pitch = strides[row_dim] * view.itemsize if len(shape) > 1 else row_bytes
    # a symbolic address is checked when its template is instantiated
    misaligned = not isinstance(tile.addr, Affine) and tile.addr % STICK
    if misaligned or (rows > 1 and pitch % STICK):
        raise it.error(op, f"the tile at {list(tile.origin)} starts {tile.addr % STICK} B into "
                       f"a stick (row pitch {pitch} B); DMA moves 128-byte aligned sticks")
    if any(ddr % STICK for ddr, _ in runs):
        raise it.error(op, f"tile {list(shape)} moves in {len(runs)} runs of the view "
                       f"(strides {list(strides)}), and a run starts part way into a stick; "
                       "DMA moves 128-byte aligned sticks")
    # the compiler's own views are stick-padded, so a partial last stick is padding; a
    # hand-written kernel's views (`spyre.dense_views`) are dense: its neighbours are data
    if store and cols * view.itemsize % STICK and it.dense_views \
            and start + cols < view.shape[-1]:
        raise it.error(op, f"a store of {cols} columns at column {tile.origin[-1]} would "
                       "overwrite the rest of its stick; DMA writes whole sticks")
    return rows, row_bytes, pitch, runs


def _pieces(it: CoreWalk, op: Operation, tile: Tile, itemsize: int,
            lx_pitch: int) -> list[tuple[Tile, int, int]]:
    """The parts of a distributed LPDDR view `tile` reaches: per part, the piece of the tile
    in it (a tile of the part), the piece's byte offset in the tile's LX rows and the LX
    pitch of its rows. The parts must cover the tile exactly (a coordinate in no part is an
    error, as in the interpreter); a piece keeps the tile's middle dims whole, or (a rank-3
    tile of blocks, ktir_blocks) takes one index of its middle dim, its rows then every
    `shape[1]`-th LX row; and a piece's columns start at a whole stick of the LX row."""
    view = tile.view
    assert isinstance(view, LpddrParts)
    if tile.transposed or tile.masked:
        raise it.error(op, "a tile of a distributed view read through a transposing order "
                       "or masked has no DMA mapping")
    shape, origin = tile.shape, tile.origin
    found: list[tuple[Tile, int, int]] = []
    covered = 0
    for part in view.parts:
        low = [max(o, p) for o, p in zip(origin, part.origin)]
        high = [min(o + n, p + m) for o, n, p, m in zip(origin, shape, part.origin, part.shape)]
        if any(h <= lo for lo, h in zip(low, high)):
            continue
        extent = tuple(h - lo for lo, h in zip(low, high))
        middle = math.prod(shape[1:-1])
        row = (low[0] - origin[0]) * middle if len(shape) > 1 else 0
        pitch = lx_pitch
        if len(shape) == 3 and extent[1] == 1 < shape[1]:  # one block of each row
            row, pitch = row + low[1] - origin[1], shape[1] * lx_pitch
        elif any(e != n for e, n in zip(extent[1:-1], shape[1:-1])):
            raise it.error(op, f"tile {list(shape)} at {list(origin)} meets a part of its "
                           f"distributed view in {list(extent)}: a piece must keep the "
                           "tile's middle dims whole")
        column = (low[-1] - origin[-1]) * itemsize
        if column % STICK:
            raise it.error(op, f"tile {list(shape)} at {list(origin)} meets a part of its "
                           f"distributed view at column {low[-1]}, {column % STICK} B into "
                           "a stick of its LX rows; DMA moves 128-byte aligned sticks")
        found.append((Tile(part, tuple(low), extent), row * lx_pitch + column, pitch))
        covered += math.prod(extent)
    if covered != math.prod(shape):
        raise it.error(op, f"tile {list(shape)} at {list(origin)} reaches coordinates in no "
                       "part of its distributed view")
    return found


def _load(it: CoreWalk, op: LoadOp) -> None:
    tile_value, result, count, pieces_dim = it.memo(op, _load_static)
    tile = it.env[tile_value]
    assert isinstance(tile, Tile)
    if isinstance(tile.view, LxParts):  # already in this core's LX: read where it is
        it.env[result] = _own_part(it, op, tile)
        return
    lx = it.lx_tensor(result, it.slot(op))
    lx.transposed = tile.transposed
    if isinstance(tile.view, LpddrParts):  # one DMA per part the tile reaches
        if count > 1:
            raise it.error(op, "a block of a distributed view loaded in pieces "
                           "(spyre.load_pieces) has no DMA mapping")
        for piece, lx_offset, lx_pitch in _pieces(it, op, tile, lx.dtype.itemsize, lx.pitch):
            rows, row_bytes, pitch, runs = _dma_geometry(it, op, piece, store=False)
            for ddr, row in runs:
                it.stream.emit("dma.load", [], whole(lx), ddr=piece.addr + ddr,
                               lx=lx.addr + lx_offset + row * lx_pitch, rows=rows,
                               row_bytes=row_bytes, ddr_pitch=pitch, lx_pitch=lx_pitch)
        it.env[result] = lx
        return
    rows, row_bytes, pitch, runs = _dma_geometry(it, op, tile, store=False)
    clipped = masked_tiles.inside(it, op, tile) is not None
    if clipped and count > 1:
        raise masked_tiles.refuse_pieces(it, op)
    if count > 1 and len(runs) > 1:
        raise it.error(op, f"tile {list(tile.shape)} moves in {len(runs)} runs; a block "
                       "loaded in pieces must be one")
    if count <= 1:
        if rows * row_bytes:
            for ddr, row in runs:
                it.stream.emit("dma.load", [], whole(lx), ddr=tile.addr + ddr,
                               lx=lx.addr + row * lx.pitch, rows=rows, row_bytes=row_bytes,
                               ddr_pitch=pitch, lx_pitch=lx.pitch)
        if clipped:  # a masked tail: the lanes not moved read 0
            masked_tiles.zero_rest(it, lx, rows, row_bytes // lx.dtype.itemsize)
        it.env[result] = lx
        return
    by_rows = pieces_dim == 0
    if lx.transposed or (rows % count if by_rows else row_bytes % (count * STICK)):
        raise it.error(op, f"{count} load pieces of a {rows} x {row_bytes} B block are not "
                       f"whole {'rows' if by_rows else 'sticks'}")
    # a resident block in K slices (notes 54, 57): column slices of an A block, row slices
    # of a B block; each slice is its own dependence key, the one a `tensor.extract_slice`
    # of a K step reads; paced by `prefetch_order`
    step = rows // count if by_rows else row_bytes // count
    for index in range(count):
        lx_offset = index * step * lx.pitch if by_rows else index * step
        ddr_offset = index * step * pitch if by_rows else index * step
        it.stream.emit("dma.load", [], whole(LxTensor(lx.addr + lx_offset, lx.shape, lx.dtype)),
                       ddr=tile.addr + ddr_offset, lx=lx.addr + lx_offset,
                       rows=step if by_rows else rows, row_bytes=row_bytes if by_rows else step,
                       ddr_pitch=pitch, lx_pitch=lx.pitch)
        it.paced_loads.add(len(it.stream.instrs) - 1)
    it.sliced[lx.addr] = (0, step) if by_rows else (1, step)
    it.env[result] = lx


def _load_static(it: CoreWalk, op: object) -> tuple:
    """A load's tile, result, load pieces and the dim they split."""
    assert isinstance(op, LoadOp)
    return (op.tile, op.results[0], _int_attr(op, "spyre.load_pieces", 1),
            _int_attr(op, "spyre.load_pieces_dim", 1))


def _store_static(it: CoreWalk, op: object) -> tuple:
    """A store's tile, stored value and store pieces."""
    assert isinstance(op, StoreOp)
    return op.tile, op.value, _int_attr(op, "spyre.store_pieces", 1)


def _int_attr(op: Operation, name: str, default: int) -> int:
    attr = op.attributes.get(name)
    return attr.value.data if isinstance(attr, IntegerAttr) else default


def _extract_slice(it: CoreWalk, op: tensor.ExtractSliceOp) -> None:
    """A view of part of a block loaded in pieces (`spyre.load_pieces`): no instruction.
    Dependences are kept per piece, so the slice must lie within one piece: a K slice (the
    piece itself) or, in a tail's row piece (note 57), some rows of one."""
    src = it.env[op.source]
    assert isinstance(src, LxTensor)
    dynamic = iter(it.env[v] for v in op.offsets)
    offsets = [next(dynamic) if o == DYNAMIC_INDEX else o
               for o in op.static_offsets.get_values()]
    sizes = tuple(int(v) for v in op.static_sizes.get_values())
    if list(op.static_strides.get_values()) != [1, 1] or len(offsets) != 2:
        raise it.error(op, "only unit-stride 2-D slices of an LX tile are views")
    row, col = (int(o) for o in offsets)  # type: ignore[call-overload]
    if src.kept:  # in the core's part of a tensor kept in LX: no DMA to wait for
        it.env[op.result] = LxTensor(src.addr + row * src.pitch + col * src.dtype.itemsize,
                                     sizes, src.dtype, row_pitch=src.pitch, kept=True)
        return
    by, step = it.sliced.get(src.addr, (1, 0))
    isz = src.dtype.itemsize
    first, last = (row, row + sizes[0] - 1) if by == 0 else \
        (col * isz, (col + sizes[1]) * isz - 1)
    if not step or first // step != last // step:
        raise it.error(op, "only a slice within one piece of a block loaded in pieces "
                       "(spyre.load_pieces) is a view spyre-schedule-dataflow can schedule")
    piece = src.addr + first // step * step * (src.pitch if by == 0 else 1)
    addr = src.addr + row * src.pitch + col * isz
    whole_piece = (col == 0 and sizes[0] == step) if by == 0 else sizes[0] == src.shape[0]
    it.env[op.result] = LxTensor(addr, sizes, src.dtype, row_pitch=src.pitch,
                                 key=-1 if whole_piece and addr == piece else piece)


def _store(it: CoreWalk, op: StoreOp) -> None:
    tile_value, value, count = it.memo(op, _store_static)
    tile = it.env[tile_value]
    src = it.env[value]
    assert isinstance(tile, Tile) and isinstance(src, LxTensor)
    if isinstance(tile.view, LxParts):  # kept in this core's LX (note 61)
        dst = _own_part(it, op, tile)
        if dst.addr != src.addr:  # not computed in place there (`_lx_destination`)
            halves = row_halves(src.shape[0])
            for half, row, count in halves:
                it.stream.emit("sfu.unary", part(src, half, len(halves)),
                               part(dst, half, len(halves)), unit=half, fn=UnaryFn.COPY,
                               src=src.addr + row * src.pitch, dst=dst.addr + row * dst.pitch,
                               rows=count, cols=src.shape[1], src_pitch=src.pitch,
                               dst_pitch=dst.pitch, src_dtype=src.dtype, dst_dtype=dst.dtype)
                _zero_padding(it, dst, half, row, count, len(halves))
        return
    if tile.transposed or src.transposed:
        raise it.error(op, "a store through a transposing tile order has no DMA mapping")
    _written(it, src)
    block = (math.prod(tile.shape[:-1]), tile.shape[-1])
    if block != src.shape:
        raise it.error(op, f"the {src.shape[0]}x{src.shape[1]} LX tile does not match the "
                       f"{block[0]}x{block[1]} block it is stored to (a per-row column "
                       "stored as a row needs a transpose the compiler does not insert)")
    if isinstance(tile.view, LpddrParts):  # one DMA per part the tile reaches
        for piece, lx_offset, lx_pitch in _pieces(it, op, tile, src.dtype.itemsize,
                                                  src.pitch):
            rows, row_bytes, pitch, runs = _dma_geometry(it, op, piece, store=True)
            for ddr, row in runs:
                it.stream.emit("dma.store", whole(src), [], lx=src.addr + lx_offset +
                               row * lx_pitch, ddr=piece.addr + ddr, rows=rows,
                               row_bytes=row_bytes, lx_pitch=lx_pitch, ddr_pitch=pitch)
        return
    rows, row_bytes, pitch, runs = _dma_geometry(it, op, tile, store=True)
    if not rows * row_bytes:  # a masked tile wholly outside its view: nothing is written
        return
    halves = len(row_halves(rows))
    if count <= 1 or rows % count or count % halves or masked_tiles.inside(it, op, tile) \
            or len(runs) > 1:
        for ddr, row in runs:
            it.stream.emit("dma.store", whole(src), [], lx=src.addr + row * src.pitch,
                           ddr=tile.addr + ddr, rows=rows, row_bytes=row_bytes,
                           lx_pitch=src.pitch, ddr_pitch=pitch)
        return
    # row pieces, each within one corelet's half, paced by `prefetch_order` (note 54)
    step = rows // count
    for row in range(0, rows, step):
        half = 0 if halves == 1 or row < rows // 2 else 1
        it.stream.emit("dma.store", part(src, half, halves), [], lx=src.addr + row * src.pitch,
                       ddr=tile.addr + row * pitch, rows=step, row_bytes=row_bytes,
                       lx_pitch=src.pitch, ddr_pitch=pitch)
        it.paced.add(len(it.stream.instrs) - 1)


def _stick_bytes(nbytes: int) -> int:
    """DMA moves whole sticks: a one-column tile moves the stick that holds it."""
    return stick_padded(nbytes)


def _fill(it: CoreWalk, op: linalg.FillOp) -> None:
    """A fill takes its slot and writes nothing yet: a zero fill starts a matmul's
    accumulation (accumulate = 0) or a loop-carried `acc + x` (x + 0); a reduction's init
    is written by the reduction. Any other read writes it first (`_written`)."""
    result, value = it.memo(op, _fill_static)
    lx = it.lx_tensor(result, it.slot(op))
    if value == 0.0 and math.copysign(1.0, value) > 0:
        lx.zero = True
    else:
        lx.fill = value
    it.env[result] = lx


def _fill_static(it: CoreWalk, op: object) -> tuple[SSAValue, float]:
    """A fill's result and value (a float constant, or an f32 spelled as i32 bits)."""
    assert isinstance(op, linalg.FillOp)
    owner = op.inputs[0].owner
    if isinstance(owner, arith.BitcastOp):
        owner = owner.input.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return op.results[0], bits_f32(owner.value.value.data & 0xFFFFFFFF)
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr):
        return op.results[0], float(owner.value.value.data)
    raise it.error(op, "it fills with a value that is not a float constant")


def _written(it: CoreWalk, t: LxTensor) -> None:
    """Write a fill no instruction has written yet into its tile, about to be read:
    keep(x, 0) is -0.0 whatever LX held (NaN included, note 63), and -0.0 + v is v for
    every v, zeros, infinities and NaN included, rounded once to the tile's type."""
    if not t.zero and t.fill is None:
        return
    value = 0.0 if t.zero else t.fill
    assert value is not None
    halves = row_halves(t.shape[0])
    for half, row, count in halves:
        keys = part(t, half, len(halves))
        at = t.addr + row * t.pitch
        common = {"unit": half, "src": at, "dst": at, "rows": count, "cols": t.shape[1],
                  "src_pitch": t.pitch, "dst_pitch": t.pitch, "src_dtype": t.dtype,
                  "dst_dtype": t.dtype, "reverse": 0}
        it.stream.emit("sfu.scalar", keys, keys, fn=BinaryFn.KEEP, imm=f32_bits(0.0), **common)
        it.stream.emit("sfu.scalar", keys, keys, fn=BinaryFn.ADD, imm=f32_bits(value), **common)
    t.zero, t.fill = False, None


def _generic(it: CoreWalk, op: linalg.GenericOp) -> None:
    fn, inputs, output, result, stored, store_use = it.memo(op, _generic_static)
    ins = [it.env[v] for v in inputs]
    if fn in ("matmul", "matmul_nt"):
        a, b = ins
        acc = it.env[output]
        assert isinstance(a, LxTensor) and isinstance(b, LxTensor) and isinstance(acc, LxTensor)
        if a.transposed:
            raise it.error(op, "its A operand was loaded transposed; the PT reads A as stored")
        if b.transposed:  # B^T in LX as stored: the PT reads it row by row
            fn = "matmul_nt" if fn == "matmul" else "matmul"
        for t in (a, b) if acc.zero else (a, b, acc):
            _written(it, t)
        m, k = a.shape
        n = b.shape[1] if fn == "matmul" else b.shape[0]  # matmul_nt: B is [n, k]
        halves = row_halves(m)
        for half, row, rows in halves:
            keep = [] if acc.zero else part(acc, half, len(halves))
            it.stream.emit(
                f"pt.{fn}", part(a, half, len(halves)) + whole(b) + keep,
                part(acc, half, len(halves)), unit=half,
                a=a.addr + row * a.pitch, b=b.addr, c=acc.addr + row * acc.pitch, m=rows, k=k,
                n=n, a_pitch=a.pitch, b_pitch=b.pitch, c_pitch=acc.pitch, in_dtype=a.dtype,
                accumulate=0 if acc.zero else 1)
        it.env[result] = LxTensor(acc.addr, acc.shape, acc.dtype)
        return
    init = it.env.get(output)
    # a reduction accumulates in its init's slot; elementwise generics get their own, or
    # write straight into the core's part of a tensor kept in LX that is their one use
    addr = init.addr if isinstance(init, LxTensor) else it.slot(op)
    out = None if store_use is None else _lx_destination(it, store_use)
    if out is None:
        out = it.lx_tensor(result, addr)
    rows, cols = out.shape
    halves = row_halves(rows)
    for half, row, count in halves:
        _sfu(it, op, fn, ins, out, half, row, count, cols, len(halves))
        if stored:
            _zero_padding(it, out, half, row, count, len(halves))
    it.env[result] = out


def _generic_static(it: CoreWalk, op: object) -> tuple:
    """A generic's engine function, inputs, init, result, whether the result is stored
    (its stick padding then zeroed) and its one use when that is a store."""
    assert isinstance(op, linalg.GenericOp)
    fn_attr = op.attributes.get("spyre.fn")
    if not isinstance(fn_attr, StringAttr):
        raise CompileError(f"kernel @{it.fn.sym_name.data}: linalg.generic without spyre.fn "
                           "cannot be mapped to a Spyre engine")
    fn = fn_attr.data
    result = op.results[0]
    users = [use.operation for use in result.uses]
    stored = not fn.startswith("reduce_") and any(isinstance(u, StoreOp) for u in users)
    store_use = users[0] if len(users) == 1 and isinstance(users[0], StoreOp) else None
    return fn, tuple(op.inputs), op.outputs[0], result, stored, store_use


def _zero_padding(it: CoreWalk, out: LxTensor, half: int, row: int, count: int,
                  halves: int) -> None:
    """Write -0.0 into the stick padding of rows [row, row + count) of `out`, an SFU
    result about to be stored. The SFU writes a row's `cols` elements only, so the rest of
    its last stick holds whatever LX held there; the DMA stores whole sticks, and a matmul
    that reads the stored tensor as its A contracts over them (times B's zero rows: a stale
    NaN or infinity there made a whole row NaN). keep(x, 0) is -0.0 whatever x is (design
    note 63); an int32 result is multiplied by 0. A slice of a wider tile (`row_pitch`)
    has its neighbours' columns there."""
    width = out.pitch // out.dtype.itemsize
    cols = out.shape[1]
    if out.row_pitch or cols >= width:
        return
    at = out.addr + row * out.pitch + cols * out.dtype.itemsize
    # int32 has no NaN (and KEEP no int32 form): a product by 0 zeroes it
    fn = BinaryFn.MUL if out.dtype == DType.I32 else BinaryFn.KEEP
    it.stream.emit("sfu.scalar", part(out, half, halves), part(out, half, halves), unit=half,
                   fn=fn, src=at, dst=at, rows=count, cols=width - cols,
                   src_pitch=out.pitch, dst_pitch=out.pitch, src_dtype=out.dtype,
                   dst_dtype=out.dtype, imm=f32_bits(0.0), reverse=0)


def _lx_destination(it: CoreWalk, store: StoreOp) -> LxTensor | None:
    """Where a generic's result goes when its one use, `store`, stores it to a tensor
    kept in LX through an access tile already built (convert-spyre-to-ktir builds it
    first, note 61): there, so the store is no instruction."""
    tile = it.env.get(store.tile)
    if not isinstance(tile, Tile) or not isinstance(tile.view, LxParts):
        return None
    return _own_part(it, store, tile)


def _sfu(it: CoreWalk, op: linalg.GenericOp, fn: str, ins: list[object],
         out: LxTensor, half: int, row: int, count: int, cols: int, halves: int) -> None:
    """One corelet's SFU instruction for a tile-graph generic, on rows [row, row + count)."""
    srcs = [v for v in ins if isinstance(v, LxTensor)]
    # a mask's other inputs are index values: the first row, the condition's operands
    assert len(srcs) == len(ins) or fn in ("causal_mask", "index_mask")
    dst = {"dst": out.addr + row * out.pitch, "dst_pitch": out.pitch, "dst_dtype": out.dtype}
    dst_keys = part(out, half, halves)

    def at(t: LxTensor) -> int:
        return t.addr + (row * t.pitch if t.shape[0] > 1 else 0)

    def keys(t: LxTensor) -> list[Key]:
        return part(t, half, halves) if t.shape[0] > 1 else whole(t)

    for t in srcs:
        if t.transposed:
            raise it.error(op, "it reads a tile loaded through a transposing order; only a "
                           "matmul's B operand can be read that way")
    src = srcs[0]
    common = dict(rows=count, src_pitch=src.pitch, src_dtype=src.dtype, unit=half, **dst)
    for t in srcs:
        if t.fill is not None:
            _written(it, t)
    zero = [t.zero for t in srcs]
    if zero in ([True, False], [False, True]) and fn in BINARY_FN and all(
            t.shape == out.shape for t in srcs):
        # the first iteration of a loop-carried zero accumulator (`acc + x`: Triton's
        # matmuls and sums): the fill no instruction wrote is the immediate 0, and the op
        # computes exactly x + 0 (or 0 - x), as the kernel declares
        src = srcs[zero.index(False)]
        common.update(src_pitch=src.pitch, src_dtype=src.dtype)
        reverse = 1 if zero[0] and fn not in COMMUTATIVE else 0
        it.stream.emit("sfu.scalar", keys(src), dst_keys, fn=BINARY_FN[fn], src=at(src),
                       cols=cols, imm=f32_bits(0.0), reverse=reverse, **common)
        return
    for t in srcs:
        _written(it, t)
    if fn == "causal_mask":
        # key c is masked for query q0 + r: c > r + q0, and this half starts `row` rows in
        value = op.attributes["spyre.scalar"]
        assert isinstance(value, FloatAttr)
        it.stream.emit("sfu.mask", keys(src), dst_keys, src=at(src), cols=cols,
                       diag=index_value(ins[1]) + row, imm=f32_bits(value.value.data),  # type: ignore[call-overload]
                       **common)
        return
    if fn == "index_mask":
        value = op.attributes["spyre.scalar"]
        assert isinstance(value, FloatAttr)
        for first, n, diag in index_mask.runs(it, op, ins, row, count, cols):
            it.stream.emit("sfu.mask", keys(src), dst_keys, src=at(src) + first * src.pitch,
                           dst=dst["dst"] + first * out.pitch, dst_pitch=out.pitch,
                           dst_dtype=out.dtype, rows=n, src_pitch=src.pitch,
                           src_dtype=src.dtype, unit=half, cols=cols, diag=diag,
                           imm=f32_bits(value.value.data))
        return
    if fn.startswith("reduce_"):
        valid = op.attributes["spyre.valid_cols"]
        assert isinstance(valid, IntegerAttr)
        it.stream.emit("sfu.reduce", keys(src), dst_keys, fn=REDUCE_FN[fn], src=at(src),
                       cols=valid.value.data, **common)
        return
    scalar = op.attributes.get("spyre.scalar")
    if isinstance(scalar, FloatAttr):
        reverse = 1 if "spyre.reverse" in op.attributes else 0
        it.stream.emit("sfu.scalar", keys(src), dst_keys, fn=BINARY_FN[fn], src=at(src),
                       cols=cols, imm=f32_bits(scalar.value.data), reverse=reverse, **common)
        return
    if len(srcs) == 1:
        if fn == "copy" and sfu_fill.broadcast_copy(it, src, out, half, row, count, halves):
            return
        if src.shape[0] == 1 < out.shape[0] or src.shape[1] == 1 < cols:
            raise it.error(op, f"{fn} reads a broadcast {src.shape} tile; apply it before "
                           "broadcasting (the SFU reads a unary op's source whole)")
        ufn = UnaryFn.COPY if fn == "copy" else UNARY_FN[fn]
        it.stream.emit("sfu.unary", keys(src), dst_keys, fn=ufn, src=at(src), cols=cols,
                       **common)
        return
    a, b = srcs

    def one_column(t: LxTensor) -> bool:  # one element a row, broadcast along the row
        return t.shape[1] == 1 < cols

    def one_row(t: LxTensor) -> bool:  # one row, broadcast over the rows
        return t.shape[0] == 1 < out.shape[0]

    if one_column(a) and one_column(b):
        # sfu.colwise broadcasts one column; the other would be read as a full-width tile,
        # of which only column 0 was written (a silent wrong result before)
        raise it.error(op, "both operands are columns broadcast along the row; compute the "
                       "op on the columns, then broadcast its result")
    reverse = 0
    # a column goes second (sfu.colwise broadcasts its second operand along the row; its
    # first operand may itself be a broadcast row: an outer product); sfu.binary broadcasts
    # a row in either position (a pitch of 0), so a row goes second only when the op
    # commutes, and otherwise stays first with its pitch 0 (`row - x`, `row / x`)
    if (one_column(a) and not one_column(b)) \
            or (not one_column(b) and one_row(a) and not one_row(b) and fn in COMMUTATIVE):
        a, b, reverse = b, a, 1
    fields = {"fn": BINARY_FN[fn], "src0": at(a), "src1": at(b), "dst": dst["dst"],
              "rows": count, "cols": cols, "src0_pitch": 0 if one_row(a) else a.pitch,
              "dst_pitch": out.pitch, "src0_dtype": a.dtype, "src1_dtype": b.dtype,
              "dst_dtype": out.dtype}
    reads = keys(a) + keys(b)
    if one_column(b):
        it.stream.emit("sfu.colwise", reads, dst_keys, unit=half, src1_pitch=b.pitch,
                       reverse=reverse, **fields)
        return
    row_broadcast = b.shape[0] == 1 < count
    it.stream.emit("sfu.binary", reads, dst_keys, unit=half,
                   src1_pitch=0 if row_broadcast else b.pitch, **fields)


def _for(it: CoreWalk, op: scf.ForOp) -> None:
    bounds, iter_args, body, index, args, results = it.memo(op, _for_static)
    env = it.env
    lb, ub, step = (int(env[v]) for v in bounds)  # type: ignore[call-overload]
    carried = [env[v] for v in iter_args]
    for i in range(lb, ub, step):
        env[index] = i
        for arg, value in zip(args, carried):
            env[arg] = value
        carried = it.block(body)
    for r, value in zip(results, carried):
        env[r] = value


def _for_static(it: CoreWalk, op: object) -> tuple:
    """An scf.for's bound values, iteration arguments' inits, body, induction variable,
    iteration arguments and results."""
    assert isinstance(op, scf.ForOp)
    body = op.body.block
    return ((op.lb, op.ub, op.step), tuple(op.iter_args), body, body.args[0],
            tuple(body.args[1:]), tuple(op.results))


def _cmpi(it: CoreWalk, op: arith.CmpiOp) -> None:
    """An index comparison (an `Affine` operand raises `Symbolic`: the core's coordinates
    become concrete, note 59's grid-row stores)."""
    a, b = (it.env[v] for v in op.operands)
    predicate = op.predicate.value.data
    if predicate not in _CMPI:
        raise it.error(op, f"predicate {predicate} is not an index comparison")
    it.env[op.result] = int(_CMPI[predicate](a, b))


_CMPI: dict[int, Callable[[object, object], bool]] = {
    0: lambda a, b: a == b, 1: lambda a, b: a != b,
    2: lambda a, b: a < b, 3: lambda a, b: a <= b, 4: lambda a, b: a > b, 5: lambda a, b: a >= b,  # type: ignore[operator]
    6: lambda a, b: a < b, 7: lambda a, b: a <= b, 8: lambda a, b: a > b, 9: lambda a, b: a >= b,  # type: ignore[operator]
}


def _select(it: CoreWalk, op: arith.SelectOp) -> None:
    """An index select (a loop bound clamped to the rows: `min(start + chunk, R)` written
    cmpi + select); its condition is concrete on every core (`Symbolic` otherwise)."""
    if not isinstance(op.result.type, (IndexType, IntegerType)):
        raise it.error(op, f"a select of {op.result.type} outside a linalg.generic")
    it.env[op.result] = it.env[op.lhs] if it.env[op.cond] else it.env[op.rhs]


def _if(it: CoreWalk, op: scf.IfOp) -> None:
    """The branch the core takes (its condition is concrete on every core)."""
    region = op.true_region if it.env[op.cond] else op.false_region
    results = it.block(region.block) if region.blocks else []
    for r, value in zip(op.results, results):
        it.env[r] = value


def _linear_core(it: CoreWalk) -> int:
    """The core's linear tile id, y * gm + x (`Symbolic` while its coordinates are)."""
    if any(isinstance(c, Affine) for c in it.core):
        raise Symbolic("an inter-tile group depends on the core")
    return linear_core([int(c) for c in it.core], it.grid)  # type: ignore[call-overload]


def _ring_group(it: CoreWalk, op: InterTileReduceOp,
                produce: InterTileProduceOp) -> tuple[int, int, int, int]:
    """(first, count, stride, root) of the ring.reduce the core joins for `op`: its group's
    producer tiles must be evenly spaced cores, its consumers all of them (root -1) or one
    (the root). Worked out once per op (the reduce runs once per tile)."""
    if op in it.groups:
        return it.groups[op]
    core = _linear_core(it)
    tiles = math.prod(it.grid)
    tile_set = produce.producer_tiles_per_group.data
    try:
        producers = {group: group_tiles(tile_set, group, tiles, "producer")
                     for group in tile_groups(produce.future_type.groups.data)}
        group = next((g for g, members in producers.items() if core in members), None)
        if group is None:
            raise it.error(op, f"core {core} produces for no group, but it reaches the reduce")
        consumers = group_tiles(op.consumer_tiles_per_group.data, group, tiles, "consumer")
    except KtirError as error:
        raise it.error(op, str(error)) from None
    members = producers[group]
    if consumers == members:
        root = -1
    elif len(consumers) == 1 and consumers[0] in members:
        root = consumers[0]
    else:
        raise it.error(op, f"group {group}: consumers {consumers} must be the producers "
                       f"{members} (all-reduce) or one of them")
    stride = members[1] - members[0] if len(members) > 1 else 1
    if members != list(range(members[0], members[0] + stride * len(members), stride)):
        raise it.error(op, f"group {group}: tiles {members} are not evenly spaced cores; "
                       "ring.reduce joins first, first + stride, ...")
    it.groups[op] = (members[0], len(members), stride, root)
    return it.groups[op]


def _produce(it: CoreWalk, op: InterTileProduceOp) -> None:
    """A producer's partials stay where they were computed; its delivery op moves them."""
    body = op.body.block
    it.env[body.args[0]] = -1  # the group index: read only by ops the region would compute
    *ops, yielded = list(body.ops)
    it.block(ops)
    it.env[op.future] = [it.env[v] for v in yielded.operands]


def _inter_tile_reduce(it: CoreWalk, op: InterTileReduceOp) -> None:
    """A sum over a group of cores as one `ring.reduce` (note 59): the group's tiles must be
    an arithmetic progression of cores (first, stride, count), its consumers all of them
    (root -1: an all-reduce) or one (the root), the combiner one `arith.addf`. The result
    stays in the partial's slot (spyre-place-memory gives the op the partial's slots)."""
    produce = op.future.owner
    assert isinstance(produce, InterTileProduceOp)
    partials = it.env[op.future]
    assert isinstance(partials, list)
    if len(partials) != 1 or not op.sums_its_arguments:
        combiner = [o.name for o in op.combiner.block.ops]
        raise it.error(op, "ring.reduce sums one partial; the combiner must be one arith.addf "
                       f"of its two arguments (found {', '.join(combiner)})")
    if op.producer_dependency_per_consumer is not None:
        raise it.error(op, "a partial reduction (producer_dependency_per_consumer) is not "
                       "lowered; ring.reduce folds every producer of the group")
    src = partials[0]
    if not isinstance(src, LxTensor) or src.zero or len(src.shape) != 2:
        raise it.error(op, "its partial must be a 2-D tile computed in LX")
    first, count, stride, root = _ring_group(it, op, produce)
    core = _linear_core(it)
    writes = whole(src) if root < 0 or root == core else []
    it.stream.emit("ring.reduce", whole(src), writes, src=src.addr, dst=src.addr,
                   rows=src.shape[0], cols=src.shape[1], src_pitch=src.pitch,
                   dst_pitch=src.pitch, dtype=src.dtype, first=first, count=count,
                   stride=stride, root=root, tag=REDUCE_TAG)
    it.env[op.results[0]] = LxTensor(src.addr, src.shape, src.dtype)


REDUCE_TAG = 1  # ring.reduce's tag (operand sharing's sends and receives use 0)


def _noop(it: CoreWalk, op: Operation) -> None:
    return None


def _same_rows(it: CoreWalk, op: Operation) -> None:
    """A collapse or expand of a tile's leading dims (spyre-legalize-ktir's
    `regroup_rows`): the same rows in the same LX slot."""
    src = it.env[op.operands[0]]
    if not isinstance(src, LxTensor) or "spyre.tile" not in op.attributes:
        raise it.error(op, "only a regrouping of a tile's leading dims (spyre-legalize-ktir) "
                       "is read in place")
    it.env[op.results[0]] = src


# ---- gathers and scatters: loads and stores through indirect access tiles (note 28) -------

def _indirect_tile(it: CoreWalk, op: ConstructIndirectAccessTileOp) -> None:
    """The dma.gather / dma.scatter pieces of an indirect tile on this core
    (`ktir_indirect.indirect_tile`)."""
    captured = [int(it.env[v]) for v in op.captured_variables]  # type: ignore[call-overload]
    symbols = [int(it.env[v]) for v in op.symbol_operands]  # type: ignore[call-overload]
    table, index = it.env[op.base], it.env[op.indirect_memrefs[0]]
    if not isinstance(table, Strided) or not isinstance(index, Strided):
        raise it.error(op, "the table and the index must be views of LPDDR tensors")
    if index.itemsize != INDEX_BYTES or index.strides[-1] != 1:
        raise it.error(op, "the index view must hold contiguous int32 (the DMA's indices)")
    it.env[op.result] = indirect_tile(op, captured, symbols, table, index,
                                      lambda what: it.error(op, what))


def _index_vector(it: CoreWalk, op: Operation, tile: IndirectTile) -> tuple[LxTensor, int]:
    """A dma.load of the sticks holding the tile's indices into this execution's index slot;
    the LX tensor of those sticks and the LX address of the tile's lowest index."""
    index_slots = op.attributes.get("lx_index_slots")
    if not isinstance(index_slots, DenseArrayBase):
        raise it.error(op, "an access through an indirect tile has no lx_index_slots; run "
                       "spyre-place-memory first")
    turn = it.slot_turn.get(op, 0)
    it.slot_turn[op] = turn + 1
    first_slot, second_slot = (int(v) for v in index_slots.get_values())
    slot = (first_slot, second_slot)[turn % 2]
    ddr, nbytes = index_sticks(tile)
    if nbytes > second_slot - first_slot:
        raise it.error(op, f"its tile reads indices spread over {nbytes} bytes, more than the "
                       f"{second_slot - first_slot} bytes of LX reserved for them; read "
                       "indices that lie closer together per tile (smaller tiles)")
    idx = LxTensor(slot, (1, nbytes // 4), DType.I32)
    it.stream.emit("dma.load", [], whole(idx), ddr=ddr, lx=slot, rows=1,
                   row_bytes=nbytes, ddr_pitch=nbytes, lx_pitch=nbytes)
    return idx, slot - ddr


def _gather_load(it: CoreWalk, op: LoadOp) -> None:
    """A load through an indirect tile: the index sticks, then a dma.gather per piece of
    the rows they name (checked against the table's rows on device)."""
    tile = it.env[it.memo(op, _load_static)[0]]
    if not isinstance(tile, IndirectTile):
        _load(it, op)
        return
    turn = it.slot_turn.get(op, 0)
    idx, at = _index_vector(it, op, tile)
    it.slot_turn[op] = turn  # the index and the data slots alternate together
    lx = it.lx_tensor(op.results[0], it.slot(op))
    for piece in tile.pieces:
        it.stream.emit("dma.gather", whole(idx), whole(lx), ddr=piece.ddr,
                       lx=lx.addr + piece.lx_row * lx.pitch, rows=piece.rows,
                       row_bytes=tile.row_bytes, ddr_pitch=tile.pitch,
                       lx_pitch=piece.lx_step * lx.pitch, idx=at + piece.index_addr,
                       limit=tile.limit)
    it.env[op.results[0]] = lx


def _scatter_store(it: CoreWalk, op: StoreOp) -> None:
    """A store through an indirect tile: the index sticks, then a dma.scatter per piece of
    the tile's rows to the table rows they name (checked on device)."""
    tile = it.env[it.memo(op, _store_static)[0]]
    if not isinstance(tile, IndirectTile):
        _store(it, op)
        return
    src = it.env[op.value]
    assert isinstance(src, LxTensor)
    if src.shape != (tile.rows, tile.cols):
        raise it.error(op, f"the {src.shape[0]}x{src.shape[1]} LX tile does not match the "
                       f"{tile.rows}x{tile.cols} indirect tile")
    idx, at = _index_vector(it, op, tile)
    for piece in tile.pieces:
        it.stream.emit("dma.scatter", whole(idx) + whole(src), [],
                       lx=src.addr + piece.lx_row * src.pitch, ddr=piece.ddr, rows=piece.rows,
                       row_bytes=tile.row_bytes, lx_pitch=piece.lx_step * src.pitch,
                       ddr_pitch=tile.pitch, idx=at + piece.index_addr, limit=tile.limit)


HANDLERS: dict[type, Callable] = {
    arith.ConstantOp: _constant,
    arith.AddiOp: _binary_index(lambda a, b: a + b),
    arith.MuliOp: _binary_index(lambda a, b: a * b),
    GetComputeTileIdOp: _tile_id,
    ConstructMemoryViewOp: _view,
    ConstructDistributedMemoryViewOp: _distributed_view,
    ConstructAccessTileOp: _access_tile,
    LoadOp: _gather_load,
    ConstructIndirectAccessTileOp: _indirect_tile,
    StoreOp: _scatter_store,
    linalg.FillOp: _fill,
    linalg.GenericOp: _generic,
    tensor.ExtractSliceOp: _extract_slice,
    scf.ForOp: _for,
    scf.IfOp: _if,
    arith.CmpiOp: _cmpi,
    arith.SelectOp: _select,
    arith.SubiOp: _binary_index(lambda a, b: a - b),
    InterTileProduceOp: _produce,
    InterTileReduceOp: _inter_tile_reduce,
    tensor.EmptyOp: _noop,
    tensor.CollapseShapeOp: _same_rows,
    tensor.ExpandShapeOp: _same_rows,
    func.ReturnOp: _noop,
}
# by op name: spyrec's extended standard dialects define their own classes for some names
HANDLERS_BY_NAME: dict[str, Callable] = {cls.name: h for cls, h in HANDLERS.items()}
HANDLERS_BY_NAME.update(dict.fromkeys(index_division.DIVISIONS, _index_division))


# ops whose handlers compute on symbolic values exactly or raise Symbolic (a handler added
# to the table is not trusted with them until it is listed here: the kernel falls back to
# the plain interpreter)
SYMBOLIC_OPS = frozenset({"arith.constant", "arith.addi", "arith.muli",
                          "ktdp.get_compute_tile_id", "ktdp.construct_memory_view",
                          "ktdp.construct_distributed_memory_view",
                          "ktdp.construct_access_tile", "ktdp.load", "ktdp.store",
                          "linalg.fill", "linalg.generic", "scf.for", "tensor.empty",
                          "tensor.extract_slice", "func.return", "tensor.collapse_shape",
                          "tensor.expand_shape",
                          # concrete only on concrete cores: they raise `Symbolic` otherwise
                          "arith.cmpi", "scf.if", "ktdp.inter_tile_produce",
                          "ktdp.inter_tile_reduce", *index_division.DIVISIONS})

