"""Named pass pipelines: data, not if-chains in the driver.

A pipeline is a list of stages; a stage is a name the user can stop after
(`spyrec compile --emit=<stage>`) and the registered passes that produce it.
"""

from __future__ import annotations

from dataclasses import dataclass

from spyrec.dialects.spyre_plan import PlanningOptions
from spyrec.target import DEFAULT_TARGET, SpyreTarget, target_named


@dataclass(frozen=True)
class Stage:
    name: str
    passes: tuple[str, ...]
    doc: str
    # options the driver sets on a pass, as `spyre-opt -p 'name{key=value}'` would
    options: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()
    # whether the verification after the stage covers the KTIR kernels: False for a stage
    # whose passes only read them (the stage that wrote them verified them)
    verify_kernels: bool = True

    def options_of(self, name: str) -> dict[str, object]:
        return dict(dict(self.options).get(name, ()))


def pass_spec(name: str, options: dict[str, object]) -> str:
    """The pass as `spyre-opt -p` spells it, with its options."""
    if not options:
        return name
    text = " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                    for k, v in options.items())
    return f"{name}{{{text}}}"


DEFAULT_PIPELINE: tuple[Stage, ...] = (
    Stage("graph", ("spyre-set-options", "spyre-legalize", "spyre-stickify", "spyre-fuse",
                    "spyre-partition-cores", "spyre-tile"),
          "spyre graph dialect: ops selected, layouts, kernels, core splits and tiles"),
    Stage("ktir", ("convert-spyre-to-ktir", "spyre-place-memory"),
          "KTIR kernels (ktdp + arith/linalg/scf/tensor) with LPDDR and LX placement"),
    # packed cores: an op per instruction would cost more than scheduling (design note 26);
    # spyre-place-guards changes only programs with a symbolic size (note 49); both read the
    # KTIR kernels and write programs: the kernels were verified after the ktir stage
    Stage("spyrecode", ("spyre-schedule-dataflow", "spyre-place-guards"),
          "spyrecode dialect: per-core DMA / PT / SFU instruction streams, with the "
          "trip-count guards of a symbolic size",
          (("spyre-schedule-dataflow", (("packed", True),)),), verify_kernels=False),
)

# Hand-written KTIR enters at the KTIR stage: engine selection, then the back end.
KTIR_PIPELINE: tuple[Stage, ...] = (
    Stage("ktir", ("spyre-set-options", "spyre-legalize-ktir", "spyre-place-memory"),
          "the KTIR kernel with its ops mapped to Spyre engines, LPDDR and LX placement"),
    DEFAULT_PIPELINE[-1],
)

def compile_options(fuse: bool = True, double_buffer: bool = True, resident: str = "",
                    share: str = "", tail: int = 0, ring_reduce: bool = True,
                    keep_in_lx: bool = True, target: str = "") -> dict[str, dict[str, object]]:
    """Pass options for the user-facing compile switches (keyword arguments of
    `spyrec.compile`, flags of `spyrec compile`): the options of spyre-set-options, which
    records them on the module (`spyre.options`) for every planning pass, so each pass's
    gain can be measured:

    - fuse=False: spyre-fuse puts every op in a kernel of its own;
    - double_buffer=False: one LX slot per tile buffer (spyre-partition-cores and spyre-tile
      plan with it, spyre-place-memory allocates it), so loads do not overlap compute;
    - resident="a" | "b" | "acc": every matmul kernel uses that loop order (see
      `spyrec.costmodel.Tiling`) instead of the cheapest one;
    - share="ring" | "none": every split matmul shares (or does not share) its operand tiles
      over the ring (design note 38) instead of whichever the cost model prefers;
    - tail=1: no matmul computes its last column tile in row pieces (design note 57);
      tail=N >= 2: every K-sliced A block that allows it uses N pieces;
    - ring_reduce=False: spyre-partition-cores keeps every reduced row whole on one core
      instead of splitting it and summing the cores' partials with ring.reduce (note 59);
    - keep_in_lx=False: spyre-partition-cores keeps no kernel's result in LX for the next
      kernel; every tensor between kernels goes through LPDDR (note 61);
    - target=NAME: plan for that target description (`spyrec.target.TARGETS`; "": the
      default), recorded in the IR and in the binary, which the emulator then runs as.
    """
    given = {"fuse": fuse, "double_buffer": double_buffer, "resident": resident,
             "share": share, "tail": tail, "ring_reduce": ring_reduce, "keep_in_lx": keep_in_lx,
             "target": target or PlanningOptions().target}
    default = PlanningOptions()
    changed = {k: v for k, v in given.items() if v != getattr(default, k)}
    # one record in the IR that every planning pass reads (spyre-set-options, note 68)
    return {"spyre-set-options": changed} if changed else {}


def compile_target(pass_options: dict[str, dict[str, object]] | None) -> SpyreTarget:
    """The target description a compile with these pass options plans for (the `target`
    option of spyre-set-options; the frontend lays tensors out for it before that pass)."""
    given = (pass_options or {}).get("spyre-set-options", {}).get("target")
    return target_named(str(given)) if given else DEFAULT_TARGET


STAGE_NAMES = (*(s.name for s in DEFAULT_PIPELINE), "binary")


def passes_until(stage: str) -> list[str]:
    """The pass names that run to produce `stage` (all of them for "binary")."""
    names: list[str] = []
    for s in DEFAULT_PIPELINE:
        names.extend(s.passes)
        if s.name == stage:
            break
    return names
