"""The compiler's cost model: predicted cycles of a kernel for a core split and a tiling.

`spyre-partition-cores` and `spyre-tile` decide by it, and it reads every number from the
`SpyreTarget`, the same description the emulator times instructions with. The model mirrors
the schedule `spyre-schedule-dataflow` produces: per output tile, a K loop of A/B tile loads
and PT matmuls, then an epilogue on the SFU and a store; loads of the next tile overlap the
compute of the current one (ping-pong buffers), so a core's time is the slowest engine plus
the pipeline fill and drain. LPDDR bandwidth is shared by all active cores.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from spyrec.target import SpyreTarget, round_up


@dataclass(frozen=True)
class KernelShape:
    """What the cost model needs to know about a kernel (matmul + epilogue, or elementwise)."""

    rows: int  # M: output rows (all leading dims flattened)
    cols: int  # N: output columns (the stick dim)
    k: int  # contraction depth; 0 for a kernel without matmul
    in_itemsize: int  # device bytes per element of the matmul operands / elementwise inputs
    out_itemsize: int  # device bytes per element of the output
    row_operands: int = 0  # extra inputs broadcast over rows (bias-like, 1 x N)
    full_operands: int = 0  # extra inputs of the output's shape (M x N), e.g. a residual
    sfu_passes: int = 0  # elementwise work in units of one SFU pass over the tile
    reduce: bool = False  # a reduction over the stick dim: each tile must hold whole rows
    full_temps: int = 1  # f32 full tiles the tile graph may keep live (upper bound)
    col_temps: int = 0  # one-column values (row reductions), a stick per row each
    outputs: int = 1  # results stored per tile

    def sticks(self, itemsize: int, elems: int) -> int:
        return -(-elems * itemsize // 128)

    @property
    def stick_elems(self) -> int:
        """Elements per stick of the narrowest element type: the column granularity."""
        return 128 // min(self.in_itemsize, self.out_itemsize)

    @property
    def col_sticks(self) -> int:
        return -(-self.cols // self.stick_elems)

    @property
    def flops(self) -> int:
        return 2 * self.rows * self.k * self.cols + self.sfu_passes * self.rows * self.cols

    @property
    def min_offchip_bytes(self) -> int:
        """Every input read once and the output written once, unpadded."""
        a = self.rows * self.k * self.in_itemsize
        b = self.k * self.cols * self.in_itemsize
        extra = (self.row_operands * self.cols + self.full_operands * self.rows * self.cols)
        out = self.outputs * self.rows * self.cols * self.out_itemsize
        return a + b + extra * self.in_itemsize + out


@dataclass(frozen=True)
class Split:
    """Cores along the output rows (gm) and output column sticks (gn)."""

    gm: int
    gn: int

    @property
    def cores(self) -> int:
        return self.gm * self.gn


@dataclass(frozen=True)
class Tiling:
    """Per-core tile extents in elements: rows, output columns, contraction."""

    tm: int
    tn: int
    tk: int


@dataclass(frozen=True)
class Prediction:
    cycles: float
    dma_cycles: float
    pt_cycles: float
    sfu_cycles: float
    offchip_bytes: int
    lx_bytes: int

    @property
    def bound(self) -> str:
        parts = {"dma": self.dma_cycles, "pt": self.pt_cycles, "sfu": self.sfu_cycles}
        return max(parts, key=parts.__getitem__)


def padded_cols(elems: int, itemsize: int, target: SpyreTarget) -> int:
    return round_up(elems, target.elems_per_stick(itemsize))


def pt_cycles(m: int, k: int, n: int, target: SpyreTarget) -> int:
    """Cycles of one PT matmul on one corelet: the 8x8 array works on 8-aligned blocks."""
    flops = 2 * round_up(m, 8) * round_up(k, 8) * round_up(n, 8)
    return math.ceil(flops / target.pt_flops_per_cycle_per_corelet)


def sfu_cycles(rows: int, row_bytes: int, passes: int, target: SpyreTarget) -> int:
    """Cycles of `passes` SFU passes over a rows x row_bytes tile on one corelet."""
    return passes * math.ceil(rows * row_bytes / target.sfu_bytes_per_cycle_per_corelet)


def dma_cycles_alone(nbytes: int, target: SpyreTarget, sharers: int = 1) -> float:
    return target.dma_setup_cycles + nbytes * sharers / target.lpddr_bytes_per_cycle


def lx_footprint(shape: KernelShape, tiling: Tiling) -> int:
    """LX bytes a core needs for `tiling`, with every streamed buffer doubled (ping-pong)."""
    tm, tn, tk = tiling.tm, tiling.tn, tiling.tk
    total = 0
    if shape.k:
        total += 2 * tm * tk * shape.in_itemsize  # A tiles
        total += 2 * tk * tn * shape.in_itemsize  # B tiles
    total += 2 * shape.full_temps * tm * tn * 4  # fp32 accumulator and tile-graph values
    total += 2 * shape.col_temps * tm * 128  # row reductions: one stick per row
    total += 2 * shape.outputs * tm * tn * shape.out_itemsize  # output tiles
    total += 2 * shape.row_operands * max(tn * shape.in_itemsize, 128)
    total += 2 * shape.full_operands * tm * tn * shape.in_itemsize
    return total


def predict(shape: KernelShape, split: Split, tiling: Tiling, target: SpyreTarget) -> Prediction:
    """Predicted cycles of the kernel with this split and tiling."""
    out_cols = shape.col_sticks * shape.stick_elems
    kp = padded_cols(shape.k, shape.in_itemsize, target) if shape.k else 0
    mc, nc = shape.rows // split.gm, out_cols // split.gn
    nm, nn = mc // tiling.tm, nc // tiling.tn
    nk = kp // tiling.tk if shape.k else 0
    tm, tn, tk = tiling.tm, tiling.tn, tiling.tk
    isz, osz = shape.in_itemsize, shape.out_itemsize
    tiles = nm * nn
    a_tile, b_tile = tm * tk * isz, tk * tn * isz
    # the A row block stays resident across the n loop when K fits one tile
    a_loads = nm if nk == 1 else tiles * nk
    per_tile_in = shape.row_operands * tn * isz + shape.full_operands * tm * tn * isz
    bytes_core = (a_loads * a_tile + tiles * nk * b_tile + tiles * per_tile_in
                  + tiles * shape.outputs * tm * tn * osz)
    dmas_core = (a_loads + tiles * nk * (1 if shape.k else 0)
                 + tiles * (shape.outputs + shape.row_operands + shape.full_operands))
    cores = split.cores
    dma = dmas_core * target.dma_setup_cycles + bytes_core * cores / target.lpddr_bytes_per_cycle
    # tile ops of >= 16 rows are split by rows over the corelets (one instruction each)
    rows = tm // target.corelets_per_core if tm >= 16 and tm % 2 == 0 else tm
    pt = tiles * nk * pt_cycles(rows, tk, tn, target) if shape.k else 0.0
    passes = max(1, shape.sfu_passes)
    sfu = tiles * sfu_cycles(rows, tn * 4, passes, target)
    # pipeline fill (first loads) and drain (last epilogue and store)
    first_in = (a_tile + b_tile) if shape.k else tm * tn * isz * max(1, shape.full_operands)
    fill = dma_cycles_alone(first_in, target, cores)
    drain = sfu_cycles(rows, tn * 4, passes, target) + dma_cycles_alone(tm * tn * osz, target, cores)
    cycles = max(dma, pt, sfu) + fill + drain
    return Prediction(cycles, dma, pt, sfu, bytes_core * cores, lx_footprint(shape, tiling))


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def candidate_splits(shape: KernelShape, target: SpyreTarget) -> list[Split]:
    """Even splits of rows and output column sticks over at most `num_cores` cores."""
    col_splits = [1] if shape.reduce else _divisors(shape.col_sticks)
    return [Split(gm, gn) for gm in _divisors(shape.rows) for gn in col_splits
            if gm * gn <= target.num_cores]


def candidate_tilings(shape: KernelShape, split: Split, target: SpyreTarget) -> list[Tiling]:
    """Tilings of one core's share that fit LX: tm | rows share, sticks of tn | cols share."""
    out_eps = shape.stick_elems
    in_eps = target.elems_per_stick(shape.in_itemsize)
    mc = shape.rows // split.gm
    nc_sticks = shape.col_sticks // split.gn
    k_sticks = shape.sticks(shape.in_itemsize, shape.k) if shape.k else 0
    tms = _divisors(mc)
    tns = [nc_sticks * out_eps] if shape.reduce else [d * out_eps for d in _divisors(nc_sticks)]
    tks = [d * in_eps for d in _divisors(k_sticks)] if shape.k else [0]
    budget = target.lx_usable_bytes
    return [Tiling(tm, tn, tk) for tm, tn, tk in itertools.product(tms, tns, tks)
            if lx_footprint(shape, Tiling(tm, tn, tk)) <= budget]


def best_tiling(shape: KernelShape, split: Split,
                target: SpyreTarget) -> tuple[Tiling, Prediction] | None:
    """The tiling with the fewest predicted cycles (larger tiles break ties)."""
    best: tuple[Tiling, Prediction] | None = None
    for tiling in candidate_tilings(shape, split, target):
        pred = predict(shape, split, tiling, target)
        key = (pred.cycles, -(tiling.tm * tiling.tn * max(tiling.tk, 1)))
        if best is None or key < (best[1].cycles, -(best[0].tm * best[0].tn * max(best[0].tk, 1))):
            best = (tiling, pred)
    return best
