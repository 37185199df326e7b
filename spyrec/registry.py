"""The one registry of spyrec's dialects and passes.

`spyre-opt`, the compiler driver and the `xdsl.universe` entry point (so stock `xdsl-opt`
sees spyrec too) all read these tables. Loaders import lazily: nothing here imports torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe


def _dialect(module: str, attr: str) -> Callable[[], Dialect]:
    return lambda: getattr(importlib.import_module(module), attr)


def _pass(module: str, attr: str) -> Callable[[], type[ModulePass]]:
    return lambda: getattr(importlib.import_module(module), attr)


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "spyre": _dialect("spyrec.dialects.spyre", "Spyre"),
    "ktdp": _dialect("spyrec.dialects.ktdp", "KTDP"),
    "spyrecode": _dialect("spyrec.dialects.spyrecode", "SpyreCode"),
    # xDSL's standard dialects extended with the forms KTIR kernels use (dialects/std_ext.py);
    # spyre-opt and the driver let these replace the stock dialects of the same name.
    "arith": _dialect("spyrec.dialects.std_ext", "ARITH"),
    "linalg": _dialect("spyrec.dialects.std_ext", "LINALG"),
    "scf": _dialect("spyrec.dialects.std_ext", "SCF"),
}

# Stock xdsl-opt rejects a second definition of a dialect name, so the extended standard
# dialects stay out of the `xdsl.universe` entry point.
STD_OVERRIDES = frozenset({"arith", "linalg", "scf"})

PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "spyre-set-options": _pass("spyrec.passes.planning.spyre_set_options", "SpyreSetOptions"),
    "spyre-legalize": _pass("spyrec.passes.graph.spyre_legalize", "SpyreLegalize"),
    "spyre-stickify": _pass("spyrec.passes.graph.spyre_stickify", "SpyreStickify"),
    "spyre-fuse": _pass("spyrec.passes.planning.spyre_fuse", "SpyreFuse"),
    "spyre-partition-cores": _pass("spyrec.passes.planning.spyre_partition_cores",
                                   "SpyrePartitionCores"),
    "spyre-tile": _pass("spyrec.passes.planning.spyre_tile", "SpyreTile"),
    "convert-spyre-to-ktir": _pass("spyrec.passes.ktir.convert_spyre_to_ktir",
                                   "ConvertSpyreToKtir"),
    "spyre-legalize-ktir": _pass("spyrec.passes.ktir.spyre_legalize_ktir", "SpyreLegalizeKtir"),
    "spyre-place-memory": _pass("spyrec.passes.ktir.spyre_place_memory", "SpyrePlaceMemory"),
    "spyre-schedule-dataflow": _pass(
        "spyrec.passes.spyrecode.spyre_schedule_dataflow", "SpyreScheduleDataflow"
    ),
    "spyre-place-guards": _pass("spyrec.passes.spyrecode.spyre_place_guards", "SpyrePlaceGuards"),
    "spyre-emit-spyrecode": _pass("spyrec.passes.spyrecode.spyre_emit_spyrecode",
                                  "SpyreEmitSpyreCode"),
}

UNIVERSE = Universe(
    all_dialects={name: load for name, load in DIALECTS.items() if name not in STD_OVERRIDES},
    all_passes=dict(PASSES),
)
