"""The user's compile switches are one record in the IR (`spyre.options`, design note 68).

spyre-set-options writes it; spyre-fuse, spyre-partition-cores, spyre-tile and
spyre-place-memory read it (a pass's own option, when given, wins for that pass alone), so
spyre-fuse prices the kernels it weighs as the later passes will plan them, and the passes
can no longer disagree about `double_buffer`.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import torch
from conftest import assert_matches_eager, export_mlp
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, IntegerType, StringAttr
from xdsl.parser import Parser

import spyrec
from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.spyre import KernelOp
from spyrec.driver import make_context, module_text
from spyrec.passes.planning import spyre_fuse
from spyrec.passes.planning.spyre_partition_cores import SpyrePartitionCores
from spyrec.pipelines import compile_options
from spyrec.registry import PASSES
from spyrec.runtime.emulator import Emulator
from spyrec.target import DEFAULT_TARGET, register_target
from spyrec.target.container import ContainerError

SWIGLU = Path(__file__).parents[1] / "lit" / "passes" / "Inputs" / "swiglu-mlp.mlir"
PLANNING = ("spyre-legalize", "spyre-stickify", "spyre-fuse", "spyre-partition-cores",
            "spyre-tile", "convert-spyre-to-ktir", "spyre-place-memory")


def _module():
    return Parser(make_context(), SWIGLU.read_text()).parse_module()


def _run(module, specs: list[tuple[str, dict[str, object]]]) -> str:
    ctx = make_context()
    for name, options in specs:
        PASSES[name]()(**options).apply(ctx, module)
        plan.verify_plan(module)
    return module_text(module)


def test_compile_options_are_the_options_of_spyre_set_options():
    assert compile_options() == {}
    assert compile_options(double_buffer=False, resident="a", fuse=True) == {
        "spyre-set-options": {"double_buffer": False, "resident": "a"}}


def test_the_record_holds_what_differs_from_the_defaults():
    module = _module()
    _run(module, [("spyre-set-options", {})])
    assert plan.OPTIONS.key not in module.attributes  # a default compile's IR is unchanged
    _run(module, [("spyre-set-options", {"double_buffer": False, "tail": 1})])
    record = module.attributes[plan.OPTIONS.key]
    assert record == DictionaryAttr({"double_buffer": IntegerAttr(0, IntegerType(1)),
                                     "tail": IntegerAttr(1, 64)})
    assert plan.options_of(module) == plan.PlanningOptions(double_buffer=False, tail=1)
    # written over, not replaced: a later spyre-set-options keeps what it is not given
    _run(module, [("spyre-set-options", {"resident": "b"})])
    assert plan.options_of(module) == plan.PlanningOptions(double_buffer=False, tail=1,
                                                           resident="b")
    _run(module, [("spyre-set-options", {"double_buffer": True, "tail": 0, "resident": ""})])
    assert plan.OPTIONS.key not in module.attributes


def test_one_record_plans_as_the_options_of_every_pass_did():
    """`spyre-set-options{double_buffer=false resident=b}` before the planning passes
    decides what the per-pass options decided (when the three passes had to be told alike),
    and spyre-fuse's ledger now prices its joins with those options (it priced them with
    the defaults before)."""
    record = _run(_module(), [("spyre-set-options", {"double_buffer": False, "resident": "b"}),
                              *((name, {}) for name in PLANNING)])
    per_pass = {"spyre-partition-cores": {"double_buffer": False, "resident": "b"},
                "spyre-tile": {"double_buffer": False, "resident": "b"},
                "spyre-place-memory": {"double_buffer": False}}
    told = _run(_module(), [(name, per_pass.get(name, {})) for name in PLANNING])
    default = _run(_module(), [(name, {}) for name in PLANNING])

    def priced(text: str) -> list[str]:
        return re.findall(r"\d+ predicted cycles fused against \d+", text)

    def decided(text: str) -> str:
        text = text.replace('attributes {spyre.options = {double_buffer = false, '
                            'resident = "b"}} ', '')
        return re.sub(r"\d+ predicted cycles fused against \d+", "", text)

    assert decided(record) == decided(told)
    assert priced(told) == priced(default) != priced(record)
    assert default != told and 'resident = "b"' in told and 'resident = "b"' not in default


def test_a_pass_option_wins_for_that_pass_alone():
    module = _module()
    _run(module, [("spyre-set-options", {"double_buffer": False, "resident": "a"})])
    options = SpyrePartitionCores(resident="b").options(module)
    assert options == plan.PlanningOptions(double_buffer=False, resident="b")
    assert SpyrePartitionCores().options(module).resident == "a"


def test_spyre_fuse_prices_joins_with_the_users_options(monkeypatch):
    asked = []
    scored = spyre_fuse.scored_splits

    def spy(shape, target, options, only=None):
        asked.append(options)
        return scored(shape, target, options, only)

    monkeypatch.setattr(spyre_fuse, "scored_splits", spy)
    _run(_module(), [("spyre-set-options", {"double_buffer": False, "share": "none"}),
                     ("spyre-legalize", {}), ("spyre-stickify", {}), ("spyre-fuse", {})])
    assert asked and set(asked) == {plan.PlanningOptions(double_buffer=False, share="none")}


def test_fuse_false_in_the_record_outlines_every_op():
    def kernels(specs):
        module = _module()
        _run(module, specs)
        return sum(isinstance(op, KernelOp) for op in module.walk())

    graph = [("spyre-legalize", {}), ("spyre-stickify", {}), ("spyre-fuse", {})]
    fused = kernels(graph)
    apart = kernels([("spyre-set-options", {"fuse": False}), *graph])
    assert apart > fused
    # the pass's own option still wins
    assert kernels([("spyre-set-options", {"fuse": False}), *graph[:2],
                    ("spyre-fuse", {"enabled": True})]) == fused


@pytest.mark.parametrize(("record", "words"), [
    ({"resident": StringAttr("x")}, 'resident ("", "a", "b", "acc")'),
    ({"tail": IntegerAttr(-1, 64)}, "tail (an integer >= 0)"),
    ({"tail": IntegerAttr(1, IntegerType(1))}, "tail (an integer >= 0)"),
    ({"double_buffer": StringAttr("no")}, "double_buffer"),
    ({"unroll": IntegerAttr(1, IntegerType(1))}, "a dictionary of compile switches"),
])
def test_a_bad_record_is_named_with_the_values_allowed(record, words):
    module = _module()
    module.attributes[plan.OPTIONS.key] = DictionaryAttr(record)
    with pytest.raises(plan.PlanError) as info:
        plan.verify_plan(module)
    message = str(info.value)
    assert message.startswith("the module: `spyre.options = ")
    assert words in message and "spyre-set-options decides it" in message


def test_spyre_set_options_refuses_a_bad_value():
    with pytest.raises(plan.PlanError, match=r'share .*"ring", "none"'):
        _run(_module(), [("spyre-set-options", {"share": "sometimes"})])


# ---- the target is a compile option recorded in the IR and the binary ---------------------

SMALL = register_target(DEFAULT_TARGET.replace(name="spyre-test-8-cores", num_cores=8))


def test_a_compile_for_another_target_plans_for_it_and_runs_as_it():
    model, x, program = export_mlp(256, torch.float16)
    exe = spyrec.compile(program, target=SMALL.name, cache=False)
    assert exe.binary.target == SMALL.name
    assert all(k.num_cores <= SMALL.num_cores for k in exe.binary.kernels)
    default = spyrec.compile(program, cache=False)
    assert default.binary.target == DEFAULT_TARGET.name
    assert max(k.num_cores for k in default.binary.kernels) > SMALL.num_cores
    assert_matches_eager(exe, model, x)  # the emulator runs it as the binary's target


def test_the_record_names_the_target():
    module = _module()
    _run(module, [("spyre-set-options", {"target": SMALL.name})])
    assert plan.target_of(module) is SMALL
    assert str(module.attributes[plan.OPTIONS.key]) == '{target = "spyre-test-8-cores"}'


def test_an_unknown_target_is_named_with_the_known_ones(tmp_path):
    with pytest.raises(plan.PlanError, match=r"target .*spyre-aiu"):
        _run(_module(), [("spyre-set-options", {"target": "spyre-x"})])
    _, _, program = export_mlp(128, torch.float16)
    binary = spyrec.compile(program, target=SMALL.name, cache=False).binary
    stranger = dataclasses.replace(binary, target="spyre-x")
    with pytest.raises(ContainerError, match="unknown target: unknown Spyre target 'spyre-x': "
                       "the known targets are spyre-aiu, spyre-test-8-cores"):
        Emulator(stranger)


# ---- symbolic sizes: a declared record of the module --------------------------------------


def test_the_symbols_record_is_declared_and_checked():
    from spyrec.dialects.spyre_symbolic import SymbolicSignature

    module = _module()
    signature = SymbolicSignature({"x.dim1": (2, 64)}, ({1: "x.dim1"},), ({1: "x.dim1"},))
    plan.record_symbols(module, signature)
    assert plan.symbolic_signature(module) == signature
    plan.verify_plan(module)
    bad = signature.to_attr()
    module.attributes[plan.SYMBOLS.key] = DictionaryAttr(
        {**bad.data, "outputs": DictionaryAttr({})})  # not a list of per-output dims
    with pytest.raises(plan.PlanError, match=r"the module: `spyre.symbols = .* with 0 <= lower "
                       r"<= upper"):
        plan.verify_plan(module)
    plan.record_symbols(module, SymbolicSignature({"x.dim1": (9, 4)}, ({1: "x.dim1"},), ()))
    with pytest.raises(plan.PlanError):
        plan.symbolic_signature(module)
