"""KTIR builders of the gather and scatter kernels (`spyre.gather`, `spyre.scatter`; used by
convert-spyre-to-ktir).

The indices are stored as rows of int32 (`runs` of `run` indices, the innermost dim of the
index tensor); output row `run * R + i` is table row `indices[run, i]`. Per core (x, y):
runs [x * Oc, (x + 1) * Oc) and indices [y * Rc, (y + 1) * Rc) of each run; per tile of tm
indices, one KTIR indirect access tile whose row subscript reads the index view and whose
column subscript is direct:

    %t = ktdp.construct_indirect_access_tile intermediate_variables(%r, %c)
           %table[ind(%ids[%run, %row + %r]), (%c)] {variables_space_set = <tm x D box>, ...}
           : memref<VxDxf16>, memref<BxSxi32> -> !ktdp.access_tile<tmxDxindex>
    %rows = ktdp.load %t : ... -> tensor<tmxDxf16>
    ktdp.store %rows, <out tile at [%run * R + %row, 0]>

spyre-schedule-dataflow maps that load to a `dma.load` of the index sticks and a
`dma.gather` (which checks every index against [0, V) when it runs).

The scatter kernel is the reverse, in place: a run is one [P, D] block of values (one batch
and head of a KV cache) and its rows go to the run's [L, D] block of the table, which is
viewed 3-D [runs, L, D] so the indirect subscript stands alone (the RFC's rule):

    %t = ktdp.construct_indirect_access_tile intermediate_variables(%r, %c)
           %cache[(%run), ind(%pos[0, %row + %r]), (%c)] ...
    ktdp.store %rows, %t

The kernel's output argument is the table's own storage (spyre-place-memory aliases them),
so only the new rows move.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, MemRefType, TensorType
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from spyrec.dialects.ktdp import (
    AccessTileType,
    ConstructMemoryViewOp,
    GetComputeTileIdOp,
    LoadOp,
    MemorySpaceAttr,
    StoreOp,
)
from spyrec.dialects.ktdp_indirect import ConstructIndirectAccessTileOp
from spyrec.passes.graph.row_maps import const, mul
from spyrec.passes.ktir.ktir_attention import _StoredBuilder
from spyrec.passes.ktir.ktir_builder import box_set
from spyrec.passes.planning.kernel_analysis import GatherInfo, ScatterInfo

INDEX_ELEMENT = IntegerType(32)  # indices live on the device as int32


def _each_tile(builder: _StoredBuilder, x: SSAValue, y: SSAValue, runs: int, run_rows: int,
               tile: Callable[[SSAValue, SSAValue], None]) -> None:
    """Call `tile(run, row)` for each tm-row tile of core (x, y)'s block: runs / gm runs
    and run_rows / gn rows of each (the split of gathers and scatters alike)."""
    runs_core, rows_core = runs // builder.split.gm, run_rows // builder.split.gn
    run0 = builder.mul(x, builder.const(runs_core))
    row0 = builder.mul(y, builder.const(rows_core))

    def run_body(i: SSAValue) -> None:
        run = builder.add(run0, i)
        builder.loop(rows_core, builder.tiling.tm, lambda j: tile(run, builder.add(row0, j)))

    builder.loop(runs_core, 1, run_body)


class GatherBuilder(_StoredBuilder):
    """Builds the KTIR function of one gather kernel: indirect loads, contiguous stores."""

    def __init__(self, info: GatherInfo, name: str):
        super().__init__(info.kernel, info.outputs, name)
        self.info = info

    def build(self) -> func.FuncOp:
        info = self.info
        shape = info.shape()
        x, y = self.b.insert(GetComputeTileIdOp(2)).results
        element = info.out.type.element_type  # type: ignore[attr-defined]
        cols = self.cols(info.out)
        vocab = info.table.type.get_shape()[0]  # type: ignore[attr-defined]
        table = self.view(self._pointer(info.table), (vocab, self.cols(info.table)), element)
        ids = self.view(self._pointer(info.indices), (shape.outer, self.cols(info.indices)),
                        INDEX_ELEMENT)
        out = self.view(self._pointer(info.out), (shape.rows, cols), element)
        tm = self.tiling.tm
        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)

        def tile(run: SSAValue, row: SSAValue) -> None:
            rows = self._gather(table, ids, run, row, (tm, cols), element)
            self.b.insert(StoreOp(rows, self.tile_at(
                out, [run, row], (mul(d0, shape.run) + d1, const(0)), (tm, cols))))

        _each_tile(self, x, y, shape.outer, shape.run, tile)
        return self.finish(shape.flops, shape.min_offchip_bytes)

    def _pointer(self, value: SSAValue) -> SSAValue:
        return self.block.args[self.inner.index(value)]

    def _gather(self, table: SSAValue, ids: SSAValue, run: SSAValue, row: SSAValue,
                extents: tuple[int, int], element: object) -> SSAValue:
        """`table[ids[run, row + r], c]` for r < tm, c < D: an indirect tile and its load.
        Subscript maps are over (run, row, r, c): captured values first, then the tile's
        intermediate variables."""
        run_d, row_d, r, c = (AffineExpr.dimension(i) for i in range(4))
        tile = self.b.insert(ConstructIndirectAccessTileOp(
            table, [ids], [run, row], [True, False],
            [AffineMap(4, 0, (run_d, row_d + r)), AffineMap(4, 0, (c,))],
            box_set(extents).data, AffineMap.identity(2), AccessTileType(list(extents)),
            variable_names=["r", "c"]))
        return self.b.insert(LoadOp(tile.result, TensorType(element, list(extents)))).results[0]  # type: ignore[arg-type]


class ScatterBuilder(_StoredBuilder):
    """Builds the KTIR function of one in-place scatter kernel: contiguous loads of the new
    rows, stores through indirect tiles into the table."""

    def __init__(self, info: ScatterInfo, name: str):
        super().__init__(info.kernel, info.outputs, name)
        self.info = info

    def build(self) -> func.FuncOp:
        info = self.info
        shape = info.shape()
        x, y = self.b.insert(GetComputeTileIdOp(2)).results
        element = info.values.type.element_type  # type: ignore[attr-defined]
        cols = self.cols(info.values)
        pointer = self.block.args[self.inner.index(info.out)]
        length = info.table_rows
        table = self.b.insert(ConstructMemoryViewOp(
            pointer, [shape.outer, length, cols], [length * cols, cols, 1],
            MemRefType(element, [shape.outer, length, cols]),
            box_set([shape.outer, length, cols]), MemorySpaceAttr.global_())).result
        ids = self.view(self.block.args[self.inner.index(info.indices)],
                        (1, self.cols(info.indices)), INDEX_ELEMENT)
        values = self.view(self.block.args[self.inner.index(info.values)],
                           (shape.rows, cols), element)
        tm = self.tiling.tm
        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)

        def tile(run: SSAValue, row: SSAValue) -> None:
            rows = self.load_at(values, [run, row], (mul(d0, shape.run) + d1, const(0)),
                                (tm, cols), element)
            run_d, row_d, r, c = (AffineExpr.dimension(k) for k in range(4))
            slots = self.b.insert(ConstructIndirectAccessTileOp(
                table, [ids], [run, row], [False, True, False],
                [AffineMap(4, 0, (run_d,)), AffineMap(4, 0, (const(0), row_d + r)),
                 AffineMap(4, 0, (c,))],
                box_set((tm, cols)).data, AffineMap.identity(2),
                AccessTileType([tm, cols]), variable_names=["r", "c"]))
            self.b.insert(StoreOp(rows, slots.result))

        _each_tile(self, x, y, shape.outer, shape.run, tile)
        return self.finish(shape.flops, shape.min_offchip_bytes)
