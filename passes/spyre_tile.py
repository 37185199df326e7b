"""spyre-tile: per-core tile shapes that fit LX with double buffering.

Expects: kernels with a `grid` (after spyre-partition-cores). Guarantees: every kernel has
`tile = [tm, tn, tk]` in elements: tm divides the core's rows, tn a whole number of
128-byte sticks dividing the core's columns, tk whole sticks dividing the padded K (0 when
there is no matmul), and the LX footprint of every streamed buffer doubled for ping-pong
(A, B, accumulator, output and epilogue operand tiles) fits the usable LX. Among those, the
tiling with the fewest predicted cycles wins (fewer, larger DMAs; A kept resident across
the column loop when K fits one tile). An attention kernel's tile is
[query rows tq, padded value width, key rows]: the head's whole K and V stay in LX across
its query tiles, and the budget check includes them; a data-movement kernel's is
[rows of a run, padded width, 0]. Recorded in `spyre.tiling` with the LX bytes used. A
`tile` already on a kernel is a user override: it is checked and kept.

    spyre.kernel "k0"(...) {grid = [8, 4]}                  // before
    spyre.kernel "k0"(...) {grid = [8, 4], tile = [8, 64, 256], spyre.tiling = {...}}
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    f64,
    i64,
)
from xdsl.passes import ModulePass

from spyrec.costmodel import Shape, Split, candidate_tilings, lx_footprint, predict
from spyrec.diagnostics import CompileError
from spyrec.dialects.spyre import KernelOp
from spyrec.passes.kernel_analysis import analyze, int_array, read_split, read_tiling
from spyrec.target import DEFAULT_TARGET, SpyreTarget


def _check_override(kernel: KernelOp, shape: Shape, split: Split,
                    target: SpyreTarget) -> None:
    """A `tile` already on the kernel is the user's decision: keep it if it is legal."""
    tiling = read_tiling(kernel)
    if tiling not in candidate_tilings(shape, split, target):
        raise CompileError(
            f"kernel @{kernel.sym_name.data}: tile [{tiling.tm}, {tiling.tn}, {tiling.tk}] must "
            f"{shape.tile_rule}, and fit {target.lx_usable_bytes} B of LX with double buffering "
            f"(it needs {lx_footprint(shape, tiling)} B)")
    kernel.attributes["spyre.tiling"] = DictionaryAttr({
        "choice": StringAttr(f"{tiling.tm}x{tiling.tn}x{tiling.tk}"),
        "reason": StringAttr("set by the user"),
        "lx_bytes": IntegerAttr(lx_footprint(shape, tiling), i64)})


@dataclass(frozen=True)
class SpyreTile(ModulePass):
    """Choose each kernel's per-core tile shape by predicted cycles under the LX budget."""

    name = "spyre-tile"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = DEFAULT_TARGET
        for kernel in [o for o in op.walk() if isinstance(o, KernelOp)]:
            shape = analyze(kernel).shape()
            split = read_split(kernel)
            if "tile" in kernel.attributes:
                _check_override(kernel, shape, split, target)
                continue
            options = [(predict(shape, split, t, target), t)
                       for t in candidate_tilings(shape, split, target)]
            if not options:
                raise CompileError(
                    f"kernel @{kernel.sym_name.data}: no tiling of its {split.gm}x{split.gn} "
                    f"split fits {target.lx_usable_bytes} B of LX per core")
            options.sort(key=lambda o: (o[0].cycles, -(o[1].tm * o[1].tn * max(o[1].tk, 1))))
            pred, tiling = options[0]
            kernel.attributes["tile"] = int_array([tiling.tm, tiling.tn, tiling.tk])
            kernel.attributes["spyre.tiling"] = DictionaryAttr({
                "choice": StringAttr(f"{tiling.tm}x{tiling.tn}x{tiling.tk}"),
                "reason": StringAttr(
                    f"fewest predicted cycles of {len(options)} tilings that fit LX; "
                    f"bound by {pred.bound}"),
                "lx_bytes": IntegerAttr(pred.lx_bytes, i64),
                "lx_budget": IntegerAttr(target.lx_usable_bytes, i64),
                "predicted_cycles": FloatAttr(round(pred.cycles, 1), f64),
                "alternatives": ArrayAttr([
                    StringAttr(f"{t.tm}x{t.tn}x{t.tk}: {p.cycles:.0f} cycles")
                    for p, t in options[1:4]]),
            })
