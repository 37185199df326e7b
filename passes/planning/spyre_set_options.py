"""spyre-set-options: the user's compile switches, recorded once in the IR.

Expects: any module. Guarantees: the module's `spyre.options` (`spyre_plan.OPTIONS`) holds
the options it had with the ones given to this pass written over them, and only the
switches that differ from their defaults (no record at all when every switch is default:
the IR of a default compile is unchanged). spyre-fuse, spyre-partition-cores, spyre-tile
and spyre-place-memory read this one record (`spyre_plan.options_of`), so the kernels
spyre-fuse prices are the ones the later passes plan, and a reproducer or a printed module
carries the options it was compiled with (design note 68).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from spyrec.dialects import spyre_plan as plan


@dataclass(frozen=True)
class SpyreSetOptions(ModulePass):
    """Record the compile switches (`spyre.options` on the module) for every planning pass."""

    name = "spyre-set-options"

    fuse: bool | None = None
    """false: spyre-fuse puts every compute op in a kernel of its own."""

    double_buffer: bool | None = None
    """false: one LX slot per streamed tile buffer (planned and allocated that way)."""

    resident: str | None = None
    """Every matmul's loop order: "a", "b" or "acc"; "": the cheapest."""

    share: str | None = None
    """Every split matmul's ring sharing: "ring" or "none"; "": the cheapest."""

    tail: int | None = None
    """1: no matmul tails; N >= 2: N-piece tails where legal; 0: the cheapest."""

    ring_reduce: bool | None = None
    """false: no reduced row is split over cores."""

    keep_in_lx: bool | None = None
    """false: no kernel's result is kept in LX for the next kernel."""

    target: str | None = None
    """The name of the target description every pass plans for (`spyrec.target.TARGETS`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        options = plan.options_of(op).override(
            fuse=self.fuse, double_buffer=self.double_buffer, resident=self.resident,
            share=self.share, tail=self.tail, ring_reduce=self.ring_reduce,
            keep_in_lx=self.keep_in_lx, target=self.target)
        if options == plan.PlanningOptions():
            op.attributes.pop(plan.OPTIONS.key, None)
        else:
            plan.OPTIONS.set(op, options)
        plan.OPTIONS.check(op)  # a bad value given to this pass is named like an override
