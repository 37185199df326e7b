"""The planning vocabulary (dialects/spyre_plan.py, design note 66).

Each planning attribute is declared once with its constraint and typed accessors; the
`spyre.kernel` op declares the kernel's keys; `verify_plan` (run after every pass by the
driver and spyre-opt) names a bad override with the values allowed; and the decisions
later passes act on (`share`, `store_pieces`) are read from typed attributes, never from a
ledger: a module whose ledgers are removed schedules the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerAttr, StringAttr, i64
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from spyrec.diagnostics import CompileError
from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.spyre import KernelOp
from spyrec.driver import compile_program, make_context, module_text
from spyrec.passes.spyrecode.spyre_schedule_dataflow import SpyreScheduleDataflow
from spyrec.registry import PASSES
from spyrec.runtime.ktir_interpreter import KtirError, execute

LIT = Path(__file__).parents[1] / "lit" / "passes"


def _parse(text: str):
    return Parser(make_context(), text).parse_module()


def _run(module, *passes: str) -> None:
    ctx = make_context()
    for name in passes:
        PASSES[name]()().apply(ctx, module)
        plan.verify_plan(module)


def _tiled(name: str = "mlp64x100-tiled.mlir", old: str = "", new: str = ""):
    return _parse((LIT / "Inputs" / name).read_text().replace(old, new))


def _kernel(module, name: str) -> KernelOp:
    return next(k for k in module.walk() if isinstance(k, KernelOp) and k.sym_name.data == name)


def test_the_kernel_op_declares_every_kernel_attribute():
    declared = KernelOp.get_irdl_definition().attributes
    assert set(declared) == {spec.key for spec in plan.KERNEL_ATTRS}
    for spec in plan.KERNEL_ATTRS:
        assert declared[spec.key].constr is spec.constraint
    # every key is a decision or a ledger, and lives somewhere
    assert {spec.kind for spec in plan.PLAN_ATTRS} == {plan.DECISION, plan.LEDGER}
    assert all(spec.on for spec in plan.PLAN_ATTRS)
    assert {s.key for s in plan.PLAN_ATTRS if s.kind == plan.LEDGER} == {
        "reason", "spyre.fusion", "spyre.partition", "spyre.tiling", "spyre.decisions"}


def test_accessors_write_the_builtin_encoding():
    kernel = _kernel(_tiled(), "k1")
    assert plan.grid(kernel) == (2, 1)
    assert plan.TILE.get(kernel) == (32, 64, 128)
    assert plan.FUSED.get(kernel) == ("linear_1", "gelu")
    assert plan.RESIDENT.get(kernel) is None and not plan.ring_shared(kernel)
    plan.GRID.set(kernel, (4, 2))
    plan.RESIDENT.set(kernel, "acc")
    plan.SHARE.set(kernel, "ring")
    plan.STORE_PIECES.set(kernel, 4)
    plan.LX_RESULTS.set(kernel, (0,))
    # exactly what the passes wrote before the vocabulary (binaries stay byte-identical)
    assert kernel.attributes["grid"] == ArrayAttr([IntegerAttr(4, i64), IntegerAttr(2, i64)])
    assert kernel.attributes["resident"] == StringAttr("acc")
    assert kernel.attributes["store_pieces"] == IntegerAttr(4, i64)
    assert kernel.attributes["spyre.lx_results"] == DenseArrayBase.from_list(i64, [0])
    assert plan.ring_shared(kernel) and plan.STORE_PIECES.get(kernel) == 4
    assert "grid = [4 : i64, 2 : i64]" in str(kernel)
    kernel.verify()


@pytest.mark.parametrize("key, value, allowed", [
    ("grid", "[0 : i64, 3 : i64]", "two positive integers"),
    ("grid", "[2 : i64, 1 : i64, 1 : i64]", "two positive integers"),
    ("tile", "[32 : i64, -64 : i64, 128 : i64]", "three non-negative integers"),
    ("resident", '"x"', '"a" (the row block of A kept in LX), "b"'),
    ("share", '"all"', '"ring"'),
    ("tail", "0 : i64", "an integer >= 1"),
    ("store_pieces", '"many"', "an integer >= 1"),
    ("spyre.lx_results", "array<i64: -1>", "result indices"),
    ("spyre.partition", '"fast"', "a dictionary"),
])
def test_a_bad_override_names_kernel_key_and_values_allowed(key: str, value: str, allowed: str):
    old = "tile = [32 : i64, 64 : i64, 128 : i64]" if key == "tile" else "grid = [2 : i64, 1 : i64]"
    new = f"{key} = {value}" if key in ("grid", "tile") else f"{old}, {key} = {value}"
    module = _tiled(old=old, new=new)
    with pytest.raises(plan.PlanError) as info:
        plan.verify_plan(module)
    message = str(info.value)
    assert message.startswith(f"kernel @k1 in func @forward: `{key} = {value}` is not allowed")
    assert allowed in message and "\n" not in message
    # the op's own verifier holds the same constraint
    with pytest.raises(VerifyException, match=f"{key} must be"):
        _kernel(module, "k1").verify()


def test_passes_refuse_a_bad_override_by_the_accessor():
    module = _tiled(old="grid = [2 : i64, 1 : i64]", new="grid = [2 : i64, 0 : i64]")
    with pytest.raises(plan.PlanError, match="grid must be"):
        PASSES["spyre-tile"]()().apply(make_context(), module)


def test_is_kernel_and_graph_func():
    module = _tiled()
    _run(module, "convert-spyre-to-ktir")
    graph = plan.graph_func(module)
    assert graph is not None and graph.sym_name.data == "forward" and not plan.is_kernel(graph)
    kernels = [f for f in module.body.block.ops if f is not graph]
    assert kernels and all(isinstance(f, func.FuncOp) and plan.is_kernel(f) for f in kernels)
    assert plan.grid(kernels[1]) == (2, 1)


def test_ktir_grids_of_one_to_three_dims():
    text = ("func.func @k(%a: index) attributes {grid = GRID} {\n  func.return\n}\n")
    def kernel(grid: str) -> func.FuncOp:
        fn = _parse(text.replace("GRID", grid)).body.block.first_op
        assert isinstance(fn, func.FuncOp)
        return fn

    for grid, extents in (("[4]", (4,)), ("[4, 2]", (4, 2)), ("[2, 2, 2]", (2, 2, 2))):
        assert plan.ktir_grid(kernel(grid)) == extents
    with pytest.raises(plan.PlanError, match="one to three positive integers"):
        plan.ktir_grid(kernel("[0]"))
    with pytest.raises(KtirError, match="func @k: `grid = \\[0 : i64\\]`"):
        execute(text.replace("GRID", "[0]"), "k", a=None)


def test_the_driver_checks_a_hand_written_kernel(tmp_path: Path):
    source = (LIT / "Inputs" / "ktir-bounds-store.mlir").read_text()
    path = tmp_path / "kernel.mlir"
    path.write_text(source.replace("grid = [4, 1]", "grid = [4, 0]"))
    with pytest.raises(CompileError, match="func @shifted_store: `grid = \\[4 : i64, 0 : i64\\]`"):
        compile_program(path, stop_after="ktir")


def _store_pieces_kernel():
    text = (LIT / "spyre-tile-store-pieces.mlir").read_text().split("// -----")[0]
    return _parse(text)


def test_store_pieces_and_share_are_decisions_not_ledger_entries():
    """spyre-tile writes `store_pieces` and `share` on the kernel; convert-spyre-to-ktir and
    spyre-schedule-dataflow act on those alone: with every ledger removed the KTIR and the
    schedule are the same."""
    full, bare = _store_pieces_kernel(), _store_pieces_kernel()
    for module in (full, bare):
        _run(module, "spyre-tile")
    kernel = _kernel(bare, "k0")
    assert plan.STORE_PIECES.get(kernel) == 32 and plan.SHARE.get(kernel) == "ring"
    for spec in (plan.TILING, plan.PARTITION, plan.FUSION, plan.REASON):
        kernel.attributes.pop(spec.key, None)
    for module in (full, bare):
        _run(module, "convert-spyre-to-ktir", "spyre-place-memory")
    fn = next(f for f in bare.body.block.ops if isinstance(f, func.FuncOp) and plan.is_kernel(f))
    assert plan.ring_shared(fn)
    assert "spyre.store_pieces = 32" in module_text(bare)
    for module in (full, bare):
        for f in module.body.block.ops:
            f.attributes.pop("spyre.decisions", None)
        # packed cores, as compiles schedule: the same instructions, printed as their bytes
        SpyreScheduleDataflow(packed=True).apply(make_context(), module)
    full_text, bare_text = module_text(full), module_text(bare)
    assert full_text == bare_text
    assert 'spyre.ring = "' in bare_text and "tiles shared over the ring" in bare_text
