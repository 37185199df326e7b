"""The exact LX bytes of a tile-graph kernel's tiling, decided on the tile graph.

spyre-tile admits a tiling only if spyre-place-memory will fit the kernel's tiles in LX.
The cost model's footprint (`costmodel.lx_footprint`) prices a tiling fast but bounds the
live tile-graph values by count, while the allocator reuses a dead value's slots only for a
value of the same geometry in the same loop body (note 48), so a wide tile graph can need
more than the model says. This module computes what the allocator will give, from the tile
graph and the tiling alone: it walks the loop nest convert-spyre-to-ktir builds for a
tile-graph kernel (hoisted row operands, the row and column loops, a resident matmul block,
the K loop, a tail's row pieces, the out tile's loads, generics, reductions, ring
all-reduces and stores, in that order) as a list of tile steps per loop body, and applies
spyre-place-memory's rule to them:

- a load takes its own slots, `buffers` of them (one when it runs once per core), and none
  when it reads a tensor kept in LX;
- a reduction or matmul accumulates in its fill's slots, a ring all-reduce sums in its
  partial's slots;
- an elementwise step whose first input has its result's type, no other use and the same
  loop body runs in place;
- any other computed tile takes the slots of a dead computed tile of the same loop body and
  geometry (rows and LX row pitch), else fresh ones.

The planning stage so never lowers a kernel to price it. The two must agree exactly:
test/python/test_lx_need.py lowers and places every candidate tiling of a set of kernels
and compares (note 69).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.ir import SSAValue

from spyrec.costmodel import Split, Tiling, tail_rows
from spyrec.dialects.spyre import MatmulOp
from spyrec.passes.graph.spyre_stickify import layout_of
from spyrec.passes.planning.kernel_analysis import (
    KernelInfo,
    Kind,
    itemsize,
    kept_in_lx,
    lx_tile_bytes,
    op_kind,
    padded_rows_cols,
    read_split,
)
from spyrec.target import SpyreTarget, round_up
from spyrec.target.layout import STICK_BYTES

FOREVER = 1 << 62
F32 = "f32"


@dataclass(eq=False)
class _Tile:
    """A tile of the lowered kernel: its type (element, rows, cols), the loop body that
    defines it, and what the allocator learns of it (uses, last use, slot pair)."""

    element: str
    rows: int
    cols: int
    body: _Body
    carried: bool = False  # carried by a loop: lives for good
    uses: int = 0
    end: int = 0
    pair: _Pair | None = None

    @property
    def type(self) -> tuple[str, int, int]:
        return self.element, self.rows, self.cols


@dataclass(eq=False)
class _Pair:
    """A slot pair: the geometry it was made for and the tiles that live in it."""

    geometry: tuple[int, int]
    owners: list[_Tile] = field(default_factory=list)


@dataclass(eq=False)
class _Step:
    """An op of a loop body as the allocator sees it. `kind`: load, fill, generic (with
    `init`: accumulates there), loop (an `scf.for` or `scf.if` whose `nested` body runs
    here; with a result, a matmul's K loop whose result lives in `init`'s slots), use (no
    tile of its own: a store, a ring all-reduce's produce)."""

    kind: str
    result: _Tile | None = None
    operands: list[_Tile] = field(default_factory=list)  # SSA uses
    copies: int = 0  # a load's slots
    init: _Tile | None = None
    nested: _Body | None = None
    alive: list[_Tile] = field(default_factory=list)  # live here without an SSA use


@dataclass(eq=False)
class _Body:
    """A loop body (or the function's block): its steps in program order."""

    steps: list[_Step] = field(default_factory=list)

    def add(self, step: _Step) -> _Tile | None:
        self.steps.append(step)
        return step.result


class _Allocator:
    """spyre-place-memory's slot rule (`assign_lx_slots`, note 48) over tile steps."""

    def __init__(self, target: SpyreTarget, buffers: int):
        self.target, self.buffers = target, buffers
        self.used = 0
        self.pairs: list[_Pair] = []

    def bytes_of(self, tile: _Tile) -> int:
        return lx_tile_bytes(tile.element, tile.rows, tile.cols, self.target)

    def geometry(self, tile: _Tile) -> tuple[int, int]:
        return tile.rows, self.bytes_of(tile) // max(tile.rows, 1)

    def fresh(self, tile: _Tile, copies: int | None = None) -> _Pair:
        self.used += (self.buffers if copies is None else copies) * self.bytes_of(tile)
        pair = _Pair(self.geometry(tile))
        self.pairs.append(pair)
        return pair

    def reuse(self, tile: _Tile, at: int) -> _Pair:
        """A dead pair of `tile`'s body and geometry, else fresh slots."""
        if tile.end >= FOREVER:
            return self.fresh(tile)
        geometry = self.geometry(tile)
        for pair in self.pairs:
            if pair.owners and pair.geometry == geometry and all(
                    o.end < at and o.body is tile.body for o in pair.owners):
                pair.owners = []
                return pair
        return self.fresh(tile)

    def place(self, body: _Body) -> None:
        for at, step in enumerate(body.steps):
            tile = step.result
            if step.kind == "loop" and step.init is not None:  # a K loop: its init's slots
                assert tile is not None and step.init.pair is not None
                tile.pair = step.init.pair
                tile.pair.owners.append(tile)
            if step.nested is not None:
                self.place(step.nested)
            if step.kind in ("loop", "use"):
                continue
            assert tile is not None
            if step.kind == "load":
                if step.copies:
                    tile.pair = self.fresh(tile, step.copies)
                continue
            src = step.operands[0] if step.operands else None
            if step.init is not None:  # accumulates in place
                pair = step.init.pair
            elif src is not None and src.type == tile.type and src.uses == 1 \
                    and src.pair is not None and src.body is tile.body:
                pair = src.pair  # elementwise, same type, no other use: in place
            else:
                pair = self.reuse(tile, at)
            assert pair is not None
            tile.pair = pair
            pair.owners.append(tile)


def _liveness(body: _Body) -> list[_Tile]:
    """Count each tile's uses and set each tile's last use in its own body (a use in a
    nested body counts at the step that holds it; a carried tile lives for good). Returns
    the tiles `body` and its nested bodies use."""
    used: list[_Tile] = []
    for at, step in enumerate(body.steps):
        if step.result is not None:
            step.result.end = FOREVER if step.result.carried else at
        for tile in step.operands:
            tile.uses += 1
        inner = _liveness(step.nested) if step.nested is not None else []
        for tile in [*step.operands, *step.alive, *inner]:
            if tile.body is body and not tile.carried:
                tile.end = max(tile.end, at)
        used += [*step.operands, *step.alive, *inner]
    return used


@dataclass
class _Lowering:
    """The loop nest convert-spyre-to-ktir builds for a tile-graph kernel
    (`_KernelBuilder.build`), as tile steps."""

    info: KernelInfo
    tiling: Tiling
    split: Split
    buffers: int

    def __post_init__(self) -> None:
        info, kernel = self.info, self.info.kernel
        inner = [*kernel.body.block.args, *info.outputs]
        outer = [*kernel.inputs, *kernel.results]
        self.cols: dict[SSAValue, int] = {}
        self.kept: dict[SSAValue, bool] = {}
        self.reserved = 0
        for value, outer_value in zip(inner, outer):
            if not value.uses and value not in info.outputs:
                continue
            rows, cols = padded_rows_cols(layout_of(outer_value).padded_shape)
            self.cols[value] = cols
            self.kept[value] = kept_in_lx(outer_value)
            if self.kept[value]:  # the largest slice sits lowest, the tiles below it
                row = round_up(cols // self.split.gn * itemsize(outer_value), STICK_BYTES)
                self.reserved = max(self.reserved, rows // self.split.gm * row)
        widths = [cols for value, cols in self.cols.items()
                  if info.kinds.get(value) is not Kind.COL and not self._matmul_only(value)]
        if info.matmul is not None:
            widths.append(self.cols[info.matmul.rhs])
        self.mc = info.full[0] // self.split.gm
        self.nc = max(widths) // self.split.gn

    def _matmul_only(self, value: SSAValue) -> bool:
        mm = self.info.matmul
        return mm is not None and all(u.operation is mm and u.index < 2 for u in value.uses)

    def _load(self, body: _Body, value: SSAValue, rows: int, cols: int, runs: int) -> _Tile:
        tile = _Tile(str(value.type.element_type), rows, cols, body)  # type: ignore[attr-defined]
        copies = 0 if self.kept[value] else (1 if runs == 1 else self.buffers)
        body.add(_Step("load", tile, copies=copies))
        return tile

    def _extents(self, kind: Kind, tm: int) -> tuple[int, int]:
        return {Kind.FULL: (tm, self.tiling.tn), Kind.ROW: (1, self.tiling.tn),
                Kind.COL: (tm, 1)}[kind]

    def _resident(self) -> str:
        mm = self.info.matmul
        if mm is None:
            return ""
        if self.tiling.resident:
            return self.tiling.resident
        return "a" if self.cols[mm.lhs] == self.tiling.tk else "acc"

    def function(self) -> _Body:
        """The function's block, its loops nested in it."""
        info, t = self.info, self.tiling
        top = _Body()
        hoisted: dict[SSAValue, _Tile] = {}
        if self.nc == t.tn and (self.mc > t.tm or t.tail > 1):
            for value in self.cols:
                if info.kinds.get(value) is Kind.ROW and not self._matmul_only(value) \
                        and value in info.kernel.body.block.args:
                    hoisted[value] = self._load(top, value, 1, t.tn, 1)
        trips_m, trips_n = _trips(self.mc, t.tm), _trips(self.nc, t.tn)
        mm = info.matmul
        if self._resident() == "b":
            assert mm is not None
            n_body = _Body()
            b_tile = self._load(n_body, mm.rhs, t.tk, t.tn, trips_n)
            m_body = self._out_tile(hoisted, t.tm, trips_m * trips_n, None, b_tile)
            n_body.add(_Step("loop", nested=m_body))
            top.add(_Step("loop", nested=n_body))
            return top
        m_body = _Body()
        top.add(_Step("loop", nested=m_body))
        a_tile = None
        if self._resident() == "a":
            assert mm is not None
            a_tile = self._load(m_body, mm.lhs, t.tm, self.cols[mm.lhs], trips_m)
        if a_tile is None or t.tail <= 1:
            n_body = self._out_tile(hoisted, t.tm, trips_m * trips_n, a_tile, None)
            m_body.add(_Step("loop", nested=n_body))
            return top
        assert mm is not None
        if self.nc > t.tn:
            runs = trips_m * _trips(self.nc - t.tn, t.tn)
            m_body.add(_Step("loop", nested=self._out_tile(hoisted, t.tm, runs, a_tile, None)))
        b_block = self._load(m_body, mm.rhs, self.cols[mm.lhs], t.tn, trips_m)
        rows, last = tail_rows(t.tm, t.tail)
        pieces = self._out_tile(hoisted, rows, trips_m * (t.tail - 1), a_tile, b_block)
        m_body.add(_Step("loop", nested=pieces))
        self._out_tile(hoisted, last, trips_m, a_tile, b_block, m_body)
        return top

    def _out_tile(self, hoisted: dict[SSAValue, _Tile], tm: int, runs: int,
                  a_tile: _Tile | None, b_tile: _Tile | None,
                  body: _Body | None = None) -> _Body:
        """One out tile's steps (the builder's `out_tile`), in `body` or a new one."""
        info = self.info
        body = body if body is not None else _Body()
        env = dict(hoisted)

        def value(v: SSAValue) -> _Tile:
            """A kernel value's tile; a kernel input is loaded on first use."""
            if v not in env:
                env[v] = self._load(body, v, *self._extents(info.kind(v), tm), runs)
            return env[v]

        def generic(kind: Kind, operands: list[_Tile], element: str = F32,
                    into: _Body | None = None) -> _Tile:
            where = into or body
            out = where.add(_Step("generic", _Tile(element, *self._extents(kind, tm), where),
                                  operands))
            assert out is not None
            return out

        if info.matmul is not None:
            env[info.matmul.result] = self._matmul(body, info.matmul, tm, runs, a_tile, b_tile)
            if info.matmul.bias is not None:
                operands = [env[info.matmul.result], value(info.matmul.bias)]
                env[info.matmul.result] = generic(Kind.FULL, operands)
        for op in info.ops:
            category = op_kind(op)[0]
            result = op.results[0]
            if category in ("cast", "view"):  # the operand's tile, converted at its use
                env[result] = value(op.operands[0])
                continue
            ins = [value(v) for v in op.operands]
            env[result] = (self._reduce(body, ins[0], tm) if category == "reduce"
                           else generic(info.kind(result), ins))
        for v in info.outputs:
            kind, element = info.kind(v), str(v.type.element_type)  # type: ignore[attr-defined]
            # a split row's column is stored by the row's first core, in an scf.if body
            first = kind is Kind.COL and self.split.gn > 1
            into = _Body() if first else body
            into.add(_Step("use", operands=[generic(kind, [env[v]], element, into=into)]))
            if first:
                body.add(_Step("loop", nested=into))
        return body

    def _matmul(self, body: _Body, mm: MatmulOp, tm: int, runs: int, a_tile: _Tile | None,
                b_tile: _Tile | None) -> _Tile:
        """The accumulator's fill (carried by the K loop), the K loop's own loads, and the
        loop's result in the fill's slots."""
        t = self.tiling
        acc = body.add(_Step("fill", _Tile(F32, tm, t.tn, body, carried=True)))
        k_body = _Body()
        k_runs = runs * _trips(self.cols[mm.lhs], t.tk)
        if a_tile is None:
            self._load(k_body, mm.lhs, tm, t.tk, k_runs)
        if b_tile is None:
            self._load(k_body, mm.rhs, t.tk, t.tn, k_runs)
        assert acc is not None
        result = body.add(_Step("loop", _Tile(F32, tm, t.tn, body), [acc], init=acc,
                                nested=k_body))
        assert result is not None
        return result

    def _reduce(self, body: _Body, src: _Tile, tm: int) -> _Tile:
        """A row reduction into its fill; with the reduced dim split over a grid row, the
        partial's all-reduce over the ring (summed in the partial's slots)."""
        fill = body.add(_Step("fill", _Tile(F32, tm, 1, body)))
        partial = body.add(_Step("generic", _Tile(F32, tm, 1, body), [src], init=fill))
        assert partial is not None
        if self.split.gn == 1:
            return partial
        identity = body.add(_Step("fill", _Tile(F32, tm, 1, body)))
        assert identity is not None
        # the produce's yield and the reduce hold the partial, the reduce reads the identity
        total = body.add(_Step("generic", _Tile(F32, tm, 1, body), [identity], init=partial,
                               alive=[partial]))
        assert total is not None
        return total


def _trips(upper: int, step: int) -> int:
    return max(0, -(-upper // step))


def tile_graph_lx(info: KernelInfo, tiling: Tiling, buffers: int, target: SpyreTarget,
                  split: Split | None = None) -> int:
    """The LX bytes spyre-place-memory will give `info`'s kernel lowered with `tiling`,
    including the core's slice of a tensor kept in LX (note 61)."""
    lowering = _Lowering(info, tiling, split or read_split(info.kernel), buffers)
    top = lowering.function()
    _liveness(top)
    alloc = _Allocator(target, buffers)
    alloc.place(top)
    return alloc.used + lowering.reserved
