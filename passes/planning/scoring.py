"""The planning stage's one pricing of a kernel: every legal core split of its shape with
its best tiling, under the user's options.

spyre-fuse prices the kernels it weighs (is a join faster than two kernels?),
spyre-partition-cores picks each kernel's split, and both ask `scored_splits` with the
module's `PlanningOptions` (`spyre.options`), so a join is priced as the kernel will be
planned; spyre-tile ranks the tilings of the chosen split with the same cost model
(`spyrec.costmodel`) and the same options.
"""

from __future__ import annotations

import functools

from spyrec.costmodel import (
    KernelShape,
    Prediction,
    Shape,
    Split,
    Tiling,
    best_tiling,
    candidate_splits,
    ranking_cycles,
)
from spyrec.dialects.spyre_plan import PlanningOptions
from spyrec.progress import report as report_progress
from spyrec.target import SpyreTarget

Scored = tuple[float, Split, Prediction, Tiling]
"""Predicted cycles, the split, the cost model's prediction and the split's best tiling."""


def splits_rows(shape: Shape, split: Split) -> bool:
    """Whether `split` divides the reduced rows of `shape` over a grid row (note 59)."""
    return isinstance(shape, KernelShape) and shape.reduce and split.gn > 1


@functools.lru_cache(maxsize=1024)
def scored_splits(shape: Shape, target: SpyreTarget, options: PlanningOptions,
                  only: frozenset[Split] | None = None) -> tuple[Scored, ...]:
    """Every legal split of `shape` with its best tiling (and matmul loop order) under
    `options`: fewest cycles first (`costmodel.ranking_cycles`), then fewest off-chip bytes,
    then cores; `only`: those splits alone. No split of a reduced row without
    `options.ring_reduce`. A pure function of its arguments, remembered: the layers of a
    stack, and spyre-fuse's candidates and spyre-partition-cores' kernels, share it."""
    scored: list[Scored] = []
    splits = candidate_splits(shape, target)
    for done, split in enumerate(splits):
        report_progress("core splits weighed", done, len(splits))
        if (not options.ring_reduce and splits_rows(shape, split)) or (only is not None \
                and split not in only):
            continue
        best = best_tiling(shape, split, target, options.buffers, options.resident,
                           options.share, options.tail)
        if best is not None:
            scored.append((best[1].cycles, split, best[1], best[0]))
    if options.tail > 1 and any(s[3].tail == options.tail for s in scored):
        scored = [s for s in scored if s[3].tail == options.tail]  # forced: where legal
    scored.sort(key=lambda s: (ranking_cycles(shape, s[3], s[2], target), s[2].offchip_bytes,
                               s[1].cores))
    return tuple(scored)
