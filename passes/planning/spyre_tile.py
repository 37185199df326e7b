"""spyre-tile: per-core tile shapes and matmul loop orders that fit LX with double buffering.

Expects: kernels with a `grid` (after spyre-partition-cores). Guarantees: every kernel has
`tile = [tm, tn, tk]` in elements: tm divides the core's rows, tn a whole number of
128-byte sticks dividing the core's columns, tk whole sticks dividing the padded K (0 when
there is no matmul), and the LX footprint of every streamed buffer doubled for ping-pong
(A, B, accumulator, output and epilogue operand tiles) fits the usable LX; a block the core
loads only once needs no second slot. A matmul kernel also gets `resident`, the operand kept
in LX while the other streams (`costmodel.Tiling`): "a" (the tm x K row block of A over the
column loop), "b" (the K x tn column block of B over the row loop) or "acc" (K blocked
innermost, the f32 accumulator resident). Among all (tile, order) pairs the one with the
fewest predicted cycles wins, then the fewest off-chip bytes; the ledger lists the best of
every other order with its cycles, bytes and LX. An attention kernel's tile is
[query rows tq, padded value width, key rows]: the head's whole K and V stay in LX across
its query tiles, and the budget check includes them; a data-movement kernel's is
[rows of a run, padded width, 0]. Recorded in `spyre.tiling` with the LX bytes used. A
split matmul or attention kernel may also get `share = "ring"` (on the kernel and in
`spyre.tiling`): the operand tiles several cores load are read once and forwarded over
the ring (note 38), chosen like the loop order, by predicted cycles. A K-blocked matmul
whose cores have several output tiles may get `store_pieces` in `spyre.tiling`: its output
tiles are stored in that many row pieces, paced over the next tile's K loop, when the cost
model predicts a whole-tile store would stall the PT (note 54). A matmul whose A block is
resident in K slices may get `tail = N`: the last column tile of each row block is computed
in N row pieces with its B block resident, so each piece is stored while the next one is
computed (note 57); chosen by predicted cycles with `costmodel.TAIL_MARGIN`. A `tile`
already on a kernel is a user override: it is checked and kept (with its `resident`,
`share` and `tail`).

    spyre.kernel "k0"(...) {grid = [8, 4]}                  // before
    spyre.kernel "k0"(...) {grid = [8, 4], tile = [8, 64, 256], resident = "b",
                            spyre.tiling = {...}}               // after
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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
from xdsl.passes import ModulePass

from spyrec.costmodel import (
    MIN_TAIL_K_STEPS,
    RESIDENCY_NAMES,
    AttentionShape,
    KernelShape,
    Prediction,
    Shape,
    Split,
    Tiling,
    candidate_tilings,
    group_cores,
    lx_footprint,
    matmul_loads,
    padded_cols,
    predict,
    ranked_tilings,
    store_pieces,
    store_stall_cycles,
    tail_rows,
)
from spyrec.diagnostics import CompileError
from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.spyre import KernelOp
from spyrec.passes.planning.kernel_analysis import KernelInfo, analyze, read_split, read_tiling
from spyrec.passes.planning.lx_need import tile_graph_lx
from spyrec.target import SpyreTarget

LEDGER_ALTERNATIVES = 3


def legacy_resident(shape: Shape, tiling: Tiling, target: SpyreTarget) -> str:
    """The loop order of a `tile` set without `resident`: A kept when K fits one tile."""
    if not isinstance(shape, KernelShape) or not shape.k:
        return ""
    return "a" if tiling.tk == padded_cols(shape.k, shape.in_itemsize, target) else "acc"


def describe(pred: Prediction, tiling: Tiling) -> str:
    """One ledger line: tile, loop order, predicted cycles, off-chip bytes and LX."""
    order = f" resident {tiling.resident}" if tiling.resident else ""
    order += " ring-shared" if tiling.share else ""
    order += f" tail {tiling.tail}" if tiling.tail > 1 else ""
    return (f"{tiling.tm}x{tiling.tn}x{tiling.tk}{order}: {pred.cycles:.0f} cycles, "
            f"{pred.offchip_bytes} B off chip, {pred.lx_bytes} B LX")


def _check_override(kernel: KernelOp, shape: Shape, split: Split,
                    target: SpyreTarget, buffers: int) -> None:
    """A `tile` already on the kernel is the user's decision: keep it if it is legal."""
    tiling = read_tiling(kernel)
    if not tiling.resident:
        tiling = Tiling(tiling.tm, tiling.tn, tiling.tk, legacy_resident(shape, tiling, target),
                        tiling.share)
    if tiling not in candidate_tilings(shape, split, target, buffers):
        raise CompileError(
            f"kernel @{kernel.sym_name.data}: tile [{tiling.tm}, {tiling.tn}, {tiling.tk}] must "
            f"{shape.tile_rule}, and fit {target.lx_usable_bytes} B of LX with double buffering "
            f"(it needs {lx_footprint(shape, tiling, split, buffers, target)} B)"
            + ("; ring sharing needs a matmul split over more than one core"
               if tiling.share else "")
            + (f"; a tail of {tiling.tail} row pieces needs resident = \"a\" with tk < K, at "
               f"least {MIN_TAIL_K_STEPS} K steps, and pieces of at least 16 rows, an even "
               "count, whose K step outlasts their B slice's load"
               if tiling.tail > 1 else ""))
    if tiling.resident:
        plan.RESIDENT.set(kernel, tiling.resident)
    plan.TILING.set(kernel, {
        "choice": StringAttr(f"{tiling.tm}x{tiling.tn}x{tiling.tk}"),
        "reason": StringAttr("set by the user"),
        "lx_bytes": IntegerAttr(lx_footprint(shape, tiling, split, buffers, target), i64),
        **({"share": StringAttr("ring")} if tiling.share else {})})


def placed_lx(kernel: KernelOp, tiling: Tiling, buffers: int, target: SpyreTarget) -> int:
    """The LX bytes spyre-place-memory will give a tile-graph kernel with `tiling`
    (`lx_need.tile_graph_lx`, note 69): the cost model's footprint bounds the live
    tile-graph values by count, while the allocator reuses a dead value's slots only for a
    value of the same geometry, so a wide tile graph (a layer norm over 4096 columns) can
    need more. 0 for other kernels, whose footprint is the allocator's."""
    info = analyze(kernel)
    if not isinstance(info, KernelInfo):
        return 0
    return tile_graph_lx(info, tiling, buffers, target, read_split(kernel))


def _alternatives(options: list[tuple[Prediction, Tiling]]) -> list[tuple[Prediction, Tiling]]:
    """The runners-up for the ledger: the best tiling of every other loop order first, then
    the next best tilings overall."""
    chosen = options[0][1]
    picked: list[tuple[Prediction, Tiling]] = []
    seen = {chosen.resident}
    for pred, tiling in options[1:]:
        if tiling.resident not in seen:
            seen.add(tiling.resident)
            picked.append((pred, tiling))
    for option in options[1:]:
        if len(picked) >= LEDGER_ALTERNATIVES:
            break
        if option not in picked:
            picked.append(option)
    return picked


def _sharing_reason(shape: Shape, split: Split, pred: Prediction, tiling: Tiling,
                    options: list[tuple[Prediction, Tiling]]) -> str:
    """The ledger's words on ring sharing: what the chosen tiling shares and what the best
    tiling of the other kind would cost."""
    other = next(((p, t) for p, t in options if t.share != tiling.share), None)
    if other is None and not tiling.share:
        return ""  # one core, or sharing switched off
    if tiling.share and isinstance(shape, AttentionShape):
        group = group_cores(shape, split)
        sharers = " and ".join(
            ([f"the {split.gn} cores of its grid row"] if split.gn > 1 else [])
            + ([f"the {group} cores whose query heads read it"] if group > 1 else []))
        text = (f"; K and V of each head shared over the ring by {sharers} (ring "
                f"{pred.ring_cycles:.0f} cycles per core)")
    elif tiling.share:
        text = (f"; A tiles shared over the ring by the {split.gn} cores of a grid row, B "
                f"tiles by the {split.gm} of a grid column (ring {pred.ring_cycles:.0f} "
                "cycles per core)")
    else:
        text = "; operands read from LPDDR by every core"
    if other is not None:
        text += (f"; best {'shared' if other[1].share else 'unshared'}: {describe(*other)}")
    return text


def _store_decision(shape: Shape, split: Split, pred: Prediction, tiling: Tiling,
                    target: SpyreTarget, buffers: int) -> tuple[int, str]:
    """How many row pieces the output tile is stored in (note 54), and the ledger's words:
    pieces paced one per K step of the next tile when a whole-tile store would stall the
    PT (`costmodel.store_stall_cycles`), else one store."""
    pieces = store_pieces(shape, split, tiling, target, buffers)
    if pieces == 1 or not isinstance(shape, KernelShape):
        return 1, ""
    stall = store_stall_cycles(shape, split, tiling, target)
    if stall <= 0:
        return 1, ""
    boundaries = matmul_loads(shape, split, tiling, target).tiles - 1
    return pieces, (f"; output tiles stored in {pieces} pieces of {tiling.tm // pieces} "
                    f"rows, one per K step of the next tile (stored whole: "
                    f"{pred.cycles + stall:.0f} cycles, the PT waiting {stall / boundaries:.0f} "
                    f"cycles at each of {boundaries} tile boundaries)")


def _tail_reason(shape: Shape, split: Split, pred: Prediction, tiling: Tiling,
                 target: SpyreTarget, buffers: int) -> str:
    """The ledger's words on a tail (note 57): its pieces, and the same tiling without it."""
    if tiling.tail <= 1:
        return ""
    whole = predict(shape, split, replace(tiling, tail=1), target, buffers)
    rows, last = tail_rows(tiling.tm, tiling.tail)
    return (f"; the last column tile in {tiling.tail} row pieces ({rows} rows, the last "
            f"{last}), its B block resident, so the drain is the last piece's store (in one "
            f"piece: {whole.cycles:.0f} cycles)")


@dataclass(frozen=True)
class SpyreTile(ModulePass):
    """Choose each kernel's per-core tile shape and matmul loop order by predicted cycles
    under the LX budget."""

    name = "spyre-tile"

    # Each option, when given, overrides the module's record (`spyre.options`, written by
    # spyre-set-options) for this pass alone; unset, the record decides.

    double_buffer: bool | None = None
    """Give every streamed buffer two LX slots (ping-pong); false: one, nothing overlaps."""

    resident: str | None = None
    """Force every matmul kernel's loop order ("a", "b" or "acc"); "": the cheapest."""

    share: str | None = None
    """Force ring sharing of split matmuls' operand tiles ("ring") or none ("none"); "":
    whichever the cost model predicts faster (note 38)."""

    tail: int | None = None
    """Force the last column tile of K-sliced A blocks into N row pieces where legal (N >=
    2), or never (1); 0: whichever the cost model predicts faster (note 57)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = plan.target_of(op)
        given = plan.options_of(op).override(double_buffer=self.double_buffer,
                                             resident=self.resident, share=self.share,
                                             tail=self.tail)
        buffers = given.buffers
        for kernel in [o for o in op.walk() if isinstance(o, KernelOp)]:
            shape = analyze(kernel).shape()
            split = read_split(kernel)
            if plan.TILE.get(kernel) is not None:
                _check_override(kernel, shape, split, target, buffers)
                continue
            options = ranked_tilings(shape, split, target, buffers, given.resident,
                                     given.share, given.tail)
            placed = next((i for i, (_, t) in enumerate(options)
                           if placed_lx(kernel, t, buffers, target) <= target.lx_usable_bytes),
                          None)
            if placed is None:
                raise CompileError(
                    f"kernel @{kernel.sym_name.data}: no tiling of its {split.gm}x{split.gn} "
                    f"split fits {target.lx_usable_bytes} B of LX per core")
            options = options[placed:]
            pred, tiling = options[0]
            reason = (f"fewest predicted cycles of {len(options) + placed} tilings that fit "
                      f"LX; bound by {pred.bound}")
            if placed:
                reason += (f"; the {placed} faster ones need more than the LX budget once "
                           "their tile-graph values are placed")
            if tiling.resident:
                reason += f"; {RESIDENCY_NAMES[tiling.resident]}"
            reason += _sharing_reason(shape, split, pred, tiling, options)
            reason += _tail_reason(shape, split, pred, tiling, target, buffers)
            pieces, store_reason = _store_decision(shape, split, pred, tiling, target, buffers)
            reason += store_reason
            _write_tiling(kernel, tiling)
            if pieces > 1:
                plan.STORE_PIECES.set(kernel, pieces)
            plan.TILING.set(kernel, {
                "choice": StringAttr(f"{tiling.tm}x{tiling.tn}x{tiling.tk}"),
                "reason": StringAttr(reason),
                "lx_bytes": IntegerAttr(pred.lx_bytes, i64),
                "lx_budget": IntegerAttr(target.lx_usable_bytes, i64),
                "predicted_cycles": FloatAttr(round(pred.cycles, 1), f64),
                "offchip_bytes": IntegerAttr(pred.offchip_bytes, i64),
                "alternatives": ArrayAttr([StringAttr(describe(p, t))
                                           for p, t in _alternatives(options)]),
                **({"share": StringAttr("ring")} if tiling.share else {}),
                **({"store_pieces": IntegerAttr(pieces, i64)} if pieces > 1 else {}),
                **({"tail": IntegerAttr(tiling.tail, i64)} if tiling.tail > 1 else {}),
            })


def _write_tiling(kernel: KernelOp, tiling: Tiling) -> None:
    """The decisions of `tiling` on the kernel: `tile`, and `resident`, `share = "ring"`
    and `tail` when they apply."""
    plan.TILE.set(kernel, (tiling.tm, tiling.tn, tiling.tk))
    if tiling.resident:
        plan.RESIDENT.set(kernel, tiling.resident)
    if tiling.share:
        plan.SHARE.set(kernel, "ring")
    if tiling.tail > 1:
        plan.TAIL.set(kernel, tiling.tail)
