"""The compiler's cost model: predicted cycles of a kernel for a core split and a tiling.

`spyre-partition-cores` and `spyre-tile` decide by it, and it reads every number from the
`SpyreTarget`, the same description the emulator times instructions with. The model mirrors
the schedule `spyre-schedule-dataflow` produces: per output tile, a K loop of A/B tile loads
and PT matmuls, then an epilogue on the SFU and a store; loads of the next tile overlap the
compute of the current one (ping-pong buffers), so a core's time is the slowest engine plus
the pipeline fill and drain. LPDDR bandwidth is shared by all active cores.

Three kinds of kernel have a shape here: `KernelShape` (a matmul and/or a tile graph),
`AttentionShape` (per head and query tile: Q K^T, softmax, P V) and `MoveShape` (rows
gathered by DMA). `candidate_splits`, `candidate_tilings`, `lx_footprint` and `predict`
accept any of them.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

from spyrec.target import SpyreTarget, round_up
from spyrec.target.layout import STICK_BYTES, stick_padded


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
    col_passes: int = 0  # SFU passes over one-column values (a stick per row each)
    # of the sfu_passes, those that read 2-byte elements alone (a row reduction of an fp16
    # input as loaded): half a pass's bytes
    narrow_passes: int = 0
    reduce: bool = False  # a reduction over the stick dim: each tile must hold whole rows
    full_temps: int = 1  # f32 full tiles the tile graph may keep live (upper bound)
    col_temps: int = 0  # one-column values (row reductions), a stick per row each
    outputs: int = 1  # results stored per tile
    col_operands: int = 0  # extra inputs of one column (M x 1, a row reduction's result)
    col_outputs: int = 0  # of the `outputs`, those of one column (a row reduction's result)
    # the narrowest element of any input or full output (an f16 input of an f32 kernel: a
    # promoting add; an f16 result beside an f32 one); 0 when unknown
    narrow_itemsize: int = 0
    # row reductions a split of the reduced (stick) dim combines over the ring, one
    # ring.reduce each per tile (note 59): every reduction of a kernel without matmul, when
    # all are sums; 0 when the reduced dim must stay whole on one core
    ring_reduces: int = 0
    # a result kept in LX for the next kernel, which reads it from there (note 61): of the
    # full outputs, those rounded straight into the core's slice instead of stored; of the
    # full operands, those read in place in the core's slice instead of loaded
    lx_outputs: int = 0
    lx_operands: int = 0
    # the matmul's A operand read from the core's LX slice (its whole rows, gn = 1): no loads
    lx_lhs: bool = False

    def sticks(self, itemsize: int, elems: int) -> int:
        return -(-elems * itemsize // 128)

    @property
    def stick_elems(self) -> int:
        """Elements per stick of the narrowest element type: the column granularity."""
        return STICK_BYTES // min(self.in_itemsize, self.out_itemsize, self.narrow_itemsize or 8)

    @property
    def col_sticks(self) -> int:
        return -(-self.cols // self.stick_elems)

    @property
    def flops(self) -> int:
        return (2 * self.rows * self.k * self.cols + self.sfu_passes * self.rows * self.cols
                + self.col_passes * self.rows)

    @property
    def min_offchip_bytes(self) -> int:
        """Every input read once and the output written once, unpadded (but for a tensor
        kept in LX, which never crosses the channel)."""
        a = 0 if self.lx_lhs else self.rows * self.k * self.in_itemsize
        b = self.k * self.cols * self.in_itemsize
        extra = (self.row_operands * self.cols
                 + (self.full_operands - self.lx_operands) * self.rows * self.cols
                 + self.col_operands * self.rows)
        out = ((self.full_outputs - self.lx_outputs) * self.cols + self.col_outputs) \
            * self.rows * self.out_itemsize
        return a + b + extra * self.in_itemsize + out

    @property
    def full_outputs(self) -> int:
        return self.outputs - self.col_outputs

    def out_tile_bytes(self, tm: int, tn: int) -> int:
        """LX bytes of one tile's results: a full tile per full output, a stick per row per
        one-column output."""
        return self.full_outputs * tm * tn * self.out_itemsize + self.col_outputs * tm * STICK_BYTES

    def stored_tile_bytes(self, tm: int, tn: int) -> int:
        """Bytes one tile stores to LPDDR: its results but those kept in LX (note 61)."""
        return self.out_tile_bytes(tm, tn) - self.lx_outputs * tm * tn * self.out_itemsize

    def lx_slice_bytes(self, split: Split) -> int:
        """LX bytes a core reserves for the tensors it keeps in LX or reads from there
        (note 61): its rows x its column sticks of each, rows a whole number of sticks."""
        kept = self.lx_outputs * self.out_itemsize + self.lx_operands * self.in_itemsize
        cols = self.col_sticks // split.gn * self.stick_elems
        rows = self.rows // split.gm
        lhs = rows * round_up(self.k * self.in_itemsize, 128) if self.lx_lhs else 0
        return rows * round_up(cols * kept, 128) + lhs

    @property
    def splits_reduced_dim(self) -> bool:
        """Whether the split may divide the reduced stick dim (note 59): its reductions are
        sums the ring combines, and no column is stick padding, so every core's share of a
        row is all valid columns."""
        return self.reduce and self.ring_reduces > 0 and self.cols % self.stick_elems == 0

    def work(self) -> str:
        """What the split divides, for messages: rows x output sticks."""
        return f"{self.rows} rows x {self.col_sticks} output sticks"

    @property
    def split_rule(self) -> str:
        if self.reduce and not self.splits_reduced_dim:
            why = ("its reductions are not all sums, and ring.reduce only adds"
                   if not self.ring_reduces else "its rows end in stick padding")
            return f"divide its {self.rows} rows evenly with each row on one core ({why})"
        return f"divide its {self.rows} rows and {self.col_sticks} output sticks evenly"

    @property
    def tile_rule(self) -> str:
        return "divide the core's rows, columns (whole sticks) and K (whole sticks)"


@dataclass(frozen=True)
class AttentionShape:
    """An attention kernel: per (batch, head) softmax(Q K^T * scale (+ mask)) V.

    Split: gm cores over the heads (batch x query heads), gn over query rows. Tiling:
    tm = query rows per tile (tq), tn = padded value width, tk = key rows (the whole of K and V
    of a head stays in LX while the core walks its query tiles).
    """

    heads: int  # batch x query heads
    q_rows: int  # L
    kv_rows: int  # S
    head_dim: int  # E: the contraction of Q K^T
    value_dim: int  # Ev: columns of V and of the output
    in_itemsize: int
    out_itemsize: int
    group: int = 1  # query heads per key/value head
    causal: bool = False
    mask: bool = False
    mask_rows: int = 0
    """Stored rows of an additive mask broadcast to the scores (all dims but the last: L
    for an [L, S] mask, B * H * L for a [B, H, L, S] one); 0 means L."""
    mask_row_broadcast: bool = False
    """The mask has one row per (batch, head), broadcast over the query rows ([B, 1, 1, S],
    a padding mask): a tile reads one mask row."""
    zero_unseen: bool = False
    """A query whose scores are all -inf gets zeros (SDPA's rule), not softmax's NaN."""
    form: str = "attention"
    """"attention", or one matmul per head of a `spyre.batch_matmul`: "nt" (Q K^T, the output
    is [L, S]: value_dim = kv_rows) or "nn" (A V with A as Q: head_dim = kv_rows = K)."""

    def row_bytes(self, elems: int, itemsize: int) -> int:
        return stick_padded(elems * itemsize)

    def mask_tile_rows(self, tq: int) -> int:
        """Mask rows a query tile of `tq` rows loads (0 without a mask)."""
        if not self.mask:
            return 0
        return 1 if self.mask_row_broadcast else tq

    @property
    def value_cols(self) -> int:
        """The value width padded to whole sticks of the input type."""
        return self.row_bytes(self.value_dim, self.in_itemsize) // self.in_itemsize

    @property
    def score_passes(self) -> int:
        """SFU passes over a tile of scores: scale, mask, add, max, subtract, exp, sum, divide."""
        return 6 + int(self.causal) + int(self.mask)

    @property
    def flops(self) -> int:
        pairs = self.heads * self.q_rows * self.kv_rows
        if self.form == "nt":
            return 2 * pairs * self.head_dim
        if self.form == "nn":
            return 2 * pairs * self.value_dim
        return 2 * pairs * (self.head_dim + self.value_dim) + self.score_passes * pairs

    @property
    def single(self) -> bool:
        """One matmul per head (a batch matmul), no softmax."""
        return self.form != "attention"

    @property
    def rhs_dim(self) -> int:
        """Columns of the one rhs a batch matmul holds per head (K^T's E or V's N)."""
        return self.head_dim if self.form == "nt" else self.value_dim

    @property
    def min_offchip_bytes(self) -> int:
        """Q, K, V and the mask read once, the output written once, unpadded."""
        q = self.heads * self.q_rows * self.head_dim * self.in_itemsize
        if self.single:
            rhs = self.heads * self.kv_rows * self.rhs_dim * self.in_itemsize
            return q + rhs + self.heads * self.q_rows * self.value_dim * self.out_itemsize
        kv = (self.heads // self.group) * self.kv_rows * (self.head_dim + self.value_dim)
        mask = (self.mask_rows or self.q_rows) * self.kv_rows if self.mask else 0
        out = self.heads * self.q_rows * self.value_dim * self.out_itemsize
        return q + (kv + mask) * self.in_itemsize + out

    def work(self) -> str:
        return f"{self.heads} heads x {self.q_rows} query rows"

    @property
    def split_rule(self) -> str:
        return f"divide its {self.heads} heads and {self.q_rows} query rows evenly"

    @property
    def tile_rule(self) -> str:
        return ("divide the core's query rows (with the padded value width and all key "
                "rows)")


@dataclass(frozen=True)
class MoveShape:
    """A data-movement kernel: rows gathered from a stored tensor in another order.

    The output's rows are `outer` runs of `run` rows; a run is read as one strided DMA
    (`broadcast`: every row of a run is the same stored row, so runs are read a row at a
    time). Split: gm cores over the runs, gn over rows of a run; tm rows per tile.
    """

    rows: int  # output rows
    run: int  # rows per run (the output's innermost leading dim)
    in_rows: int  # stored rows of the input
    cols: int  # logical columns
    itemsize: int
    broadcast: bool = False
    # every run reads the same stored rows (a broadcast over the outer leading dims, e.g. a
    # rotary table over heads): each core loads a tile once and stores it to each of its runs
    shared_runs: bool = False

    @property
    def row_bytes(self) -> int:
        return stick_padded(self.cols * self.itemsize)

    @property
    def outer(self) -> int:
        return self.rows // self.run

    @property
    def flops(self) -> int:
        return 0

    @property
    def min_offchip_bytes(self) -> int:
        return (self.in_rows + self.rows) * self.cols * self.itemsize

    def work(self) -> str:
        return f"{self.outer} runs x {self.run} rows"

    @property
    def split_rule(self) -> str:
        return f"divide its {self.outer} runs and the {self.run} rows of a run evenly"

    @property
    def tile_rule(self) -> str:
        return "divide the core's rows of a run (1 for a broadcast; with the padded width)"


Shape = KernelShape | AttentionShape | MoveShape


@dataclass(frozen=True)
class Split:
    """Cores along the output rows (gm) and output column sticks (gn)."""

    gm: int
    gn: int

    @property
    def cores(self) -> int:
        return self.gm * self.gn


RESIDENCIES = ("a", "b", "acc")
RESIDENCY_NAMES = {
    "a": "A row block resident over the column loop",
    "b": "B column block resident over the row loop",
    "acc": "output-stationary, K-blocked, accumulator resident",
}


@dataclass(frozen=True)
class Tiling:
    """Per-core tile extents in elements: rows, output columns, contraction; and, for a
    matmul, which operand stays in LX while the other streams (`resident`):

    - "a": loop rows outer, columns inner; the tm x K row block of A is loaded once per row
      tile and kept over the column loop. With tk = the whole padded K each tile is one
      matmul; with tk < K (note 54) the block is loaded in K slices of tk, the first column
      tile's K loop consuming each slice as it arrives and the later ones reading it from
      LX, while B streams in tk x tn tiles;
    - "b": loop columns outer, rows inner; the K x tn column block of B is loaded once per
      column tile and kept over the row loop (tk = the whole padded K);
    - "acc": rows, columns, then K innermost (tk < K); both operands stream and the f32
      accumulator is the resident tile.
    Kernels without a matmul have resident = "".

    `share`: the operand tiles several cores load (A along a grid row, B along a grid
    column) are read from LPDDR once and forwarded core to core over the ring (note 38).

    `tail` (resident "a" with tk < K only): the last column tile of each row block is
    computed in that many row pieces (`tail_rows`: whole PT blocks of 16 rows, the last
    piece the rest), its K x tn block of B kept in LX and loaded in K slices, so each
    piece is stored while the next one is computed and the drain after the last matmul is
    the last piece's store (note 57); 1: no tail.
    """

    tm: int
    tn: int
    tk: int
    resident: str = ""
    share: bool = False
    tail: int = 1


@dataclass(frozen=True)
class Prediction:
    cycles: float
    dma_cycles: float
    pt_cycles: float
    sfu_cycles: float
    offchip_bytes: int
    lx_bytes: int
    ring_cycles: float = 0.0

    @property
    def bound(self) -> str:
        parts = {"dma": self.dma_cycles, "pt": self.pt_cycles, "sfu": self.sfu_cycles,
                 "ring": self.ring_cycles}
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


def tile_sfu_cycles(shape: KernelShape, rows: int, tn: int, target: SpyreTarget) -> int:
    """SFU cycles of one corelet's rows of a tile: the full passes over f32 rows of tn
    (narrow ones over fp16 rows), and the passes over one-column values, a stick a row."""
    full = max(1, shape.sfu_passes) - shape.narrow_passes
    return (sfu_cycles(rows, tn * 4, full, target)
            + sfu_cycles(rows, tn * 2, shape.narrow_passes, target)
            + sfu_cycles(rows, target.stick_bytes, shape.col_passes, target))


def dma_cycles_alone(nbytes: int, target: SpyreTarget, sharers: int = 1) -> float:
    return target.dma_setup_cycles + nbytes * sharers / target.lpddr_bytes_per_cycle


@dataclass(frozen=True)
class MatmulLoads:
    """How often one core loads its A and B tiles under a tiling (and tiles per core)."""

    a: int
    b: int
    tiles: int
    k_steps: int


def matmul_loads(shape: KernelShape, split: Split, tiling: Tiling,
                 target: SpyreTarget) -> MatmulLoads:
    """Loads per core of A tiles (tm x tk) and B tiles (tk x tn) for the tiling's loop order."""
    out_cols = shape.col_sticks * shape.stick_elems
    kp = padded_cols(shape.k, shape.in_itemsize, target) if shape.k else 0
    nm = shape.rows // split.gm // tiling.tm
    nn = out_cols // split.gn // tiling.tn
    nk = kp // tiling.tk if shape.k and tiling.tk else 0
    tiles = nm * nn
    kept = 0 if shape.lx_lhs else 1  # A in the core's LX already (note 61): no loads
    if tiling.resident == "a":  # the row block once per row tile, in nk K slices
        return MatmulLoads(kept * nm * nk, tiles * nk, tiles, nk)
    if tiling.resident == "b":
        return MatmulLoads(kept * tiles, nn, tiles, nk)
    return MatmulLoads(kept * tiles * nk, tiles * nk, tiles, nk)


RING_CHUNK_LIMIT = 64 * 1024  # a shared tile up to this size moves in one transfer
# a larger one in pieces of about this size (passes/spyrecode/ring_sharing.py)
RING_CHUNK = 32 * 1024


def ring_pieces(nbytes: int) -> int:
    """Transfers (and, on the loading core, DMA descriptors) a shared tile moves in."""
    return 1 if nbytes <= RING_CHUNK_LIMIT else -(-nbytes // RING_CHUNK)


def ring_transfer_cycles(nbytes: int, hops: int, target: SpyreTarget) -> float:
    """A shared tile over one link of its chain: per ring.send / ring.recv pair hops *
    ring_hop_cycles + bytes / ring_bytes_per_cycle (the emulator's
    `spyrec.target.timing.rendezvous_cycles`), in `ring_pieces` pairs."""
    return (ring_pieces(nbytes) * hops * target.ring_hop_cycles
            + math.ceil(nbytes / target.ring_bytes_per_cycle))


def ring_chain_cycles(nbytes: int, hops: int, sharers: int, target: SpyreTarget) -> float:
    """Latency until the last of `sharers` cores holds a shared tile once the first has it:
    the tile's own transfer plus, per further link, the first piece's."""
    if sharers <= 1:
        return 0.0
    piece = min(nbytes, RING_CHUNK) if ring_pieces(nbytes) > 1 else nbytes
    return (ring_transfer_cycles(nbytes, hops, target)
            + (sharers - 2) * ring_transfer_cycles(piece, hops, target))


def grid_row_hop(split: Split, target: SpyreTarget) -> int:
    """Ring hops between neighbours of a grid row: core y * gm + x to (y + 1) * gm + x, gm
    core numbers apart, the shorter way round (`spyrec.target.timing.ring_hops`)."""
    n = target.num_cores
    return min(split.gm % n, n - split.gm % n)


def ring_reduce_cycles(rows: int, split: Split, target: SpyreTarget) -> float:
    """One all-reduce of a tile's row partials (rows x one f32 column, a stick a row) over a
    grid row's gn cores, gm core numbers apart (note 59): the emulator's
    `spyrec.target.timing.rendezvous_cycles` for a ring.reduce with root -1, the sums flowing down
    the group and back: 2 x (bytes / ring_bytes_per_cycle + chain hops x ring_hop_cycles)."""
    if split.gn <= 1:
        return 0.0
    hops = (split.gn - 1) * grid_row_hop(split, target)
    return 2 * (math.ceil(rows * target.stick_bytes / target.ring_bytes_per_cycle)
                + hops * target.ring_hop_cycles)


@dataclass(frozen=True)
class RingSharing:
    """The ring traffic of a shared matmul (note 38): cores sharing each A tile (a grid
    row's gn cores, chained gm core numbers apart) and each B tile (a grid column's gm
    cores, ring neighbours); per core the cycles its receive engine is busy, and the
    latency of the longest chain for one tile (the pipeline fill)."""

    a_sharers: int
    b_sharers: int
    rx_cycles: float
    chain_cycles: float


def ring_sharing(shape: KernelShape, split: Split, tiling: Tiling, loads: MatmulLoads,
                 target: SpyreTarget) -> RingSharing:
    a_tile = tiling.tm * tiling.tk * shape.in_itemsize
    b_tile = tiling.tk * tiling.tn * shape.in_itemsize
    a_hop = grid_row_hop(split, target)
    a_step = ring_transfer_cycles(a_tile, a_hop, target) if split.gn > 1 else 0.0
    b_step = ring_transfer_cycles(b_tile, 1, target) if split.gm > 1 else 0.0
    rx = loads.a * a_step + loads.b * b_step
    chain = max(ring_chain_cycles(a_tile, a_hop, split.gn, target),
                ring_chain_cycles(b_tile, 1, split.gm, target))
    return RingSharing(split.gn, split.gm, rx, chain)


def lx_footprint(shape: Shape, tiling: Tiling, split: Split | None, buffers: int,
                 target: SpyreTarget) -> int:
    """LX bytes a core needs for `tiling`: every streamed buffer `buffers` times (2 =
    ping-pong); a matmul operand the core loads only once (a resident block whose loop has
    one trip, known when `split` is given) needs one copy, as spyre-place-memory gives it.
    With `split` given it includes the core's slice of a tensor kept in LX (note 61)."""
    if isinstance(shape, AttentionShape):
        return _attention_lx(shape, tiling, split, buffers)
    if isinstance(shape, MoveShape):
        return buffers * tiling.tm * shape.row_bytes
    tm, tn, tk = tiling.tm, tiling.tn, tiling.tk
    total = 0
    if shape.k:
        a_copies = b_copies = buffers
        a_cols = tk
        if tiling.resident == "a":  # the whole row block, also when it comes in K slices
            a_cols = padded_cols(shape.k, shape.in_itemsize, target)
        if split is not None:
            loads = matmul_loads(shape, split, tiling, target)
            a_blocks = loads.a // max(1, loads.k_steps) if tiling.resident == "a" else loads.a
            a_copies = 1 if a_blocks == 1 else buffers
            b_copies = 1 if loads.b == 1 else buffers
        if not shape.lx_lhs:  # else A is read in place in the core's slice
            total += a_copies * tm * a_cols * shape.in_itemsize  # A tiles
        total += b_copies * tk * tn * shape.in_itemsize  # B tiles
        if tiling.tail > 1:  # a tail's K x tn block of B, once per row block
            kp = padded_cols(shape.k, shape.in_itemsize, target)
            total += (a_copies if split is not None else buffers) * kp * tn * shape.in_itemsize
    total += buffers * shape.full_temps * tm * tn * 4  # fp32 accumulator, tile-graph values
    total += buffers * shape.col_temps * tm * STICK_BYTES  # row reductions: one stick per row
    total += buffers * shape.out_tile_bytes(tm, tn)  # output tiles
    total += buffers * shape.row_operands * max(tn * shape.in_itemsize, 128)
    # an operand read from the core's LX slice takes no slot; the slice is reserved
    total += buffers * (shape.full_operands - shape.lx_operands) * tm * tn * shape.in_itemsize
    if split is not None:
        total += shape.lx_slice_bytes(split)
    return total


def _attention_lx(shape: AttentionShape, tiling: Tiling, split: Split | None = None,
                  buffers: int = 2) -> int:
    """`buffers` slots for every buffer spyre-place-memory gives an attention tile: Q, K, V,
    the mask tile, fp32 scores (scaled and masked in place), the row max, the shifted scores
    (exp in place), the row sum, P, the fp32 output accumulator and the converted output.
    A load that runs once per core takes one slot: K and V when the core has one head, Q
    and the mask when it also has one query tile (known when `split` is given)."""
    tq, s, isz = tiling.tm, shape.kv_rows, shape.in_itemsize
    row = shape.row_bytes
    kv_copies = q_copies = buffers
    if split is not None:
        heads = shape.heads // split.gm
        tiles = heads * (shape.q_rows // split.gn // tq)
        kv_copies = 1 if heads == 1 else buffers
        q_copies = 1 if tiles == 1 else buffers
    if shape.single:  # the rhs once, lhs tiles, the fp32 product and its conversion
        return (kv_copies * s * row(shape.rhs_dim, isz)
                + q_copies * tq * row(shape.head_dim, isz)
                + buffers * tq * (row(shape.value_cols, 4)
                                  + row(shape.value_cols, shape.out_itemsize)))
    loads_once = [s * row(shape.head_dim, isz), s * row(shape.value_dim, isz)]
    loads_per_tile = [tq * row(shape.head_dim, isz), shape.mask_tile_rows(tq) * row(s, isz)]
    buffers_per_tile = [
        tq * row(s, 4), tq * STICK_BYTES, tq * row(s, 4), tq * STICK_BYTES, tq * row(s, isz),
        tq * row(shape.value_cols, 4),
        tq * row(shape.value_cols, shape.out_itemsize) if shape.out_itemsize != 4 else 0,
    ]
    return (kv_copies * sum(loads_once) + q_copies * sum(loads_per_tile)
            + buffers * sum(buffers_per_tile))


def _halves(rows: int, target: SpyreTarget) -> int:
    """Rows of one corelet's share: tile ops of >= 16 rows are split over the corelets."""
    return rows // target.corelets_per_core if rows >= 16 and rows % 2 == 0 else rows


def group_cores(shape: AttentionShape, split: Split) -> int:
    """Cores along the grid's head dim whose query heads read the same key/value head
    (grouped-query attention: `group` query heads per K/V head, consecutive heads on
    neighbouring cores); 1 when a core holds a whole group or more."""
    per_core = shape.heads // split.gm
    if shape.group <= per_core or shape.group % per_core:
        return 1
    return shape.group // per_core


def _predict_attention(shape: AttentionShape, split: Split, tiling: Tiling,
                       target: SpyreTarget) -> Prediction:
    """Per core: K and V of each of its heads loaded once; per query tile a Q load, two PT
    matmuls, the softmax passes on the SFU, the output conversion and a store."""
    row = shape.row_bytes
    isz, tq, s = shape.in_itemsize, tiling.tm, shape.kv_rows
    heads = shape.heads // split.gm
    tiles = heads * (shape.q_rows // split.gn // tq)
    kv_bytes = s * (row(shape.head_dim, isz) + row(shape.value_dim, isz))
    tile_in = tq * row(shape.head_dim, isz) + shape.mask_tile_rows(tq) * row(s, isz)
    tile_out = tq * row(shape.value_dim, shape.out_itemsize)
    if shape.single:
        kv_bytes = s * row(shape.rhs_dim, isz)
    bytes_core = heads * kv_bytes + tiles * (tile_in + tile_out)
    dmas = (1 if shape.single else 2) * heads + tiles * (2 + int(shape.mask))
    cores = split.cores
    bytes_all = bytes_core * cores
    ring = chain = 0.0
    group = group_cores(shape, split)
    sharers = split.gn * group if tiling.share else 1
    if tiling.share:
        # K and V of a head read once per grid row and forwarded to the row's gn cores,
        # gm core numbers apart on the ring (note 38), and once per group of query heads
        # reading the same K/V head, forwarded to the group's neighbouring cores
        bytes_all -= (cores - cores // sharers) * heads * kv_bytes
        # a chain in ring order: neighbours when the sharers are consecutive cores (one
        # grid row of heads, or every head of the grid reading one K/V head)
        consecutive = split.gn == 1 or group == split.gm
        hops = 1 if consecutive else grid_row_hop(split, target)
        k_bytes, v_bytes = s * row(shape.head_dim, isz), s * row(shape.value_dim, isz)
        step = (ring_transfer_cycles(k_bytes, hops, target)
                + ring_transfer_cycles(v_bytes, hops, target))
        ring = heads * step
        # the fill waits for the chain of a grid row (a query-head group's cores, when one
        # core per head row): the emulator overlaps a longer chain's later links with the
        # first cores' compute (2x5 GQA with 10 sharers: 2141 cycles emulated, where a
        # 10-link chain predicted 3322)
        chain = ring_chain_cycles(k_bytes + v_bytes, hops,
                                  split.gn if split.gn > 1 else sharers, target)
        dmas += heads * (ring_pieces(k_bytes) + ring_pieces(v_bytes) - 2)
    dma = dmas * target.dma_setup_cycles + bytes_all / target.lpddr_bytes_per_cycle
    rows = _halves(tq, target)
    if shape.single:  # one matmul and the output conversion per tile
        per_tile_pt = pt_cycles(rows, shape.head_dim, shape.value_cols, target)
        per_tile_sfu = sfu_cycles(rows, row(shape.value_cols, 4), 1, target)
    else:
        per_tile_pt = (pt_cycles(rows, shape.head_dim, s, target)
                       + pt_cycles(rows, s, shape.value_cols, target))
        passes = shape.score_passes - 1 + target.sfu_transcendental_factor  # exp costs more
        per_tile_sfu = (sfu_cycles(rows, row(s, 4), passes, target)
                        + sfu_cycles(rows, row(shape.value_cols, 4), 1, target))
    pt, sfu = tiles * per_tile_pt, tiles * per_tile_sfu
    # Within a tile, scores -> softmax -> P V is a chain. spyre-schedule-dataflow orders an
    # attention kernel's instructions by their earliest start (note 60), so the next tile's
    # Q K^T runs on the PT while this tile's softmax runs on the SFU: every tile's Q K^T but
    # the first hides. P V still waits for its softmax, and the output conversion for P V
    # (8 heads of 256 x 256 on 8x4: 10208 predicted, 9320 emulated; also counting P V as
    # hidden predicted 9440 there, but 49.9k against 60.3k emulated for 1024 x 1024, and it
    # chose a 4x4 split for 256 x 256 that ran 25 % slower). A batch matmul has no chain to
    # overlap. Compute starts
    # once K, V and the first Q tile are in (`fill`), while the DMA stream, which includes
    # those loads, runs on; the last store follows the last tile. Every core loads its first
    # Q tile at once; K and V are loaded by every core, or, shared, by one core per grid row
    # and group of query heads (the others receive them over the ring: `chain`).
    compute = pt + sfu
    if not shape.single:
        per_tile_qk = pt_cycles(rows, shape.head_dim, s, target)
        compute = max(pt, sfu, compute - (tiles - 1) * per_tile_qk)
    kv_loaders = cores // sharers
    fill = target.dma_setup_cycles + ((kv_bytes * kv_loaders + tile_in * cores)
                                      / target.lpddr_bytes_per_cycle)
    drain = dma_cycles_alone(tile_out, target, cores)
    cycles = max(dma, ring, fill + chain + compute) + drain
    return Prediction(cycles, dma, pt, sfu, bytes_all, _attention_lx(shape, tiling, split),
                      ring)


def _predict_move(shape: MoveShape, split: Split, tiling: Tiling,
                  target: SpyreTarget) -> Prediction:
    """Per tile one load of tm rows (a strided run) and one store: DMA only. With
    `shared_runs` a tile is loaded once and stored to each of the core's runs."""
    tiles = (shape.outer // split.gm) * (shape.run // split.gn // tiling.tm)
    loads = shape.run // split.gn // tiling.tm if shape.shared_runs else tiles
    tile_bytes = tiling.tm * shape.row_bytes
    cores = split.cores
    moved = (loads + tiles) * tile_bytes * cores
    dma = ((loads + tiles) * target.dma_setup_cycles + moved / target.lpddr_bytes_per_cycle)
    edge = dma_cycles_alone(tile_bytes, target, cores)
    return Prediction(dma + 2 * edge, dma, 0.0, 0.0, moved,
                      lx_footprint(shape, tiling, None, 2, target))


def predict(shape: Shape, split: Split, tiling: Tiling, target: SpyreTarget,
            buffers: int = 2) -> Prediction:
    """Predicted cycles of the kernel with this split and tiling (`buffers` = 1: no
    ping-pong, so a tile's loads, compute and store run one after the other)."""
    if isinstance(shape, AttentionShape):
        return _predict_attention(shape, split, tiling, target)
    if isinstance(shape, MoveShape):
        return _predict_move(shape, split, tiling, target)
    tm, tn, tk = tiling.tm, tiling.tn, tiling.tk
    isz = shape.in_itemsize
    loads = matmul_loads(shape, split, tiling, target)
    tiles, nk = loads.tiles, loads.k_steps
    a_tile, b_tile = tm * tk * isz, tk * tn * isz
    row_in = shape.row_operands * tn * isz
    # a one-column operand is a stick per row, read again by every core of a grid row
    # an operand read from the core's LX slice, a result written into it: no DMA (note 61)
    loaded_full = shape.full_operands - shape.lx_operands
    per_tile_in = loaded_full * tm * tn * isz + shape.col_operands * tm * 128
    out_tile = shape.stored_tile_bytes(tm, tn)
    stored = shape.outputs - shape.lx_outputs
    blocks = shape.rows // split.gm // tm  # row blocks per core
    # a tail's row pieces (note 57) are tiles of their own: a store and epilogue operand
    # loads each, a bias-like row operand read again by each
    extra_pieces = blocks * (tiling.tail - 1) if shape.k else 0
    # a bias-like row operand depends on the column tile alone: a core with one column tile
    # loads it once, before its row loop (convert-spyre-to-ktir hoists it)
    row_loads = min(tiles, 1) if tiles == blocks else tiles + extra_pieces
    bytes_core = tiles * (per_tile_in + out_tile) + row_loads * row_in
    dmas_core = ((tiles + extra_pieces) * (stored + loaded_full
                                           + shape.col_operands)
                 + row_loads * shape.row_operands)
    pieces = store_pieces(shape, split, tiling, target, buffers)
    dmas_core += tiles * stored * (pieces - 1)  # store pieces: a descriptor each
    cores = split.cores
    bytes_all, dmas_all = bytes_core * cores, dmas_core * cores
    if shape.col_outputs and split.gn > 1:
        # a split row's one-column results are whole on every core of the grid row after
        # the all-reduce; only its first core stores them (note 59)
        bytes_all -= (cores - split.gm) * tiles * shape.col_outputs * tm * 128
        dmas_all -= (cores - split.gm) * tiles * shape.col_outputs
    if shape.k:
        bytes_core += loads.a * a_tile + loads.b * b_tile
        dmas_core += loads.a + loads.b
        # shared: each A tile read once per grid row, each B tile (and bias-like row
        # operand tile) once per grid column
        a_readers, b_readers = (split.gm, split.gn) if tiling.share else (cores, cores)
        bytes_all += loads.a * a_tile * a_readers + loads.b * b_tile * b_readers
        dmas_all += loads.a * a_readers + loads.b * b_readers
        if tiling.share:  # the loading core reads a large shared tile in pieces
            extra = (loads.a * (ring_pieces(a_tile) - 1) + loads.b * (ring_pieces(b_tile) - 1))
            dmas_core += extra
            dmas_all += extra * min(a_readers, b_readers)
        bytes_all -= (cores - b_readers) * row_loads * row_in
        dmas_all -= (cores - b_readers) * row_loads * shape.row_operands
    # a core's DMA engine spends a setup per descriptor; while it does, the other cores'
    # transfers have the shared channel, so setups overlap other cores' bytes (shared: the
    # first core of both chains loads what every core loaded unshared)
    channel = bytes_all / target.lpddr_bytes_per_cycle
    engine = dmas_core * target.dma_setup_cycles + bytes_core / target.lpddr_bytes_per_cycle
    if tiling.share and shape.k:
        dma = max(channel + dmas_all * target.dma_setup_cycles / cores ** 2, engine)
    else:  # identical programs: every core sets up at once, the channel idles meanwhile
        dma = channel + dmas_core * target.dma_setup_cycles
    ring = ring_sharing(shape, split, tiling, loads, target) if tiling.share and shape.k \
        else None
    ring_rx, chain = (ring.rx_cycles, ring.chain_cycles) if ring else (0.0, 0.0)
    # tile ops of >= 16 rows are split by rows over the corelets (one instruction each)
    rows = _halves(tm, target)
    passes = max(1, shape.sfu_passes)
    pt = tiles * nk * pt_cycles(rows, tk, tn, target) if shape.k else 0.0
    sfu = tiles * tile_sfu_cycles(shape, rows, tn, target)
    # each row reduction of a split row waits for its all-reduce before the SFU goes on
    # with the tile (note 59): the SFU stream, in program order, waits with it
    tile_allreduce = shape.ring_reduces * ring_reduce_cycles(tm, split, target) \
        if shape.reduce else 0.0
    sfu += tiles * tile_allreduce
    piece_rows, piece_tile = rows, out_tile  # the work after the last one's K loop
    if extra_pieces:  # each row block's last tile in row pieces (note 57)
        first, last = tail_rows(tm, tiling.tail)
        piece_rows = _halves(last, target)
        piece_tile = shape.stored_tile_bytes(last, tn)
        pt += blocks * nk * ((tiling.tail - 1) * pt_cycles(_halves(first, target), tk, tn,
                                                           target)
                             + pt_cycles(piece_rows, tk, tn, target)
                             - pt_cycles(rows, tk, tn, target))
        sfu += blocks * ((tiling.tail - 1) * sfu_cycles(_halves(first, target), tn * 4,
                                                         passes, target)
                         + sfu_cycles(piece_rows, tn * 4, passes, target)
                         - sfu_cycles(rows, tn * 4, passes, target))
    lx = lx_footprint(shape, tiling, split, buffers, target)
    if buffers == 1:  # one slot per buffer: nothing overlaps
        return Prediction(dma + pt + sfu + ring_rx, dma, pt, sfu, bytes_all, lx,
                          ring_rx + tiles * tile_allreduce)
    # pipeline fill (first loads) and drain (last epilogue and store)
    a_in = 0 if shape.lx_lhs else a_tile  # A read in place in LX: nothing to wait for
    # a kernel whose tiles are all in LX already (note 61) waits for no load, stores nothing
    first_in = (a_in + b_tile) if shape.k else \
        tm * tn * isz * (max(1, shape.full_operands) - shape.lx_operands) \
        or row_in + shape.col_operands * tm * 128  # then only its row operands
    fill = dma_cycles_alone(first_in, target, cores) if first_in else 0.0
    if tiling.share and shape.k:  # only the first core of each chain loads them
        fill = (target.dma_setup_cycles + (split.gm * a_in + split.gn * b_tile)
                / target.lpddr_bytes_per_cycle)
    last_sfu = tile_sfu_cycles(shape, piece_rows, tn, target) + tile_allreduce
    step_pt = pt_cycles(piece_rows, tk, tn, target) if shape.k and tiles else 0.0
    if tiling.resident == "a" and nk > 1:
        # a row block in K slices: the first column tile's K loop consumes each slice as it
        # comes, so it cannot end before every grid row's block (and the first B tiles of
        # every grid column) has crossed the channel
        kp = padded_cols(shape.k, isz, target)
        a_readers, b_readers = (split.gm, split.gn) if tiling.share else (cores, cores)
        phase = (a_readers * tm * kp * isz * (not shape.lx_lhs) + b_readers * kp * tn * isz) \
            / target.lpddr_bytes_per_cycle
        fill = max(fill, phase - (nk - 1) * pt_cycles(rows, tk, tn, target))
    compute = max(pt, sfu, ring_rx)
    drain = last_sfu + (dma_cycles_alone(piece_tile, target, cores) if piece_tile else 0.0)
    # without a matmul the SFU is the compute: its total already holds the last tile's
    # epilogue, which the drain counts again (a one-tile core: load, epilogue, store)
    overlap = 0.0 if shape.k else last_sfu
    if dma >= compute:
        # DMA-bound: the first loads and the last store are part of `dma`; after the last
        # load only its trip down the ring, one K step's matmul and the last epilogue remain.
        # But the last tiles' stores wait for their compute, and the compute for the loads:
        # with few tiles per core (one: every store at the end) that tail decides.
        load_cycles = (bytes_all - cores * tiles * out_tile) \
            / target.lpddr_bytes_per_cycle
        if overlap and tiles == 1:
            # a one-tile core's row operands (a norm's weight and bias) come after the tile
            # they scale and are read by its last ops: the epilogue starts before they arrive
            load_cycles -= cores * row_in / target.lpddr_bytes_per_cycle
        tail = max(compute + fill - overlap, load_cycles + step_pt) + chain + drain
        # the channel's last work is the last tiles' stores; without a matmul the last
        # epilogue is long enough to matter, and the channel has other work meanwhile: the
        # previous tiles' stores, or with one tile per core its row operands
        busy = cores * (out_tile if tiles > 1 else row_loads * row_in)
        hidden = min(last_sfu, busy / target.lpddr_bytes_per_cycle) if overlap else 0.0
        cycles = max(dma + chain + step_pt + last_sfu - hidden, tail)
    else:
        cycles = compute + fill - overlap + chain + drain
    return Prediction(cycles, dma, pt, sfu, bytes_all, lx, ring_rx + tiles * tile_allreduce)


def store_stall_cycles(shape: KernelShape, split: Split, tiling: Tiling,
                       target: SpyreTarget) -> float:
    """Cycles a core's PT waits at the boundaries between its output tiles when each tile is
    stored whole: every core stores its tile at once (cores x the tile's bytes over the
    shared channel) and the next tile's loads queue behind that store on the core's one DMA
    engine, while the PT has only the K step already prefetched into the other slot."""
    loads = matmul_loads(shape, split, tiling, target)
    store = split.cores * shape.stored_tile_bytes(tiling.tm, tiling.tn) \
        / target.lpddr_bytes_per_cycle
    step = pt_cycles(_halves(tiling.tm, target), tiling.tk, tiling.tn, target)
    return (loads.tiles - 1) * max(0.0, store - step)


def store_pieces(shape: Shape, split: Split, tiling: Tiling, target: SpyreTarget,
                 buffers: int = 2) -> int:
    """Row pieces a K-blocked matmul's output tile is stored in (note 54), so that its store
    goes out one piece per K step of the core's next tile instead of holding the DMA queue,
    and with it the next tile's loads, for the whole tile: the most pieces of whole rows, at
    most one per K step, each within one corelet's half of the rows, when the whole-tile
    stores' stall (`store_stall_cycles`) exceeds the extra descriptors' setup on the core's
    DMA engine. 1 (one store) otherwise: a core with one tile (nothing to overlap), K not
    blocked, or no ping-pong buffers."""
    if buffers < 2 or not isinstance(shape, KernelShape) or not shape.k \
            or tiling.resident not in ("acc", "a") or shape.full_outputs != shape.outputs \
            or shape.lx_outputs:
        return 1
    loads = matmul_loads(shape, split, tiling, target)
    if loads.tiles < 2 or loads.k_steps < 2:
        return 1
    halves = tiling.tm // _halves(tiling.tm, target)
    rows = tiling.tm // halves
    pieces = max(p for p in range(halves, loads.k_steps + 1, halves)
                 if rows % (p // halves) == 0)
    setups = loads.tiles * (pieces - 1) * shape.outputs * target.dma_setup_cycles
    if pieces == 1 or store_stall_cycles(shape, split, tiling, target) <= setups:
        return 1
    return pieces


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def core_spans(shape: Shape, split: Split) -> dict[str, int]:
    """The span of LPDDR bytes one core of `split` touches in each tensor of the kernel,
    as the device's per-core span rule counts it (`SpyreTarget.per_core_span_bytes`), by
    what the tensor is: a core's block of rows runs from its first row to its last across
    every column (the output, the operands read row for row with it: `rows`), a matmul's B
    is read down all its K rows for the core's block of columns (`weight`), an attention's
    keys and values for the core's heads (`keys`)."""
    if isinstance(shape, AttentionShape):
        # its heads' query rows: from its first head's first to its last head's last
        heads = shape.heads // split.gm
        rows = (heads - 1) * shape.q_rows + shape.q_rows // split.gn
        width = max(shape.head_dim, shape.rhs_dim if shape.single else shape.value_dim)
        return {"rows": rows * max(shape.row_bytes(shape.value_dim, shape.out_itemsize),
                                   shape.row_bytes(shape.head_dim, shape.in_itemsize)),
                "keys": -(-heads // shape.group) * shape.kv_rows
                * shape.row_bytes(width, shape.in_itemsize)}
    if isinstance(shape, MoveShape):
        runs = shape.outer // split.gm
        return {"rows": (runs - 1) * shape.run * shape.row_bytes
                + shape.run // split.gn * shape.row_bytes}
    rows = shape.rows // split.gm
    block = shape.col_sticks // split.gn * shape.stick_elems  # the core's columns of a row

    def rows_span(itemsize: int) -> int:  # its rows, all but the last across every column
        return (rows - 1) * stick_padded(shape.cols * itemsize) + stick_padded(block * itemsize)

    a = rows * stick_padded(shape.k * shape.in_itemsize) if shape.k and not shape.lx_lhs else 0
    # B [K, N]: the core's columns of every one of its K rows
    b = ((shape.k - 1) * stick_padded(shape.cols * shape.in_itemsize)
         + stick_padded(block * shape.in_itemsize)) if shape.k else 0
    return {"rows": max(rows_span(shape.out_itemsize), a,
                        rows_span(shape.in_itemsize) if shape.full_operands else 0),
            "weight": b}


def core_span_bytes(shape: Shape, split: Split) -> int:
    """The widest span one core of `split` touches in one tensor (`core_spans`)."""
    return max(core_spans(shape, split).values())


def candidate_splits(shape: Shape, target: SpyreTarget) -> list[Split]:
    """Even splits over at most `num_cores` cores: rows x output column sticks of a tile-graph
    kernel, heads x query rows of an attention kernel, runs x rows of a run of a move; none
    whose core spans more than `per_core_span_bytes` of a tensor (`core_span_bytes`)."""
    return [s for s in even_splits(shape, target)
            if core_span_bytes(shape, s) <= target.per_core_span_bytes]


def even_splits(shape: Shape, target: SpyreTarget) -> list[Split]:
    """`candidate_splits` before the span rule."""
    if isinstance(shape, AttentionShape):
        splits = [Split(gm, gn) for gm in _divisors(shape.heads)
                  for gn in _divisors(shape.q_rows)]
    elif isinstance(shape, MoveShape):
        splits = [Split(gm, gn) for gm in _divisors(shape.outer) for gn in _divisors(shape.run)]
    else:
        # a reduced dim is split only where ring.reduce can combine the rows' partials (59)
        col_splits = [1] if shape.reduce and not shape.splits_reduced_dim \
            else _divisors(shape.col_sticks)
        splits = [Split(gm, gn) for gm in _divisors(shape.rows) for gn in col_splits]
    return [s for s in splits if s.cores <= target.num_cores]


MAX_TAIL = 8
MIN_TAIL_K_STEPS = 8
"""A tail needs a K loop of at least this many steps: its B block streams in over the
first piece's K loop and the previous tile's store over all pieces' K steps. With two
steps (64x100x100 unshared, 256x256x1024) the model predicted the tail 11 % faster and the
emulator ran it 10 % slower: nothing overlaps."""


def tail_rows(tm: int, tail: int) -> tuple[int, int]:
    """Rows of a tail's pieces (note 57): the first tail - 1 pieces take whole blocks of 16
    rows (8 per corelet, the PT array's block, so no row of a matmul is padding), the
    last piece the rest (300 rows in three: 112, 112 and 76, not 100 each)."""
    even = -(-tm // tail)
    first = -(-even // 16) * 16
    return first, tm - (tail - 1) * first


def tail_pieces(shape: KernelShape, split: Split, tiling: Tiling,
                target: SpyreTarget) -> list[int]:
    """Row pieces the last column tile of a K-sliced A block may be computed in (note 57),
    none for fewer than MIN_TAIL_K_STEPS K steps: at most MAX_TAIL and at most one per K
    step (the previous tile's store goes out over them); each of an even number of at least
    16 rows (`tail_rows`), so both corelets work on it; and each piece's K step (its
    matmul) at least as long as its B slice takes to cross the channel from every grid
    column's loader, which the first piece waits for at every step (five 60-row pieces of
    1500x1000x1500 fail this and ran 11 % slower than three)."""
    tm, k_steps = tiling.tm, padded_cols(shape.k, shape.in_itemsize, target) // tiling.tk
    b_readers = split.gn if tiling.share else split.cores
    b_slice = b_readers * tiling.tk * tiling.tn * shape.in_itemsize \
        / target.lpddr_bytes_per_cycle
    pieces: list[int] = []
    if k_steps < MIN_TAIL_K_STEPS:
        return pieces
    for p in range(2, min(MAX_TAIL, k_steps) + 1):
        first, last = tail_rows(tm, p)
        if 16 <= last <= first and last % 2 == 0 \
                and pt_cycles(first // 2, tiling.tk, tiling.tn, target) >= b_slice:
            pieces.append(p)
    return pieces


def candidate_tilings(shape: Shape, split: Split, target: SpyreTarget,
                      buffers: int = 2) -> list[Tiling]:
    """Tilings of one core's share that fit LX: tm | rows share, sticks of tn | cols share,
    and for a matmul sticks of tk | K with the resident operand: "a" or "b" when tk is the
    whole K, "acc" when K is blocked (attention: tq | query rows share with the head's K and
    V resident; move: tm | run share, 1 for a broadcast run)."""
    budget = target.lx_usable_bytes
    if isinstance(shape, AttentionShape):
        shares = (False, True) if split.gn > 1 or group_cores(shape, split) > 1 else (False,)
        tilings = [Tiling(tq, shape.value_cols, shape.kv_rows, "", s)
                   for tq in _divisors(shape.q_rows // split.gn) for s in shares]
        return [t for t in tilings if lx_footprint(shape, t, split, buffers, target) <= budget]
    if isinstance(shape, MoveShape):
        cols = shape.row_bytes // shape.itemsize
        tms = [1] if shape.broadcast else _divisors(shape.run // split.gn)
        return [Tiling(tm, cols, 0) for tm in tms
                if lx_footprint(shape, Tiling(tm, cols, 0), None, buffers, target) <= budget]
    out_eps = shape.stick_elems
    in_eps = target.elems_per_stick(shape.in_itemsize)
    mc = shape.rows // split.gm
    nc_sticks = shape.col_sticks // split.gn
    k_sticks = shape.sticks(shape.in_itemsize, shape.k) if shape.k else 0
    tms = _divisors(mc)
    tns = [nc_sticks * out_eps] if shape.reduce else [d * out_eps for d in _divisors(nc_sticks)]
    if not shape.k:
        tilings = [Tiling(tm, tn, 0) for tm, tn in itertools.product(tms, tns)]
    else:
        tilings = []
        shares = (False, True) if split.cores > 1 else (False,)
        for tm, tn, d in itertools.product(tms, tns, _divisors(k_sticks)):
            # A in K slices pays off over several column tiles (with one it is "acc" with
            # more LX)
            residents = ("a", "b", "acc") if d == k_sticks else \
                ("acc", "a") if tn < nc_sticks * out_eps else ("acc",)
            tilings.extend(Tiling(tm, tn, d * in_eps, r, s)
                           for r in residents for s in shares)
            if d < k_sticks:  # the sliced A block with the last column tile in row pieces
                for s in shares:
                    sliced = Tiling(tm, tn, d * in_eps, "a", s)
                    tilings.extend(Tiling(tm, tn, d * in_eps, "a", s, p)
                                   for p in tail_pieces(shape, split, sliced, target))
    return [t for t in tilings if lx_footprint(shape, t, split, buffers, target) <= budget]


SLICED_MARGIN = 0.03
"""How much faster a K-sliced A block (note 54) must be predicted to be chosen: on kernels
of small tiles (8 KiB operand tiles over a K of 4096 and more) the model was 4-5 % optimistic
for it (the few chain heads' DMA engines, setting up a descriptor per slice and per tile,
leave the shared channel idle), where it had predicted 1-2 % gains."""


TAIL_MARGIN = 0.05
"""How much faster a tail (note 57) must be predicted to be chosen: the model sees what a
tail saves (all but one piece of the drain) but not what its first piece costs when the
tail's B block, the previous tile's store and the other cores' stores share the channel.
Where it predicted gains of 0.3-4 % (GEMMs of 128^3, 512^3, 1024x2048x2048) the emulator
ran the tail 5-15 % slower. On 1500x1000x1500 it predicted 13 % and measured 12 % (86105
against 99153 cycles predicted, 86748 against 98047 emulated)."""


def ranking_cycles(shape: Shape, tiling: Tiling, pred: Prediction,
                   target: SpyreTarget) -> float:
    """The predicted cycles tilings and splits are ranked by: a K-sliced A block carries
    SLICED_MARGIN, a tail TAIL_MARGIN on top."""
    if isinstance(shape, KernelShape) and shape.k and tiling.resident == "a" \
            and tiling.tk < padded_cols(shape.k, shape.in_itemsize, target):
        return pred.cycles * (1 + SLICED_MARGIN) * (1 + TAIL_MARGIN * (tiling.tail > 1))
    return pred.cycles


def _size_key(tiling: Tiling) -> int:
    return -(tiling.tm * tiling.tn * max(tiling.tk, 1))


def _shareable(shape: Shape) -> bool:
    """Kernels whose cores can share operand tiles over the ring: matmuls and attention."""
    return isinstance(shape, AttentionShape) or (isinstance(shape, KernelShape) and bool(shape.k))


def ranked_tilings(shape: Shape, split: Split, target: SpyreTarget, buffers: int = 2,
                   resident: str = "", share: str = "",
                   tail: int = 0) -> list[tuple[Prediction, Tiling]]:
    """Every tiling that fits, fewest predicted cycles first (`ranking_cycles`; then fewer
    off-chip bytes, then larger tiles, then no ring traffic); `resident` keeps only matmul
    tilings of that loop order, `share` ("ring" or "none") only those with or without ring
    sharing, `tail` = 1 only those without a tail (note 57), `tail` >= 2 only those with that
    many pieces when the kernel has any (0: no filter)."""
    return list(_ranked_tilings(shape, split, target, buffers, resident, share, tail))


@functools.lru_cache(maxsize=8192)
def _ranked_tilings(shape: Shape, split: Split, target: SpyreTarget, buffers: int,
                    resident: str, share: str,
                    tail: int = 0) -> tuple[tuple[Prediction, Tiling], ...]:
    """`ranked_tilings`, remembered: a model's repeated layers ask the same questions (every
    argument is a frozen value, and the answer depends on nothing else)."""
    candidates = candidate_tilings(shape, split, target, buffers)
    if share == "ring" and not any(t.share for t in candidates):
        share = ""  # one core (or one core per head): nothing to share
    options = [(predict(shape, split, t, target, buffers), t) for t in candidates
               if (not (resident and t.resident) or t.resident == resident)
               and (not share or t.share == (share == "ring") or not _shareable(shape))]
    if tail == 1 or (tail > 1 and any(t.tail == tail for _, t in options)):
        options = [o for o in options if o[1].tail == tail]
    options.sort(key=lambda o: (ranking_cycles(shape, o[1], o[0], target), o[0].offchip_bytes,
                                _size_key(o[1]), o[1].resident, o[1].share))
    return tuple(options)


def best_tiling(shape: Shape, split: Split, target: SpyreTarget, buffers: int = 2,
                resident: str = "", share: str = "",
                tail: int = 0) -> tuple[Tiling, Prediction] | None:
    """The tiling with the fewest predicted cycles (fewer bytes, then larger tiles break
    ties)."""
    ranked = ranked_tilings(shape, split, target, buffers, resident, share, tail)
    if not ranked:
        return None
    pred, tiling = ranked[0]
    return tiling, pred
