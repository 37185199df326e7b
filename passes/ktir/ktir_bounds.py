"""Static bounds of a KTIR kernel's access tiles: every core's tiles must lie in their views.

A tile that reaches past its view is not a KTIR error the device would notice: the DMA the
back end makes of it reads (or writes) whatever lies next to the tensor in LPDDR, usually
another tensor of the program. `check_tile_bounds` proves, before anything is scheduled,
that no load or store of the kernel leaves its view, for every core of the grid and every
iteration of its loops, or raises a `CompileError` naming the kernel, the core (and the
loop iteration), the op, the tile's coordinates and the view's extent.

How: each core's index computations are evaluated concretely (tile ids, constants, index
arithmetic, `affine.apply`/`min`, `scf.for` with known bounds unrolled, `scf.if` on
known conditions), tensor computations are skipped. A tile is checked where a `ktdp.load` or
`ktdp.store` uses it: its points are its base (the base map of the evaluated indices) plus
the box of its access_tile_set, and each must lie in the view's sizes and coordinate set.

What it leaves alone, because the value is not static or not a box: tiles whose indices
depend on loaded data or on runtime arguments, tiles under an `scf.if` on an unknown
condition or in a loop of unknown trip count (they may never run), views with dynamic
sizes, non-box sets, distributed views, indirect tiles, tiles of tensors, and kernels that
would take more than `BUDGET` loop iterations and tile checks to unroll. The back end
refuses most of these anyway; what it takes is still range-checked per DMA by the emulator
(runtime/span.py), which faults on a DMA that runs out of its tensor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import affine, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineMap, AffineSet

from spyrec.diagnostics import CompileError
from spyrec.dialects.ktdp import (
    ConstructAccessTileOp,
    ConstructMemoryViewOp,
    GetComputeTileIdOp,
    LoadOp,
    StoreOp,
)
from spyrec.dialects.ktdp_affine import bind_symbols, is_box
from spyrec.dialects.ktdp_values import (
    COLUMN_BLOCK,
    MASKED_KERNEL,
    MASKED_TILE,
    core_coords,
    set_bounds,
)
from spyrec.dialects.spyre_plan import ktir_grid

BUDGET = 1 << 18  # loop iterations and tile checks per kernel; past it, left to the emulator


def _trunc_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


_INDEX_OPS: dict[str, Callable[[int, int], int]] = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.divsi": _trunc_div,
    "arith.divui": lambda a, b: a // b,
    "arith.floordivsi": lambda a, b: a // b,
    "arith.ceildivsi": lambda a, b: -(-a // b),
    "arith.ceildivui": lambda a, b: -(-a // b),
    "arith.remsi": lambda a, b: a - b * _trunc_div(a, b),
    "arith.remui": lambda a, b: a % b,
    "arith.maxsi": max,
    "arith.minsi": min,
    "arith.maxui": max,
    "arith.minui": min,
}
_DIVISIONS = frozenset({"arith.divsi", "arith.divui", "arith.floordivsi", "arith.ceildivsi",
                        "arith.ceildivui", "arith.remsi", "arith.remui"})
# arith.cmpi predicates: eq ne slt sle sgt sge ult ule ugt uge (index values are never negative
# where the unsigned ones are used, so signed comparison gives their answer)
_COMPARE: list[Callable[[int, int], bool]] = [
    lambda a, b: a == b, lambda a, b: a != b, lambda a, b: a < b, lambda a, b: a <= b,
    lambda a, b: a > b, lambda a, b: a >= b, lambda a, b: a < b, lambda a, b: a <= b,
    lambda a, b: a > b, lambda a, b: a >= b,
]
_CASTS = frozenset({"arith.index_cast", "arith.index_castui"})


@dataclass(frozen=True)
class _View:
    """A memory view with static sizes: the global coordinates it holds, per dim."""

    op: ConstructMemoryViewOp
    extent: list[tuple[int, int]]  # inclusive, in the coordinate set's (global) coordinates


@dataclass(frozen=True)
class _Tile:
    """A direct access tile on a `_View`: per dim, the inclusive range of its coordinates."""

    op: ConstructAccessTileOp
    view: _View
    box: list[tuple[int, int]]

    def starts_before(self) -> bool:
        """Whether some dim of the tile starts before its view's."""
        return any(lo < v_lo for (lo, _), (v_lo, _) in zip(self.box, self.view.extent))


@dataclass
class _Memo:
    """What all cores of one kernel share: the steps taken, and per tile op what does not
    change between iterations and cores (xDSL's property accessors cost more than the
    arithmetic)."""

    steps: int = 0  # loop iterations and tile checks so far
    shapes: dict[Operation, tuple[int, AffineMap]] = field(default_factory=dict)
    boxes: dict[tuple[Operation, tuple[int, ...]], list[tuple[int, int]] | None] = field(
        default_factory=dict)  # (tile op, symbols) -> its set's box, None if not a box


class _Budget(Exception):
    """The kernel takes more steps than `BUDGET`: left to the emulator."""


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"


def _ranges(box: Sequence[tuple[int, int]]) -> str:
    return "[" + ", ".join(f"{lo}..{hi}" for lo, hi in box) + "]"


def check_tile_bounds(fn: FuncOp) -> None:
    """Raise `CompileError` if some core's load or store of `fn` leaves its view."""
    grid = ktir_grid(fn)
    cores = 1
    for extent in grid:
        cores *= extent
    memo = _Memo()
    try:
        for core in range(cores):
            _Core(fn, core, core_coords(core, grid), memo).run()
    except _Budget:
        return


class _Core:
    """One core's evaluation of a kernel's index computations."""

    def __init__(self, fn: FuncOp, core: int, coords: tuple[int, ...], memo: _Memo):
        self.fn = fn
        self.core = core
        self.coords = coords
        self.memo = memo
        self.env: dict[SSAValue, Any] = {}
        self.loops: list[tuple[SSAValue, int]] = []  # enclosing scf.for: (iv, its value)
        # inside code that may not run (an scf.if on an unknown condition, a loop of unknown
        # trip count): its tiles are evaluated but not refused, only certain accesses are
        self.maybe = 0

    def run(self) -> None:
        self.block(self.fn.body.block)

    def block(self, block: Block) -> list[Any]:
        """Evaluate `block`; what its terminator yields (None where unknown)."""
        for op in block.ops:
            if op is block.last_op and op.name in ("scf.yield", "func.return"):
                return [self.env.get(v) for v in op.operands]
            self.op(op)
        return []

    def op(self, op: Operation) -> None:
        args = [self.env.get(v) for v in op.operands]
        ints = [a for a in args if isinstance(a, int)]
        known = len(ints) == len(args)
        if op.name == "arith.constant":
            attr = op.properties.get("value", op.attributes.get("value"))
            if isinstance(attr, IntegerAttr):
                self.env[op.results[0]] = attr.value.data
        elif op.name in _INDEX_OPS and known:
            if op.name in _DIVISIONS and args[1] == 0:
                return  # a division by zero is the program's own error, not a bound
            self.env[op.results[0]] = _INDEX_OPS[op.name](*ints)
        elif op.name in _CASTS and known:
            self.env[op.results[0]] = args[0]
        elif op.name == "arith.cmpi" and known:
            predicate = op.properties["predicate"]
            assert isinstance(predicate, IntegerAttr)
            self.env[op.results[0]] = _COMPARE[predicate.value.data](*ints)
        elif op.name == "arith.select" and isinstance(args[0], bool):
            self.env[op.results[0]] = args[1] if args[0] else args[2]
        elif isinstance(op, affine.ApplyOp | affine.MinOp) and known:
            amap = op.map.data
            results = amap.eval(ints[: amap.num_dims], ints[amap.num_dims:])
            if isinstance(op, affine.ApplyOp):
                self.env[op.results[0]] = results[0]
            else:
                self.env[op.results[0]] = min(results)
        elif isinstance(op, GetComputeTileIdOp):
            for index, result in enumerate(op.results):
                self.env[result] = self.coords[index] if index < len(self.coords) else 0
        elif isinstance(op, ConstructMemoryViewOp):
            self.view(op)
        elif isinstance(op, ConstructAccessTileOp):
            self.tile(op, args)
        elif isinstance(op, LoadOp | StoreOp):
            tile = args[0 if isinstance(op, LoadOp) else 1]
            if isinstance(tile, _Tile):
                self.check(op, tile)
        elif isinstance(op, scf.ForOp):
            self.loop(op, args)
        elif isinstance(op, scf.IfOp):
            condition = args[0]
            self.maybe += condition is None  # unknown: either branch may run, or neither
            for index, region in enumerate(op.regions):
                if condition is None or (index == 0) == bool(condition):
                    for block in region.blocks:
                        self.block(block)
            self.maybe -= condition is None
        # anything else (tensor computations, inter-tile ops, loops of unknown form)
        # gives no index value: tiles built from its results are not checked

    def loop(self, op: scf.ForOp, args: list[Any]) -> None:
        lower, upper, step = args[:3]
        body = op.body.block
        carried: list[Any] = list(args[3:])
        if not all(isinstance(v, int) for v in (lower, upper, step)) or step <= 0:
            # evaluated once for the values that do not depend on the iteration; the body
            # may also not run at all
            self.bind(body, [None] * (1 + len(carried)))
            self.maybe += 1
            self.block(body)
            self.maybe -= 1
            return
        for iv in range(lower, upper, step):
            self.step()
            self.bind(body, [iv, *carried])
            self.loops.append((body.args[0], iv))
            try:
                carried = self.block(body)
            finally:
                self.loops.pop()
        for result, value in zip(op.results, carried, strict=False):
            self.env[result] = value

    def bind(self, block: Block, values: Sequence[Any]) -> None:
        for arg, value in zip(block.args, values, strict=False):
            self.env[arg] = value

    def view(self, op: ConstructMemoryViewOp) -> None:
        if op.sizes or op.strides:
            return  # dynamic sizes or strides: only a run knows the extent
        sizes = [int(s) for s in op.static_sizes.get_values()]
        bounds = set_bounds(op.coordinate_set.data)
        if bounds is None or not is_box(op.coordinate_set.data) or len(bounds) != len(sizes):
            return
        # the view holds the coordinates of its set that also lie within its sizes, counted
        # from the set's smallest point
        extent = [(low, min(high, low + size - 1)) for (low, high), size in zip(bounds, sizes)]
        self.env[op.result] = _View(op, extent)

    def tile(self, op: ConstructAccessTileOp, args: list[Any]) -> None:
        view = args[0]
        if not isinstance(view, _View) or not all(isinstance(v, int) for v in args[1:]):
            return
        memo = self.memo
        shape = memo.shapes.get(op)
        if shape is None:
            shape = memo.shapes[op] = (len(op.indices), op.base_map.data)
        count, base_map = shape
        symbols = tuple(args[1 + count:])
        key = (op, symbols)
        if key not in memo.boxes:
            tile_set: AffineSet = bind_symbols(op.access_tile_set.data, symbols)
            box = set_bounds(tile_set)
            memo.boxes[key] = box if box is not None and is_box(tile_set) else None
        bounds = memo.boxes[key]
        if bounds is None:
            return
        base = base_map.eval(args[1: 1 + count], [])
        box = [(b + low, b + high) for b, (low, high) in zip(base, bounds)]
        self.env[op.result] = _Tile(op, view, box)

    def step(self) -> None:
        self.memo.steps += 1
        if self.memo.steps > BUDGET:
            raise _Budget

    def check(self, op: LoadOp | StoreOp, tile: _Tile) -> None:
        self.step()
        if self.maybe or not any(hi >= lo and (lo < v_lo or hi > v_hi)
                                 for (lo, hi), (v_lo, v_hi) in zip(tile.box, tile.view.extent)):
            return
        # a masked tail past the view's end: the back end moves the lanes inside only
        # (spyrecode.core_walk `_masked_extent`); one starting before the view is refused
        if self.masked(tile) and not tile.starts_before():
            return
        raise CompileError(self.message(op, tile))

    def masked(self, tile: _Tile) -> bool:
        return MASKED_TILE in tile.op.attributes or MASKED_KERNEL in self.fn.attributes

    def message(self, op: LoadOp | StoreOp, tile: _Tile) -> str:
        coords = ", ".join(f"{axis}={c}" for axis, c in zip("xyz", self.coords))
        where = f"kernel @{self.fn.sym_name.data}, core {self.core} ({coords})"
        if self.loops:
            where += " at " + ", ".join(f"{_name(iv)} = {v}" for iv, v in self.loops)
        view = tile.view.op.result
        assert isinstance(view.type, MemRefType)
        verb = "loads" if isinstance(op, LoadOp) else "stores"
        subject = f"ktdp.load ({_name(op.results[0])})" if isinstance(op, LoadOp) else \
            f"ktdp.store of {_name(op.operands[0])}"
        block = tile.op.attributes.get(COLUMN_BLOCK)
        if isinstance(block, IntegerAttr) and tile.box[-1][0] > 0:
            width = block.value.data
            column = tile.box[-2][0] * width + tile.box[-1][0]
            return (f"{where}: {subject} {verb} tile {_name(tile.op.result)} at column "
                    f"{column}, not a multiple of its width {width}: every tile on "
                    f"{_name(view)} is {width} columns wide, narrower than a 128-byte stick, "
                    f"so the compiler stores the tensor's rows in blocks of {width} columns, "
                    "each in sticks of its own (DMA moves whole sticks; spyrec/frontend/"
                    f"ktir_blocks.py); start every tile at a multiple of {width}, or make the "
                    "tiles whole sticks wide")
        past = [f"dim {d} {what}" for d, ((lo, hi), (v_lo, v_hi))
                in enumerate(zip(tile.box, tile.view.extent))
                for what, out in ((f"starts at {lo}", lo < v_lo), (f"reaches {hi}", hi > v_hi))
                if out]
        return (f"{where}: {subject} {verb} tile {_name(tile.op.result)} at coordinates "
                f"{_ranges(tile.box)}, outside view {_name(view)} ({view.type}), whose extent "
                f"is {_ranges(tile.view.extent)} ({'; '.join(past)}): its DMA would "
                f"{'read' if isinstance(op, LoadOp) else 'write'} past the tensor, another "
                "tensor's bytes; keep every core's tiles within their view"
                + (MASKED_NOTE if self.masked(tile) else "" if tile.starts_before() else TAIL_HINT))


# the interpreter drops a masked tile's lanes outside the view (docs/ktir.md §7); the back
# end moves the lanes from the tile's first to the view's end, so a masked tile that starts
# before its view is refused like any other tile that leaves its view
MASKED_NOTE = ("; the tile is masked, and the back end compiles masked tails past the end of "
               "a view only (its DMA starts at the tile's first lane): start the tile inside "
               "the view, or run the kernel in the interpreter (`spyrec run kernel.mlir`)")
# an unmasked tile past the view's end: it may be a Triton tail meant to be masked
TAIL_HINT = ("; if the lanes past the view's end are a tail meant to be dropped (Triton's "
             "masked tail), mask the tile (ktdp.masked, or compile with --masked-tails: "
             "docs/ktir.md §7)")

