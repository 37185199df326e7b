"""The compiler stands on the target layer, not on the emulator (issue 19, docs/architecture.md).

`spyrec.target` owns the hardware numbers, the ISA (encoding and per-instruction costs) and
the device layout rules; the compiler (frontend, dialects, passes, driver) and the runtime
both import it, and it imports neither. The KTIR value semantics (`dialects/ktdp_values.py`)
are shared the same way. These tests read every module's imports (without importing it)
and fail on an edge across the layers, so none can creep in (the last ones, the `.spyre`
container and the trip-count guards, moved to `spyrec.target.container` and the
spyre-place-guards pass).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# the compiler's modules: everything that runs inside `spyrec compile`
COMPILER = [*sorted((ROOT / "passes").rglob("*.py")), *sorted((ROOT / "dialects").glob("*.py")),
            *sorted((ROOT / "spyrec" / "frontend").glob("*.py")),
            *(ROOT / "spyrec" / f for f in ("driver.py", "pipelines.py", "costmodel.py",
                                            "registry.py", "diagnostics.py", "progress.py"))]
TARGET = sorted((ROOT / "spyrec" / "target").glob("*.py"))


def imports(path: Path) -> set[str]:
    """The spyrec modules `path` imports (at any depth of the file: lazy imports count)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            if node.module in ("spyrec", "spyrec.runtime"):  # `from spyrec.runtime import x`
                found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m.startswith("spyrec")}


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_no_compiler_module_imports_the_runtime():
    found = sorted((_rel(p), m) for p in COMPILER for m in imports(p)
                   if m == "spyrec.runtime" or m.startswith("spyrec.runtime."))
    assert not found, ("compiler modules import the runtime (the emulator); import the target "
                       f"layer (spyrec.target) instead: {found}")


def test_the_target_layer_stands_alone():
    layers = ("spyrec.runtime", "spyrec.passes", "spyrec.dialects", "spyrec.frontend")
    bad = sorted((_rel(p), m) for p in TARGET for m in imports(p) if m.startswith(layers))
    assert not bad, f"spyrec.target may import only itself: {bad}"


def test_planning_does_not_lower():
    """The graph and planning stages decide on the spyre dialect alone: no module of
    passes/graph or passes/planning imports the KTIR or spyrecode stages (spyre-tile prices
    LX with `lx_need`, not by lowering a kernel, note 69)."""
    stages = [p for p in COMPILER if p.parent.name in ("graph", "planning", "legalize")]
    bad = sorted((_rel(p), m) for p in stages for m in imports(p)
                 if m.startswith(("spyrec.passes.ktir", "spyrec.passes.spyrecode")))
    assert len(stages) > 10
    assert not bad, f"the planning stage imports a later stage: {bad}"


def test_the_scheduler_and_the_emulator_cost_instructions_alike():
    """One cost function: the emulator's clock schedules `spyrec.target.timing.instr_cost`,
    the one the scheduler imports (no second copy of the numbers)."""
    from spyrec.passes.spyrecode import spyre_schedule_dataflow
    from spyrec.runtime import timing
    from spyrec.target import timing as target_timing

    assert spyre_schedule_dataflow.instr_cost is target_timing.instr_cost
    assert timing.instr_cost is target_timing.instr_cost


def test_one_address_rule_for_ktir_views():
    """A KTIR memory view's address rule (a base and strides) is defined once, by
    `dialects/ktdp_values.Strided` (issue 19, item 4): the interpreter's `MemView` extends it
    and the scheduler's walk builds it; no pass keeps a view class of its own with them."""
    from spyrec.dialects.ktdp_values import MemView, Strided

    own = sorted(
        (_rel(path), node.name)
        for path in sorted((ROOT / "passes").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.ClassDef)
        and {"base", "strides"} <= {stmt.target.id for stmt in node.body
                                    if isinstance(stmt, ast.AnnAssign)
                                    and isinstance(stmt.target, ast.Name)})
    assert not own, f"passes define their own view address rule; use ktdp_values.Strided: {own}"
    assert issubclass(MemView, Strided)


def test_passes_plan_for_the_target_the_ir_names():
    """No pass or dialect reads the default target: they plan for `spyre_plan.target_of`
    (the `target` option recorded in the IR), whose default is the one place left."""
    allowed = {ROOT / "dialects" / "spyre_plan.py"}
    found = sorted(_rel(p) for p in [*(ROOT / "passes").rglob("*.py"),
                                     *(ROOT / "dialects").glob("*.py")]
                   if p not in allowed and any(
                       isinstance(n, ast.Name) and n.id == "DEFAULT_TARGET"
                       for n in ast.walk(ast.parse(p.read_text()))))
    assert not found, f"these read DEFAULT_TARGET instead of the module's target: {found}"
