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

Neighbouring kernels are then scored jointly (note 61). When a tile-graph kernel's full
result has one reader, the next kernel, which reads it elementwise (a full operand of the
same shape: the SwiGLU product reading silu(gate(x))) or as its matmul's A (with whole rows
on each core), the tensor may stay in the cores' LX: the producer stores none of it, the
consumer loads none of it, both take one split, and each core's slice is taken from both
kernels' LX budget. Chains of such pairs (gate -> up -> down) are decided by a dynamic
program over the kernels' splits and the tensors kept, against every kernel on its own
best split; producers record what they keep in `spyre.lx_results`, and the ledgers of the
kernels whose choice changed say what was kept and what the chain saved.

    %r = spyre.kernel "k0"(...)                 // before
    %r = spyre.kernel "k0"(...) {grid = [8, 4], spyre.partition = {...}}   // after
    %g = spyre.kernel "k0"(...) {grid = [8, 4], spyre.lx_results = array<i64: 0>}  // kept
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TypeAlias

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    f64,
    i64,
)
from xdsl.ir import SSAValue, Use
from xdsl.passes import ModulePass

from spyrec.costmodel import (
    KernelShape,
    Prediction,
    Shape,
    Split,
    Tiling,
    candidate_splits,
    core_span_bytes,
    core_spans,
    even_splits,
    padded_cols,
    ranking_cycles,
)
from spyrec.diagnostics import CompileError
from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.spyre import KernelOp, describe
from spyrec.passes.graph.spyre_stickify import DEVICE_ITEMSIZE, layout_of
from spyrec.passes.planning.kernel_analysis import (
    KernelInfo,
    Kind,
    analyze,
    is_row_view,
    padded_rows_cols,
    read_split,
)
from spyrec.passes.planning.scoring import Scored, scored_splits, splits_rows
from spyrec.target import MIB, SpyreTarget

LEDGER_ALTERNATIVES = 4
# a chain's options per kernel: (ranking cycles, prediction, tiling) per split; a path:
# (split, kept_out, prediction) per kernel
_Option: TypeAlias = tuple[float, Prediction, Tiling]
_Path: TypeAlias = list[tuple[Split, bool, Prediction]]


def _check_override(kernel: KernelOp, shape: Shape, target: SpyreTarget) -> None:
    """A `grid` already on the kernel is the user's decision: keep it if it is legal."""
    split = read_split(kernel)
    if split in even_splits(shape, target) and split not in candidate_splits(shape, target):
        raise CompileError(
            f"kernel @{kernel.sym_name.data}: grid [{split.gm}, {split.gn}] leaves a core "
            f"spanning {core_span_bytes(shape, split) / MIB:.1f} MiB of one tensor, beyond "
            f"the {target.per_core_span_bytes // MIB} MiB a core may address in one tensor; "
            "use more cores along the rows")
    if split not in candidate_splits(shape, target):
        raise CompileError(
            f"kernel @{kernel.sym_name.data}: grid [{split.gm}, {split.gn}] must "
            f"{shape.split_rule} and use at most {target.num_cores} cores")
    plan.PARTITION.set(kernel, {"choice": StringAttr(f"{split.gm}x{split.gn}"),
                                "reason": StringAttr("set by the user")})


_SPAN_ADVICE = {
    "rows": "compute it on fewer rows at a time (a smaller batch or sequence, or the rows "
            "in several pieces)",
    "weight": "split the matmul's output features into pieces whose weight stays within "
              "the span (several Linear layers whose outputs are used as separate outputs, "
              "or the output features sharded over cards)",
    "keys": "split the heads or the key length into pieces",
}


def _span_refusal(kernel: KernelOp, shape: Shape, target: SpyreTarget) -> str:
    """Why no split of `kernel` keeps each core within the per-core span rule, and what to
    do about the tensor that stays widest."""
    best = min(even_splits(shape, target), key=lambda s: core_span_bytes(shape, s))
    spans = core_spans(shape, best)
    what = max(spans, key=lambda k: spans[k])
    named = [o for o in kernel.walk() if "fx_node" in o.attributes]
    where = f" ({describe(named[-1])})" if named else ""
    return (f"kernel @{kernel.sym_name.data}{where}: every split of {shape.work()} over at "
            f"most {target.num_cores} cores leaves a core spanning {spans[what] / MIB:.1f} MiB "
            f"of one tensor ({_SPAN_KIND[what]}), beyond the "
            f"{target.per_core_span_bytes // MIB} MiB a core may address in one tensor; "
            f"{_SPAN_ADVICE[what]}")


_SPAN_KIND = {"rows": "its rows", "weight": "the matmul's B, down all its K rows",
              "keys": "the keys and values of its heads"}


@dataclass(frozen=True)
class SpyrePartitionCores(ModulePass):
    """Choose the core split of every kernel by predicted cycles."""

    name = "spyre-partition-cores"

    double_buffer: bool | None = None
    """Score splits with ping-pong buffers (as spyre-tile will tile them); false: one slot."""

    resident: str | None = None
    """Score matmul splits with this loop order only ("a", "b" or "acc"), as spyre-tile
    will be told to use it; "": the cheapest."""

    share: str | None = None
    """Score matmul splits with ring sharing of their operand tiles ("ring") or without
    ("none"), as spyre-tile will be told; "": whichever is faster (note 38)."""

    tail: int | None = None
    """Score matmul splits as spyre-tile will be told to tile them: 1 without tails, N >= 2
    with N-piece tails where legal (note 57); 0: whichever is faster."""

    ring_reduce: bool | None = None
    """Offer splits of a reduced row, its cores' partial sums combined by ring.reduce (note
    59); false: every reduced row stays whole on one core."""

    keep_in_lx: bool | None = None
    """Score chains of kernels, each reading the previous one's result (elementwise or as
    its matmul's A) and nothing else reading it, on common splits with those results kept
    in the cores' LX, and keep them there when that is predicted faster than every kernel's
    own best split with the tensors through LPDDR (note 61); false: every kernel's result
    goes to LPDDR."""

    def options(self, module: ModuleOp) -> plan.PlanningOptions:
        """The module's options (`spyre.options`), with this pass's own where given."""
        return plan.options_of(module).override(
            double_buffer=self.double_buffer, resident=self.resident, share=self.share,
            tail=self.tail, ring_reduce=self.ring_reduce, keep_in_lx=self.keep_in_lx)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = plan.target_of(op)
        options = self.options(op)
        kernels = [o for o in op.walk() if isinstance(o, KernelOp)]
        chosen: dict[KernelOp, Scored] = {}
        for kernel in kernels:
            shape = analyze(kernel).shape()
            if plan.grid(kernel) is not None:
                _check_override(kernel, shape, target)
                continue
            # the scores depend on the kernel's shape alone: the layers of a stack share them
            scored = scored_splits(shape, target, options)
            if not scored and not candidate_splits(shape, target):
                raise CompileError(_span_refusal(kernel, shape, target))
            if not scored:
                raise CompileError(
                    f"kernel @{kernel.sym_name.data}: no split of {shape.work()} "
                    f"fits {target.lx_usable_bytes} B of LX per core; reduce the sequence "
                    "length or the head dim of this kernel"
                )
            cycles, split, pred, _ = scored[0]
            chosen[kernel] = scored[0]
            plan.GRID.set(kernel, (split.gm, split.gn))
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
            plan.PARTITION.set(kernel, {
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
        if options.keep_in_lx and plan.symbolic_signature(op) is not None:
            op.attributes["spyre.lx_kept"] = StringAttr(
                "none: the program has symbolic sizes, and their trip-count guards (note 49) "
                "follow data through LPDDR, not through LX kept between launches (note 61)")
        elif options.keep_in_lx:
            for chain in lx_chains(lx_pairs(kernels, target)):
                if all(k in chosen for k in chain.kernels):  # no grid set by the user
                    self._keep(chain, chosen, target, options)

    def _keep(self, chain: LxChain, chosen: dict[KernelOp, Scored],
              target: SpyreTarget, given: plan.PlanningOptions) -> None:
        """Choose which of a chain's tensors to keep in LX and every kernel's split, for
        the fewest predicted cycles of the whole chain (ranked as splits are,
        `costmodel.ranking_cycles`): a dynamic program over the kernels whose state is a
        kernel's split and whether its result is kept. A kept tensor's two kernels share a
        split (whole rows when it is read as a matmul's A), its store and loads are gone,
        and each core's slice of it is taken from both kernels' LX budget. Keeping nothing,
        every kernel on its own best split, is one of the paths."""
        kernels, pairs = chain.kernels, chain.pairs
        base = [analyze(k).shape() for k in kernels]
        # Keeping a tensor saves at most its store and load; a split a kernel's own scores
        # put further behind its best than twice all the chain's tensors' channel time (the
        # slack covers descriptors, fill and drain) cannot be on a path that beats apart
        saving = 2 * sum(2 * math.prod(p.geometry) for p in pairs) \
            / target.lpddr_bytes_per_cycle
        near = []
        for shape in base:
            ranked = [(ranking_cycles(shape, t, p, target), s)
                      for _, s, p, t in scored_splits(shape, target, given)]
            near.append(frozenset(s for r, s in ranked if r <= ranked[0][0] + saving))

        def variant(i: int, kept_in: bool, kept_out: bool) -> KernelShape:
            shape = base[i]
            assert isinstance(shape, KernelShape)
            if kept_in and pairs[i - 1].lhs:
                shape = replace(shape, lx_lhs=True)
            elif kept_in:
                shape = replace(shape, lx_operands=shape.lx_operands + 1)
            if kept_out:
                shape = replace(shape, lx_outputs=shape.lx_outputs + 1)
            return shape

        def options(i: int, kept_in: bool, kept_out: bool) -> dict[Split, _Option]:
            shape = variant(i, kept_in, kept_out)
            found = {s: (ranking_cycles(shape, t, p, target), p, t)
                     for _, s, p, t in scored_splits(shape, target, given, near[i])}
            if kept_out and pairs[i].lhs:  # whole rows on each core, for the next matmul's A
                found = {s: v for s, v in found.items() if s.gn == 1}
            return found

        # best[(split, kept_out)] = (chain rank so far, the path so far)
        best: dict[tuple[Split, bool], tuple[float, _Path]] = {}
        last = len(kernels) - 1
        for i in range(len(kernels)):
            nxt: dict[tuple[Split, bool], tuple[float, _Path]] = {}
            outs = (False,) if i == last else (False, True)
            for kept_out in outs:
                if i == 0:
                    for s, (r, p, _) in options(0, False, kept_out).items():
                        nxt[(s, kept_out)] = (r, [(s, kept_out, p)])
                    continue
                free = min(((r, path) for (s, k), (r, path) in best.items() if not k),
                           key=lambda e: e[0], default=None)
                if free is not None:
                    for s, (r, p, _) in options(i, False, kept_out).items():
                        total = free[0] + r
                        if (s, kept_out) not in nxt or total < nxt[(s, kept_out)][0]:
                            nxt[(s, kept_out)] = (total, free[1] + [(s, kept_out, p)])
                if kept_out and not chain.in_place(i):
                    continue  # two tensors kept around one kernel must share its slice
                here = options(i, True, kept_out)
                for (s, k), (r0, path) in best.items():
                    if k and s in here:
                        total = r0 + here[s][0]
                        if (s, kept_out) not in nxt or total < nxt[(s, kept_out)][0]:
                            nxt[(s, kept_out)] = (total, [*path, (s, kept_out, here[s][1])])
            best = nxt
        rank, path = min(best.values(), key=lambda e: e[0])
        apart = sum(ranking_cycles(shape, chosen[k][3], chosen[k][2], target)
                    for k, shape in zip(kernels, base))
        if rank >= apart or not any(kept for _, kept, _ in path):
            return
        kept = [(i, pair) for i, (pair, (_, k, _)) in enumerate(zip(pairs, path)) if k]
        for _, pair in kept:
            plan.LX_RESULTS.set(pair.producer, (pair.index,))
        names = ", ".join(
            f"%{pair.producer.results[pair.index].name_hint or pair.index} "
            f"(@{pair.producer.sym_name.data} -> @{pair.consumer.sym_name.data}, "
            f"{variant(i, False, True).lx_slice_bytes(path[i][0])} B a core)"
            for i, pair in kept)
        words = (f"kept in LX: {names}; {sum(p.cycles for _, _, p in path):.0f} predicted "
                 f"cycles and {sum(p.offchip_bytes for _, _, p in path)} B off chip for "
                 + ", ".join(f"@{k.sym_name.data}" for k in kernels)
                 + f", against {sum(chosen[k][2].cycles for k in kernels):.0f} and "
                 f"{sum(chosen[k][2].offchip_bytes for k in kernels)} B on their own best "
                 "splits with every tensor through LPDDR")
        for i, (kernel, (split, kept_out, pred)) in enumerate(zip(kernels, path)):
            # what spyre-tile will see, from the attributes, is what was scored
            assert analyze(kernel).shape() == variant(i, i > 0 and path[i - 1][1], kept_out)
            if not (kept_out or (i > 0 and path[i - 1][1])) and split == chosen[kernel][1]:
                continue  # neither keeps nor reads a kept tensor, and its own split stands
            plan.GRID.set(kernel, (split.gm, split.gn))
            ledger = dict(plan.PARTITION.get(kernel) or {})  # amended: it explains the new split
            alone = ", ".join(v.data for v in (ledger["choice"], ledger["reason"])
                              if isinstance(v, StringAttr))
            ledger.update({
                "choice": StringAttr(f"{split.gm}x{split.gn}"),
                "reason": StringAttr(f"{words}; on its own: {alone}"),
                "predicted_cycles": FloatAttr(round(pred.cycles, 1), f64),
                "offchip_bytes": IntegerAttr(pred.offchip_bytes, i64),
                "lx_kept": StringAttr(words)})
            plan.PARTITION.set(kernel, ledger)


def next_kernel(kernel: KernelOp) -> KernelOp | None:
    """The kernel launched after `kernel` (views and parameters between them move nothing)."""
    op = kernel.next_op
    while op is not None and not isinstance(op, KernelOp):
        op = op.next_op
    return op


@dataclass(frozen=True)
class LxPair:
    """A result the next kernel alone reads, which could stay in LX between them (note 61):
    elementwise (a full operand of the consumer's epilogue), or as the consumer's matmul A
    (`lhs`: each core needs whole rows of it, so both kernels split rows only)."""

    producer: KernelOp
    index: int
    consumer: KernelOp
    lhs: bool
    geometry: tuple[int, int, int]  # the tensor's padded rows, columns and element bytes


@dataclass(frozen=True)
class LxChain:
    """Consecutive pairs, each one's consumer the next one's producer."""

    pairs: list[LxPair]

    @property
    def kernels(self) -> list[KernelOp]:
        return [self.pairs[0].producer] + [p.consumer for p in self.pairs]

    def in_place(self, i: int) -> bool:
        """Whether kernel i (0 < i < len(kernels) - 1) may keep the tensor it reads and the
        one it writes: only in the same slice (same geometry, so tile (r, c) of the result
        overwrites tile (r, c) of the operand after reading it)."""
        return self.pairs[i - 1].geometry == self.pairs[i].geometry \
            and not self.pairs[i - 1].lhs


def lx_chains(pairs: list[LxPair]) -> list[LxChain]:
    chains: list[list[LxPair]] = []
    for pair in pairs:
        if chains and chains[-1][-1].consumer is pair.producer:
            chains[-1].append(pair)
        else:
            chains.append([pair])
    return [LxChain(c) for c in chains]


def _uses_through_row_views(value: SSAValue) -> list[Use]:
    """The distinct uses of `value`, through reshapes that keep its rows and columns (views
    of the same stored tensor); a reshape with other uses counts as a use itself."""
    uses: list[Use] = []
    for use in {(u.operation, u.index): u for u in value.uses}.values():
        if is_row_view(use.operation):
            uses.extend(_uses_through_row_views(use.operation.results[0]))
        else:
            uses.append(use)
    return uses


def lx_pairs(kernels: list[KernelOp], target: SpyreTarget) -> list[LxPair]:
    """Every kernel and the next one that could keep a tensor in LX between them: a full
    result of a tile-graph kernel whose one reader is the next kernel, a tile-graph kernel
    that reads it elementwise (a full operand of the same output shape) or as its matmul's
    A operand, with the tensor's padded width the producer's output width (and, as A, the
    consumer's padded K), its element size the kernels' (note 61)."""
    pairs: list[LxPair] = []
    for producer in kernels:
        consumer = next_kernel(producer)
        if consumer is None:
            continue
        made, used = analyze(producer), analyze(consumer)
        if not isinstance(made, KernelInfo) or not isinstance(used, KernelInfo):
            continue
        shapes = (made.shape(), used.shape())
        for inner, value in zip(made.outputs, producer.results):
            uses = _uses_through_row_views(value)
            if len(uses) != 1 or uses[0].operation is not consumer \
                    or made.kinds.get(inner) is not Kind.FULL:
                continue
            arg = consumer.body.block.args[uses[0].index]
            layout = layout_of(value)
            rows, cols = padded_rows_cols(layout.padded_shape)
            size = DEVICE_ITEMSIZE[layout.device_dtype]
            lhs = used.matmul is not None and arg is used.matmul.lhs \
                and all(u.operation is used.matmul for u in arg.uses)
            if lhs:
                fits = (rows == shapes[1].rows and cols == padded_cols(
                    shapes[1].k, shapes[1].in_itemsize, target)
                    and size == shapes[1].in_itemsize)
            else:
                fits = (used.kinds.get(arg) is Kind.FULL
                        and any(u.operation is not used.matmul for u in arg.uses)
                        and made.full == used.full
                        and (rows, cols) == (shapes[1].rows,
                                             shapes[1].col_sticks * shapes[1].stick_elems)
                        and size == shapes[1].in_itemsize)
            # each core's slice is its own output block of the producer, which the cost
            # model sizes with the kernels' element sizes
            if fits and (rows, cols) == (shapes[0].rows,
                                         shapes[0].col_sticks * shapes[0].stick_elems) \
                    and size == shapes[0].out_itemsize:
                pairs.append(LxPair(producer, value.index, consumer, lhs, (rows, cols, size)))
                break
    return pairs
