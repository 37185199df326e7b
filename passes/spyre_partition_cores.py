"""spyre-partition-cores: split each kernel's work over the cores.

Expects: `spyre.kernel` ops (after spyre-fuse). Guarantees: every kernel has
`grid = [gm, gn]`: gm cores split the output rows and gn cores split the output column
sticks, gm * gn <= the target's core count, each share an equal whole number of rows and of
128-byte sticks (so no core touches another core's sticks). An attention kernel splits its
heads (batch x query heads) over gm and its query rows over gn; a data-movement kernel its
runs of rows over gm and the rows of a run over gn. A kernel that reduces its rows (a sum,
a mean, a norm) splits them over gn only when every reduction is a sum and no column is
stick padding: each core reduces its share of a row and the grid row's cores all-reduce
the partial sums with ring.reduce (note 59); a max or min keeps its rows whole (gn = 1).
The split is the one with the
fewest cycles predicted by the cost model, each split scored with its own best tiling and
matmul loop order (so a split whose replicated operand reads outgrow its parallelism loses,
and all 32 cores are used once the resident blocks keep the traffic from growing with the
core count); the choice, the reason, the off-chip bytes and the best alternatives are
recorded in `spyre.partition`. A `grid`
already on a kernel is a user override: it is checked and kept.

Neighbouring kernels are then scored jointly (note 61): when a tile-graph kernel's full
result has one reader, the next kernel, which reads it elementwise (a full operand of the
same shape: the SwiGLU product reading silu(gate(x))), the pair is scored on each split
both allow with the tensor kept in the cores' LX: the producer stores none of it, the
consumer loads none of it, and each core's slice (its rows x its column sticks) is taken
from both kernels' LX budget. If the best such split beats the two kernels' own best splits
(ranked alike), both take it and the producer records the result in `spyre.lx_results`;
the ledger of both says what was kept and what it saved.

    %r = spyre.kernel "k0"(...)                 // before
    %r = spyre.kernel "k0"(...) {grid = [8, 4], spyre.partition = {...}}   // after
    %g = spyre.kernel "k0"(...) {grid = [8, 4], spyre.lx_results = array<i64: 0>}  // kept
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    f64,
    i64,
)
from xdsl.passes import ModulePass

from spyrec.costmodel import (KernelShape, Prediction, Shape, Split, Tiling, best_tiling,
                              candidate_splits, ranking_cycles)
from spyrec.diagnostics import CompileError
from spyrec.dialects.spyre import KernelOp
from spyrec.passes.kernel_analysis import (LX_RESULTS, Kind, KernelInfo, analyze, int_array,
                                           read_split)
from spyrec.passes.ktir_builder import padded_rows_cols
from spyrec.passes.spyre_stickify import DEVICE_ITEMSIZE, layout_of
from spyrec.target import DEFAULT_TARGET, SpyreTarget

LEDGER_ALTERNATIVES = 4


def _check_override(kernel: KernelOp, shape: Shape, target: SpyreTarget) -> None:
    """A `grid` already on the kernel is the user's decision: keep it if it is legal."""
    split = read_split(kernel)
    if split not in candidate_splits(shape, target):
        raise CompileError(
            f"kernel @{kernel.sym_name.data}: grid [{split.gm}, {split.gn}] must "
            f"{shape.split_rule} and use at most {target.num_cores} cores")
    kernel.attributes["spyre.partition"] = DictionaryAttr({
        "choice": StringAttr(f"{split.gm}x{split.gn}"), "reason": StringAttr("set by the user")})


Scored = tuple[float, Split, Prediction, Tiling]


def splits_rows(shape: Shape, split: Split) -> bool:
    """Whether `split` divides the reduced rows of `shape` over a grid row (note 59)."""
    return isinstance(shape, KernelShape) and shape.reduce and split.gn > 1


@functools.lru_cache(maxsize=1024)
def scored_splits(shape: Shape, target: SpyreTarget, buffers: int = 2,
                  resident: str = "", share: str = "", tail: int = 0,
                  ring_reduce: bool = True) -> tuple[Scored, ...]:
    """`_scored`, remembered: a pure function of the shape and the options, asked by
    spyre-fuse for the kernels it weighs and again here for the kernels it formed."""
    return tuple(_scored(shape, target, buffers, resident, share, tail, ring_reduce))


def _scored(shape: Shape, target: SpyreTarget, buffers: int = 2,
            resident: str = "", share: str = "", tail: int = 0,
            ring_reduce: bool = True) -> list[Scored]:
    """Every legal split of `shape` with its best tiling (and matmul loop order): cycles,
    split, prediction, tiling; fewest cycles first (`costmodel.ranking_cycles`), then fewest
    off-chip bytes, then cores. `ring_reduce` False: no split of a reduced row."""
    scored: list[Scored] = []
    for split in candidate_splits(shape, target):
        if not ring_reduce and splits_rows(shape, split):
            continue
        best = best_tiling(shape, split, target, buffers, resident, share, tail)
        if best is not None:
            scored.append((best[1].cycles, split, best[1], best[0]))
    if tail > 1 and any(s[3].tail == tail for s in scored):  # forced: a split that has it
        scored = [s for s in scored if s[3].tail == tail]
    scored.sort(key=lambda s: (ranking_cycles(shape, s[3], s[2], target), s[2].offchip_bytes,
                               s[1].cores))
    return scored


@dataclass(frozen=True)
class SpyrePartitionCores(ModulePass):
    """Choose the core split of every kernel by predicted cycles."""

    name = "spyre-partition-cores"

    double_buffer: bool = True
    """Score splits with ping-pong buffers (as spyre-tile will tile them); false: one slot."""

    resident: str = ""
    """Score matmul splits with this loop order only ("a", "b" or "acc"), as spyre-tile
    will be told to use it; "": the cheapest."""

    share: str = ""
    """Score matmul splits with ring sharing of their operand tiles ("ring") or without
    ("none"), as spyre-tile will be told; "": whichever is faster (note 38)."""

    tail: int = 0
    """Score matmul splits as spyre-tile will be told to tile them: 1 without tails, N >= 2
    with N-piece tails where legal (note 57); 0: whichever is faster."""

    ring_reduce: bool = True
    """Offer splits of a reduced row, its cores' partial sums combined by ring.reduce (note
    59); false: every reduced row stays whole on one core."""

    keep_in_lx: bool = True
    """Score a kernel and the next one, which alone reads its result elementwise, on a
    common split with that result kept in the cores' LX, and keep it there when that is
    predicted faster than their own best splits with the tensor through LPDDR (note 61);
    false: every kernel's result goes to LPDDR."""

    def scores(self, shape: Shape, target: SpyreTarget) -> tuple[Scored, ...]:
        return scored_splits(shape, target, 2 if self.double_buffer else 1, self.resident,
                             self.share, self.tail, self.ring_reduce)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = DEFAULT_TARGET
        kernels = [o for o in op.walk() if isinstance(o, KernelOp)]
        chosen: dict[KernelOp, Scored] = {}
        for kernel in kernels:
            shape = analyze(kernel).shape()
            if "grid" in kernel.attributes:
                _check_override(kernel, shape, target)
                continue
            # the scores depend on the kernel's shape alone: the layers of a stack share them
            scored = self.scores(shape, target)
            if not scored:
                raise CompileError(
                    f"kernel @{kernel.sym_name.data}: no split of {shape.work()} "
                    f"fits {target.lx_usable_bytes} B of LX per core; reduce the sequence "
                    "length or the head dim of this kernel"
                )
            cycles, split, pred, _ = scored[0]
            chosen[kernel] = scored[0]
            kernel.attributes["grid"] = int_array([split.gm, split.gn])
            one_core = next((c for c, s, _, _ in scored if s.cores == 1), None)
            reason = (f"fewest predicted cycles of {len(scored)} even splits of "
                      f"{shape.work()}; bound by {pred.bound}")
            if one_core and split.cores > 1:
                reason += f"; {one_core / cycles:.1f}x faster than one core"
            most = max(scored, key=lambda s: (s[1].cores, -s[0]))
            if splits_rows(shape, split):
                assert isinstance(shape, KernelShape)
                reason += (f"; each row split over {split.gn} cores, its {shape.ring_reduces} "
                           f"sum(s) combined by ring.reduce per tile")
                whole = next((c for c, s, _, _ in scored if s.gn == 1), None)
                if whole:
                    reason += f" ({whole / cycles:.1f}x faster than whole rows)"
            if most[1].cores > split.cores:
                reason += (f"; {most[1].cores} cores ({most[1].gm}x{most[1].gn}) would move "
                           f"{most[2].offchip_bytes} B off chip against {pred.offchip_bytes} B")
            kernel.attributes["spyre.partition"] = DictionaryAttr({
                "choice": StringAttr(f"{split.gm}x{split.gn}"),
                "reason": StringAttr(reason),
                "predicted_cycles": FloatAttr(round(cycles, 1), f64),
                "offchip_bytes": IntegerAttr(pred.offchip_bytes, i64),
                "alternatives": ArrayAttr([
                    StringAttr(f"{s.gm}x{s.gn}: {c:.0f} cycles, {p.offchip_bytes} B off chip"
                               f"{f' (resident {t.resident})' if t.resident else ''}"
                               f"{' (ring-shared)' if t.share else ''}")
                    for c, s, p, t in scored[1:1 + LEDGER_ALTERNATIVES]]),
            })
        if self.keep_in_lx:
            for producer, index, consumer in lx_pairs(kernels):
                if producer in chosen and consumer in chosen:  # no grid set by the user
                    self._keep(producer, index, consumer, chosen, target)

    def _keep(self, producer: KernelOp, index: int, consumer: KernelOp,
              chosen: dict[KernelOp, Scored], target: SpyreTarget) -> None:
        """Keep `producer`'s result `index` in LX for `consumer` when the pair's best common
        split, with the tensor's store and loads gone and each core's slice of it taken from
        both kernels' LX budget, is predicted faster than their own best splits (ranked as
        splits are, `costmodel.ranking_cycles`)."""
        pair = (producer, consumer)
        apart = [(analyze(k).shape(), chosen[k][3], chosen[k][2]) for k in pair]
        producer.attributes[LX_RESULTS] = DenseArrayBase.from_list(i64, [index])
        made, used = (analyze(k).shape() for k in pair)
        theirs = {s: (t, p) for _, s, p, t in self.scores(used, target)}
        joint = [(s, [(made, t, p), (used, *theirs[s])])
                 for _, s, p, t in self.scores(made, target) if s in theirs]

        def rank(options: list[tuple[Shape, Tiling, Prediction]]) -> float:
            return sum(ranking_cycles(shape, t, p, target) for shape, t, p in options)

        best = min(joint, key=lambda j: (rank(j[1]), -j[0].cores), default=None)
        if best is None or rank(best[1]) >= rank(apart):
            del producer.attributes[LX_RESULTS]
            return
        split, options = best
        value = producer.results[index]
        words = (f"%{value.name_hint or index} kept in LX between @{producer.sym_name.data} "
                 f"and @{consumer.sym_name.data} on a common {split.gm}x{split.gn} split "
                 f"({made.lx_slice_bytes(split)} B a core): "
                 f"{sum(p.cycles for _, _, p in options):.0f} predicted cycles and "
                 f"{sum(p.offchip_bytes for _, _, p in options)} B off chip for both, against "
                 f"{sum(p.cycles for _, _, p in apart):.0f} and "
                 f"{sum(p.offchip_bytes for _, _, p in apart)} B on their own best splits "
                 "with it through LPDDR")
        for kernel, (_, _, pred) in zip(pair, options):
            kernel.attributes["grid"] = int_array([split.gm, split.gn])
            ledger = dict(kernel.attributes["spyre.partition"].data)  # type: ignore[attr-defined]
            alone = f"{ledger['choice'].data}, {ledger['reason'].data}"  # type: ignore[attr-defined]
            ledger.update({
                "choice": StringAttr(f"{split.gm}x{split.gn}"),
                "reason": StringAttr(f"{words}; on its own: {alone}"),
                "predicted_cycles": FloatAttr(round(pred.cycles, 1), f64),
                "offchip_bytes": IntegerAttr(pred.offchip_bytes, i64),
                "lx_kept": StringAttr(words)})
            kernel.attributes["spyre.partition"] = DictionaryAttr(ledger)


def next_kernel(kernel: KernelOp) -> KernelOp | None:
    """The kernel launched after `kernel` (views and parameters between them move nothing)."""
    op = kernel.next_op
    while op is not None and not isinstance(op, KernelOp):
        op = op.next_op
    return op


def lx_pairs(kernels: list[KernelOp]) -> list[tuple[KernelOp, int, KernelOp]]:
    """(producer, result index, consumer): a tile-graph kernel's full result whose one
    reader is the next kernel, a tile-graph kernel of the same output shape that reads it
    elementwise in its epilogue (note 61). A kernel is in one pair at most."""
    pairs: list[tuple[KernelOp, int, KernelOp]] = []
    taken: set[KernelOp] = set()
    for producer in kernels:
        consumer = next_kernel(producer)
        if consumer is None or producer in taken or consumer in taken:
            continue
        made, used = analyze(producer), analyze(consumer)
        if not isinstance(made, KernelInfo) or not isinstance(used, KernelInfo) \
                or made.full != used.full:
            continue
        shapes = (made.shape(), used.shape())
        for inner, value in zip(made.outputs, producer.results):
            uses = list({(u.operation, u.index): u for u in value.uses}.values())
            layout = layout_of(value)
            # each core's slice is its own output block of both kernels, and the cost model
            # sizes it with their element sizes
            if len(uses) != 1 or uses[0].operation is not consumer \
                    or made.kinds.get(inner) is not Kind.FULL \
                    or any(padded_rows_cols(layout.padded_shape)
                           != (k.rows, k.col_sticks * k.stick_elems) for k in shapes) \
                    or not (DEVICE_ITEMSIZE[layout.device_dtype] == shapes[0].out_itemsize
                            == shapes[1].in_itemsize):
                continue
            arg = consumer.body.block.args[uses[0].index]
            if used.kinds.get(arg) is Kind.FULL and any(
                    u.operation is not used.matmul for u in arg.uses):
                pairs.append((producer, value.index, consumer))
                taken.update((producer, consumer))
                break
    return pairs
