"""Structure of a `spyre.kernel` as the middle-end passes see it.

There are three kinds of kernel. The common one is an optional matmul (its first op) followed
by a graph of tile ops on one row block. Every value of such a kernel is one of three kinds
relative to the kernel's full rows x cols tensor (M x N, leading dims flattened into rows):

- FULL: the full M x N tensor, tiled tm x tn;
- ROW: one row of N values broadcast over all rows (a bias or norm weight), tiled 1 x tn;
- COL: one value per row (a row reduction), tiled tm x 1, one stick per row in LX.

An attention kernel holds one `spyre.attention` and the row moves (reshape, permute_rows,
expand_rows) folded into its reads and its write (`AttentionInfo`, with a `RowMap` per
operand). A move kernel holds one `spyre.permute_rows` or `spyre.expand_rows` (`MoveInfo`).

`analyze` classifies a kernel and summarises it as a cost-model shape. The partitioning,
tiling, lowering and scheduling passes all read kernels through this one function so they
agree on what a kernel is.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import TensorType
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.ir.affine import AffineExpr

from spyrec.costmodel import AttentionShape, KernelShape, MoveShape, Split, Tiling
from spyrec.diagnostics import CompileError
from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.spyre import (
    BINARY_OPS,
    DATA_MOVES,
    REDUCE_OPS,
    SCALAR_OPS,
    UNARY_OPS,
    AttentionOp,
    BatchMatmulOp,
    CastOp,
    ExpandRowsOp,
    GatherOp,
    KernelOp,
    MatmulOp,
    PermuteRowsOp,
    ReshapeOp,
    ScatterOp,
    SliceRowsOp,
    WindowRowsOp,
    YieldOp,
    describe,
)
from spyrec.passes.graph import spyre_stickify
from spyrec.passes.graph.row_maps import (
    MOVE_OPS,
    Index,
    RowMap,
    add,
    head_indices,
    lead_shape,
    mul,
    read_map,
    write_map,
)
from spyrec.target import SpyreTarget, round_up
from spyrec.target.isa import TRANSCENDENTAL, UnaryFn

DEVICE_ITEMSIZE = {"f16": 2, "bf16": 2, "f32": 4, "i32": 4, "i64": 4}  # i64 is int32 on device

UNARY_FN = {
    "relu": UnaryFn.RELU, "gelu": UnaryFn.GELU, "gelu_tanh": UnaryFn.GELU_TANH,
    "exp": UnaryFn.EXP, "neg": UnaryFn.NEG, "sigmoid": UnaryFn.SIGMOID, "silu": UnaryFn.SILU,
    "tanh": UnaryFn.TANH, "sqrt": UnaryFn.SQRT, "rsqrt": UnaryFn.RSQRT,
    "reciprocal": UnaryFn.RECIPROCAL, "abs": UnaryFn.ABS,
    "log": UnaryFn.LOG, "erf": UnaryFn.ERF,
    "sin": UnaryFn.SIN, "cos": UnaryFn.COS,
}
_SCALAR_NAMES = {cls.name: kind for kind, cls in SCALAR_OPS.items()}
_REDUCE_NAMES = {cls.name: kind for kind, cls in REDUCE_OPS.items()}


class Kind(enum.Enum):
    FULL = "full"
    ROW = "row"
    COL = "col"


def tile_op_kind(op: Operation) -> tuple[str, str] | None:
    """(category, function) of a tile op — unary/binary/scalar/reduce/cast — or None."""
    short = op.name.removeprefix("spyre.")
    if isinstance(op, CastOp):
        return "cast", "copy"
    if isinstance(op, ReshapeOp):
        # a reshape that keeps the innermost dim only merges or splits leading dims: for a
        # kernel tiled over rows it is a view of the same tile (design note 50)
        return ("view", "reshape") if is_row_view(op) else None
    if not op.name.startswith("spyre."):
        return None
    if short in UNARY_OPS:
        return "unary", short
    if short in BINARY_OPS:
        return "binary", short
    if op.name in _SCALAR_NAMES:
        return "scalar", _SCALAR_NAMES[op.name]
    if op.name in _REDUCE_NAMES:
        return "reduce", _REDUCE_NAMES[op.name]
    return None


def is_row_view(op: Operation) -> bool:
    """A `spyre.reshape` that only merges or splits leading dims (the stick dim and the
    number of rows stay): the same rows x cols tile under another N-D shape."""
    return isinstance(op, ReshapeOp) and rows_cols(op.operands[0]) == rows_cols(op.results[0])


def op_kind(op: Operation) -> tuple[str, str]:
    """`tile_op_kind` for an op that must be a tile op."""
    kind = tile_op_kind(op)
    if kind is None:
        raise CompileError(f"{describe(op)}: cannot be part of a kernel's tile graph")
    return kind


def sfu_passes(fn: str, factor: int = 4) -> int:
    return factor if fn in UNARY_FN and UNARY_FN[fn] in TRANSCENDENTAL else 1


def rows_cols(value: SSAValue) -> tuple[int, int]:
    """A tensor as rows x innermost columns (the row-sticked view)."""
    assert isinstance(value.type, TensorType)
    shape = list(value.type.get_shape()) or [1]
    return math.prod(shape[:-1]), shape[-1]


def itemsize(value: SSAValue) -> int:
    assert isinstance(value.type, TensorType)
    return DEVICE_ITEMSIZE[str(value.type.element_type)]


@dataclass
class KernelInfo:
    kernel: KernelOp
    matmul: MatmulOp | None
    ops: list[Operation]  # tile ops after the matmul, in program order
    outputs: list[SSAValue]
    full: tuple[int, int]  # M x N
    kinds: dict[SSAValue, Kind] = field(default_factory=dict)

    @property
    def has_reduce(self) -> bool:
        return any(op_kind(op)[0] == "reduce" for op in self.ops)

    def kind(self, value: SSAValue) -> Kind:
        return self.kinds[value]

    def shape(self) -> KernelShape:
        m, n = self.full
        args = list(self.kernel.body.block.args)
        used = [a for a in args if a.uses and not self._only_matmul_operand(a)]
        row_ops = sum(1 for a in used if self.kinds[a] is Kind.ROW)
        full_ops = sum(1 for a in used if self.kinds[a] is Kind.FULL)
        col_ops = sum(1 for a in used if self.kinds[a] is Kind.COL)
        if self.matmul is not None and self.matmul.bias is not None:
            row_ops += 1
        # SFU passes over the full tile, and over one-column values (a stick per row: what
        # a row reduction's result goes through before it is broadcast, note 59); a
        # reduction reads the full tile
        passes = col_passes = narrow_passes = 0
        for op in self.ops:
            category, fn = op_kind(op)
            if category in ("cast", "view"):
                continue
            if category != "reduce" and self.kinds.get(op.results[0]) is Kind.COL:
                col_passes += sfu_passes(fn)
            else:
                passes += sfu_passes(fn)
                narrow_passes += category == "reduce" and self._input_itemsize(op) == 2
        passes += (1 if self.matmul is not None and self.matmul.bias is not None else 0)
        col_out = sum(1 for v in self.outputs if self.kinds.get(v) is Kind.COL)
        passes += len(self.outputs) - col_out  # the final conversion of each result
        col_passes += col_out
        # a result kept in LX is rounded straight into the core's slice of it, an operand
        # kept in LX read from there (note 61)
        lx_out = sum(1 for v, r in zip(self.outputs, self.kernel.results)
                     if self.kinds.get(v) is Kind.FULL and kept_in_lx(r))
        lx_ops = sum(1 for a in used
                     if self.kinds[a] is Kind.FULL and kept_in_lx(self.kernel.inputs[a.index]))
        full_temps = self._peak_live(Kind.FULL)
        col_temps = col_ops + self._peak_live(Kind.COL)
        main = self.matmul.lhs if self.matmul else None
        in_size = itemsize(main) if main is not None else max(
            [itemsize(a) for a in used] or [4])
        return KernelShape(
            m, n, _k(self.matmul), in_size, max(itemsize(v) for v in self.outputs),
            row_operands=row_ops, full_operands=full_ops, sfu_passes=max(passes, 1),
            col_passes=col_passes, narrow_passes=narrow_passes,
            reduce=self.has_reduce, full_temps=full_temps, col_temps=col_temps,
            outputs=len(self.outputs), col_operands=col_ops,
            col_outputs=col_out,
            # the narrowest input or full output: an f16 result beside an f32 one (a mask
            # and its row reduction) needs columns in whole f16 sticks too
            narrow_itemsize=min([itemsize(a) for a in used] + [
                itemsize(v) for v in self.outputs if self.kinds.get(v) is not Kind.COL] or [0]),
            ring_reduces=self.ring_reduces, lx_outputs=lx_out, lx_operands=lx_ops,
            lx_lhs=self.lhs_in_lx)

    @property
    def lhs_in_lx(self) -> bool:
        """Whether the matmul reads its A operand in place from the cores' LX (note 61)."""
        lhs = self.matmul.lhs if self.matmul is not None else None
        return isinstance(lhs, BlockArgument) and lhs.owner is self.kernel.body.block \
            and kept_in_lx(self.kernel.inputs[lhs.index])

    def _input_itemsize(self, op: Operation) -> int:
        """Device bytes per element of the kernel input `op` reads as loaded (through casts
        and row views, which read the loaded tile); 4 when it reads a computed (f32) tile."""
        value = op.operands[0]
        while isinstance(value.owner, Operation) and value.owner in self.ops \
                and op_kind(value.owner)[0] in ("cast", "view"):
            value = value.owner.operands[0]
        return itemsize(value) if value in self.kernel.body.block.args else 4

    @property
    def ring_reduces(self) -> int:
        """Row reductions the ring can combine when the reduced dim is split (note 59):
        all of them when every one is a sum and no matmul precedes them, else 0."""
        fns = [op_kind(op)[1] for op in self.ops if op_kind(op)[0] == "reduce"]
        if self.matmul is not None or any(fn != "sum" for fn in fns):
            return 0
        return len(fns)

    def _peak_live(self, kind: Kind) -> int:
        """Most tile-graph values of `kind` live at once (an operand dying at an op frees
        its buffer for the op's result, as spyre-place-memory's in-place reuse does)."""
        body = ([self.matmul] if self.matmul else []) + self.ops
        last_use = {v: op for op in body for v in op.operands}
        live: set[SSAValue] = set()
        peak = 0
        for op in body:
            for v in op.operands:
                if v in live and last_use[v] is op and v not in self.outputs:
                    live.discard(v)
            if not isinstance(op, (CastOp, ReshapeOp)):  # a cast or view aliases its operand's tile
                live.update(r for r in op.results if self.kinds.get(r) is kind)
            peak = max(peak, len(live))
        return peak

    def _only_matmul_operand(self, arg: SSAValue) -> bool:
        mm = self.matmul
        return mm is not None and all(u.operation is mm for u in arg.uses)


def _k(matmul: MatmulOp | None) -> int:
    return 0 if matmul is None else matmul.lhs.type.get_shape()[1]  # type: ignore[attr-defined]


def classify(value: SSAValue, full: tuple[int, int]) -> Kind | None:
    rows, cols = rows_cols(value)
    m, n = full
    if (rows, cols) == (m, n):
        return Kind.FULL
    if rows == 1 and cols == n:
        return Kind.ROW
    if (rows, cols) == (m, 1):
        return Kind.COL
    return None


@dataclass
class Stored:
    """A tensor an attention or move kernel reads or writes through a row map: `value` is the
    kernel's block argument (an input) or yielded value (a result), `map` takes the reader's
    logical leading index to a stored row."""

    value: SSAValue
    map: RowMap


def mask_rows(shape: Sequence[int]) -> int:
    """Rows of an attention mask of `shape` along the query rows (1: broadcast over them)."""
    return shape[-2] if len(shape) >= 2 else 1


def mask_origin(shape: Sequence[int], q_lead: Sequence[int]) -> AffineExpr:
    """The stored row of an attention mask of `shape` (broadcast to the scores, dims
    aligned from the right) that query row d1 of flat head d0 (over `q_lead`, the query's
    leading dims: batch dims, heads, rows) reads: a dim of size 1 contributes nothing, so
    a broadcast over batches, heads or rows costs no copy."""
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    scores = [*head_indices(q_lead, d0), d1]  # the index of each leading dim of the scores
    dims = shape[:-1]
    skip = len(scores) - len(dims)
    terms = [mul(scores[skip + j], math.prod(dims[j + 1:]))
             for j, extent in enumerate(dims) if extent != 1]
    return add(*terms)


@dataclass
class AttentionInfo:
    """An attention kernel: the op, where its operands and result are stored, and how."""

    kernel: KernelOp
    op: AttentionOp | BatchMatmulOp  # a batch matmul: lhs as query, rhs as key and value
    query: Stored
    key: Stored
    value: Stored
    out: Stored
    mask: SSAValue | None  # a block argument holding the mask (broadcast to the scores)

    @property
    def q_lead(self) -> tuple[int, ...]:
        """The logical leading shape: batch dims, query heads, query rows."""
        return lead_shape(self.op.query)

    @property
    def outputs(self) -> list[SSAValue]:
        return [self.out.value]

    def shape(self) -> AttentionShape:
        op = self.op
        if isinstance(op, BatchMatmulOp):
            a, b = (list(x.type.get_shape()) for x in (op.lhs, op.rhs))  # type: ignore[attr-defined]
            nt = op.transpose_rhs is not None
            return AttentionShape(
                heads=math.prod(a[:-2]), q_rows=a[-2], kv_rows=b[-2], head_dim=a[-1],
                value_dim=b[-2] if nt else b[-1], in_itemsize=itemsize(op.lhs),
                out_itemsize=itemsize(op.result), form="nt" if nt else "nn")
        q, k, v = (list(x.type.get_shape()) for x in (op.query, op.key, op.value))  # type: ignore[attr-defined]
        return AttentionShape(
            heads=math.prod(q[:-2]), q_rows=q[-2], kv_rows=k[-2], head_dim=q[-1],
            value_dim=v[-1], in_itemsize=itemsize(op.query), out_itemsize=itemsize(op.result),
            group=op.group, causal=op.causal is not None, mask=op.mask is not None,
            mask_rows=self.mask_stored_rows(), mask_row_broadcast=self.mask_row_broadcast(),
            zero_unseen=op.zero_unseen is not None)

    def _mask_dims(self) -> list[int] | None:
        """The mask's shape, or None without a mask or for an [L, S] one (whose fields in
        `shape` keep their defaults, as they always were)."""
        if self.mask is None:
            return None
        m = list(self.mask.type.get_shape())  # type: ignore[attr-defined]
        return None if len(m) == 2 and m[0] == lead_shape(self.op.query)[-1] else m

    def mask_stored_rows(self) -> int:
        """Stored rows of a broadcast mask (all dims but the last); 0 for none or [L, S]."""
        m = self._mask_dims()
        return 0 if m is None else math.prod(m[:-1])

    def mask_row_broadcast(self) -> bool:
        """Is the mask one row per (batch, head), broadcast over the query rows?"""
        m = self._mask_dims()
        return m is not None and mask_rows(m) == 1


@dataclass
class MoveInfo:
    """A move kernel: the output's rows read from `source` through its row map."""

    kernel: KernelOp
    op: Operation
    source: Stored
    out: SSAValue

    @property
    def outputs(self) -> list[SSAValue]:
        return [self.out]

    def shape(self) -> MoveShape:
        lead = lead_shape(self.out) or (1,)
        rows, cols = rows_cols(self.out)
        # a slice reads only the rows it keeps; other moves read the whole stored tensor
        in_rows = (min(rows, self.source.map.stored_rows) if isinstance(self.op, SliceRowsOp)
                   else self.source.map.stored_rows)
        return MoveShape(rows=rows, run=lead[-1], in_rows=in_rows,
                         cols=cols, itemsize=itemsize(self.out),
                         broadcast=self.source.map.run_stride == 0 and lead[-1] > 1,
                         shared_runs=self.shared_runs)

    @property
    def shared_runs(self) -> bool:
        """Every run reads the same stored rows: the source map does not move along the
        outer leading dims (an expand over heads), and there is more than one run."""
        row_map = self.source.map
        lead = lead_shape(self.out) or (1,)
        return (isinstance(self.op, ExpandRowsOp) and math.prod(lead[:-1]) > 1
                and row_map.base == 0 and not any(row_map.coefs[:-1])
                and row_map.run_stride != 0)


@dataclass
class GatherInfo:
    """A gather kernel: rows of `table` picked by `indices` (both kernel inputs) into `out`.

    The output's rows are the indices' elements in order; a run is one stored row of the
    indices (its innermost dim), so the split and tiling of a move kernel apply: gm cores over
    the runs, gn over the indices of a run, tm indices per `dma.gather`."""

    kernel: KernelOp
    op: GatherOp
    table: SSAValue
    indices: SSAValue
    out: SSAValue

    @property
    def outputs(self) -> list[SSAValue]:
        return [self.out]

    def shape(self) -> MoveShape:
        ids = list(self.indices.type.get_shape()) or [1]  # type: ignore[attr-defined]
        rows, cols = rows_cols(self.out)
        # each gathered row is read once and written once: the minimum traffic counts the
        # rows read, not the table
        return MoveShape(rows=rows, run=ids[-1], in_rows=rows, cols=cols,
                         itemsize=itemsize(self.out))


@dataclass
class ScatterInfo:
    """An in-place scatter kernel: `values` rows written into `table` (both kernel inputs;
    `out` is the table's own storage) at the positions in `indices`, along dim -2. A run is
    one [positions, D] block of values (one batch and head of a KV cache); its rows go to
    the run's [rows, D] block of the table."""

    kernel: KernelOp
    op: ScatterOp
    table: SSAValue
    indices: SSAValue
    values: SSAValue
    out: SSAValue

    @property
    def outputs(self) -> list[SSAValue]:
        return [self.out]

    @property
    def table_rows(self) -> int:
        """Rows of one run's block of the table (the cache length)."""
        return self.table.type.get_shape()[-2]  # type: ignore[attr-defined]

    def shape(self) -> MoveShape:
        positions = self.indices.type.get_shape()[0]  # type: ignore[attr-defined]
        rows, cols = rows_cols(self.values)
        return MoveShape(rows=rows, run=positions, in_rows=rows, cols=cols,
                         itemsize=itemsize(self.values))


@dataclass
class WindowInfo:
    """A window kernel: one `spyre.window_rows`."""

    kernel: KernelOp
    op: WindowRowsOp

    @property
    def outputs(self) -> list[SSAValue]:
        return [self.op.result]

    def shape(self) -> MoveShape:
        """The split is over images only (runs of one image each); a "row" of the move is
        the LX a core holds: the pad rows and two run buffers of Wo rows per tap block."""
        n, h, w, _ = self.op.input.type.get_shape()  # type: ignore[attr-defined]
        ho, wo = self.op.out_hw()
        block = self.op.block_cols()
        taps = len(self.op.tap_list)
        if self.by_rows:
            # a unit is one output row: per tap one load and one store of Wo rows (the
            # model counts one pair, so it under-predicts by the taps; only the split
            # depends on it, and that prefers the most cores either way)
            return MoveShape(rows=n * ho, run=1, in_rows=n * h * w, cols=max(wo, 1) * block,
                             itemsize=itemsize(self.op.input))
        # a unit is one image; the LX a core holds is the pad rows and the run buffers
        return MoveShape(rows=n, run=1, in_rows=n * h * w,
                         cols=max(taps, 3) * max(wo, 1) * block, itemsize=itemsize(self.op.input))

    @property
    def by_rows(self) -> bool:
        """Windows that never leave the image are the same DMAs for every output row, so
        the cores split output rows; with padding they split images (the border rows
        differ from the others, and every core runs the same program)."""
        return self.op.pair("padding") == (0, 0)


def lx_tile_bytes(element: str, rows: int, cols: int, target: SpyreTarget) -> int:
    """LX bytes of a rows x cols tile of `element`: each row starts on a stick (a one-column
    tile takes a stick a row). spyre-place-memory allocates by it and spyre-tile's LX model
    (`lx_need`) prices by it."""
    size = spyre_stickify.DEVICE_ITEMSIZE[spyre_stickify.DEVICE_DTYPE[element]]
    return rows * round_up(cols * size, target.stick_bytes)


def padded_rows_cols(padded: Sequence[int]) -> tuple[int, int]:
    """A stick-padded shape as rows x its innermost (padded) columns."""
    rows = 1
    for d in padded[:-1]:
        rows *= d
    return rows, padded[-1]


def kv_index(group: int) -> Callable[[Index], Index]:
    """Key/value index of a query index: head h reads key/value head h / group."""

    def to_kv(index: Index) -> Index:
        if len(index) < 2 or group == 1:
            return index
        return [*index[:-2], index[-2] // group, index[-1]]

    return to_kv


def chain_back(value: SSAValue, stop: Callable[[SSAValue], bool]) -> tuple[list[Operation],
                                                                           SSAValue]:
    """The row moves producing `value` (from the base on) and the base, walking back while
    the producer is a move op and `stop` does not hold."""
    chain: list[Operation] = []
    while isinstance(value.owner, MOVE_OPS) and not stop(value):
        chain.insert(0, value.owner)
        value = value.owner.operands[0]
    return chain, value


def chain_forward(value: SSAValue, stop: Callable[[SSAValue], bool]) -> list[Operation]:
    """The single-use reshapes and permutations consuming `value`, while `stop` does not
    hold; trailing reshapes are left out (they alias the stored tensor anyway)."""
    chain: list[Operation] = []
    while value.has_one_use() and not stop(value):
        user = next(iter(value.uses)).operation
        if not isinstance(user, (PermuteRowsOp, ReshapeOp)):
            break
        chain.append(user)
        value = user.results[0]
    while chain and not isinstance(chain[-1], PermuteRowsOp):
        chain.pop()
    return chain


def stored_operands(op: AttentionOp | BatchMatmulOp) -> int:
    """Operands read through row maps: q, k, v of an attention, lhs and rhs of a batch
    matmul (an attention's mask is read as it is)."""
    return 2 if isinstance(op, BatchMatmulOp) else 3


def operand_map(op: AttentionOp | BatchMatmulOp, which: int, chain: list[Operation],
                base: SSAValue) -> RowMap | None:
    """The row map of attention operand `which` (0 q, 1 k, 2 v) read from `base` via `chain`:
    over (batch, query heads, query rows) for q, (batch, query heads, key rows) for k and v."""
    q_lead = lead_shape(op.query)
    reader = op.operands[which]
    if which == 0:
        return read_map(chain, base, reader, q_lead)
    key_rows = lead_shape(op.key)[-1:]
    return read_map(chain, base, reader, q_lead[:-1] + key_rows, kv_index(op.group))


def foldable_reads(op: AttentionOp | BatchMatmulOp, which: int,
                   stop: Callable[[SSAValue], bool]) -> tuple[list[Operation], SSAValue, RowMap]:
    """The longest foldable chain of row moves in front of an attention operand."""
    chain, _base = chain_back(op.operands[which], stop)
    for start in range(len(chain) + 1):
        tail = chain[start:]
        origin = tail[0].operands[0] if tail else op.operands[which]
        row_map = operand_map(op, which, tail, origin)
        if row_map is not None:
            return tail, origin, row_map
    raise CompileError(f"{describe(op)}: operand {which} cannot be read as strided row runs")


def foldable_writes(op: AttentionOp | BatchMatmulOp, stop: Callable[[SSAValue], bool]
                    ) -> tuple[list[Operation], RowMap]:
    """The longest foldable chain of row moves after an attention result."""
    chain = chain_forward(op.result, stop)
    for end in range(len(chain), -1, -1):
        head = chain[:end]
        if head and not isinstance(head[-1], PermuteRowsOp):
            continue
        stored = head[-1].results[0] if head else op.result
        row_map = write_map(head, op.result, stored)
        if row_map is not None:
            return head, row_map
    raise CompileError(f"{describe(op)}: its result cannot be written as strided row runs")


def _analyze_attention(kernel: KernelOp, op: AttentionOp | BatchMatmulOp, body: list[Operation],
                       outputs: list[SSAValue]) -> AttentionInfo:
    members = set(body)

    def outside(value: SSAValue) -> bool:
        return value.owner not in members

    stored = []
    for which in range(stored_operands(op)):
        _, base, row_map = foldable_reads(op, which, outside)
        if not isinstance(base, BlockArgument):
            raise CompileError(f"{describe(op)}: operand {which} of kernel "
                               f"@{kernel.sym_name.data} is not read from a kernel input")
        stored.append(Stored(base, row_map))
    if len(outputs) != 1:
        raise CompileError(f"kernel @{kernel.sym_name.data}: an attention or batch matmul "
                           "kernel has one result")
    chain, out_map = foldable_writes(op, lambda v: False)
    last = chain[-1].results[0] if chain else op.result
    if last is not outputs[0]:
        raise CompileError(f"{describe(op)}: kernel @{kernel.sym_name.data} must yield the "
                           "attention result or its row permutation")
    if isinstance(op, BatchMatmulOp):  # the rhs is read as a key (nt) or a value (nn)
        stored.append(stored[1])
    mask = op.mask if isinstance(op, AttentionOp) else None
    if mask is not None and not isinstance(mask, BlockArgument):
        raise CompileError(f"{describe(op)}: the mask must be a kernel input")
    return AttentionInfo(kernel, op, stored[0], stored[1], stored[2], Stored(last, out_map), mask)


def analyze(kernel: KernelOp) -> (KernelInfo | AttentionInfo | MoveInfo | GatherInfo | ScatterInfo
                                  | WindowInfo):
    """Classify a kernel and its values; reject shapes the kernels cannot express."""
    ops = list(kernel.body.block.ops)
    term = ops[-1]
    assert isinstance(term, YieldOp)
    attention = [op for op in ops if isinstance(op, (AttentionOp, BatchMatmulOp))]
    if attention:
        return _analyze_attention(kernel, attention[0], ops[:-1], list(term.values))
    if len(ops) == 2 and isinstance(ops[0], WindowRowsOp):
        return WindowInfo(kernel, ops[0])  # a window kernel (conv, pooling)
    if len(ops) == 2 and isinstance(ops[0], ScatterOp):
        s = ops[0]
        return ScatterInfo(kernel, s, s.table, s.indices, s.values, s.result)
    if len(ops) == 2 and isinstance(ops[0], GatherOp):
        gather = ops[0]
        return GatherInfo(kernel, gather, gather.table, gather.indices, gather.result)
    if len(ops) == 2 and isinstance(ops[0], DATA_MOVES):
        move = ops[0]
        source = move.operands[0]
        row_map = read_map([move], source, move.results[0], lead_shape(move.results[0]))
        assert row_map is not None  # one permutation, broadcast or slice always fits
        return MoveInfo(kernel, move, Stored(source, row_map), move.results[0])
    return _analyze_tile_graph(kernel)


def _analyze_tile_graph(kernel: KernelOp) -> KernelInfo:
    """Classify a tile-graph kernel's values; reject shapes the tile graph cannot express."""
    ops = list(kernel.body.block.ops)
    term = ops[-1]
    assert isinstance(term, YieldOp)
    body = ops[:-1]
    if not body:
        raise CompileError(f"kernel @{kernel.sym_name.data} is empty")
    matmul = body[0] if isinstance(body[0], MatmulOp) else None
    values = [v for op in body for v in (*op.operands, *op.results)]
    full = rows_cols(matmul.result) if matmul else max(
        (rows_cols(v) for v in values), key=math.prod)
    info = KernelInfo(kernel, matmul, body[1:] if matmul else body, list(term.values), full)
    if not info.outputs:
        raise CompileError(f"kernel @{kernel.sym_name.data} has no result")
    if matmul is not None and len(matmul.result.type.get_shape()) != 2:
        raise CompileError(f"{describe(matmul)}: only 2-D matmuls are lowered so far")
    for op in body:
        if matmul is not None and op is matmul:
            info.kinds[matmul.result] = Kind.FULL
            for v in ([matmul.bias] if matmul.bias is not None else []):
                info.kinds[v] = Kind.ROW
            continue
        op_kind(op)  # rejects ops that are not tile ops
        for v in (*op.operands, *op.results):
            kind = classify(v, full)
            if kind is None:
                raise CompileError(
                    f"{describe(op)}: a {list(v.type.get_shape())} operand does not fit the "  # type: ignore[attr-defined]
                    f"kernel's {full[0]}x{full[1]} row block (only full tensors, one row or "
                    "one column of it broadcast)")
            info.kinds[v] = kind
    for arg in kernel.body.block.args:
        info.kinds.setdefault(arg, classify(arg, full) or Kind.FULL)
    return info


def reshape_root(value: SSAValue) -> SSAValue:
    """The value `value` views through reshapes (which alias their operand)."""
    while isinstance(value.owner, ReshapeOp):
        value = value.owner.input
    return value


def kept_in_lx(value: SSAValue) -> bool:
    """Whether `value` is a kernel result kept in its cores' LX for its one reader, which
    runs next on the same split (note 61): its index is in the kernel's (or, once lowered,
    its launch's) `spyre.lx_results`."""
    value = reshape_root(value)
    if not isinstance(value, OpResult):
        return False
    kept = plan.LX_RESULTS.get(value.owner)  # a kernel, or its launch once lowered
    return kept is not None and value.index in kept


def read_split(kernel: KernelOp) -> Split:
    """The kernel's `grid` as a `Split`; a CompileError if spyre-partition-cores has not run."""
    grid = plan.grid(kernel)
    if grid is None:
        raise CompileError(f"kernel @{kernel.sym_name.data} has no grid; run "
                           "spyre-partition-cores first")
    return Split(*grid)


def read_tiling(kernel: KernelOp) -> Tiling:
    """The kernel's `tile`, `resident`, `share` and `tail` as a `Tiling`; a CompileError if
    spyre-tile has not run."""
    tile = plan.TILE.get(kernel)
    if tile is None:
        raise CompileError(f"kernel @{kernel.sym_name.data} has no tile; run spyre-tile first")
    tm, tn, tk = tile
    return Tiling(tm, tn, tk, plan.RESIDENT.get(kernel) or "", plan.ring_shared(kernel),
                  plan.TAIL.get(kernel) or 1)
