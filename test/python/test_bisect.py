"""Pass-level numeric bisection: seeded bugs in one pass are named, clean compiles pass."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from conftest import export_mlp
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f16,
    i64,
)
from xdsl.dialects.linalg.ops import FillOp
from xdsl.dialects.test import TestOp
from xdsl.rewriter import Rewriter

from spyrec.demo import DemoDecoder, DemoDecoderFFN
from spyrec.dialects.spyre import BINARY_OPS, MatmulOp
from spyrec.graph_interpreter import GraphInterpreter, _padded_shape
from spyrec.numeric_bisect import bisect
from spyrec.registry import PASSES


def _with_bug(monkeypatch, name: str, bug: Callable[[ModuleOp], None]) -> None:
    """Replace pass `name` by itself followed by `bug` on the module."""
    original = PASSES[name]()

    class Buggy(original):
        def apply(self, ctx, op):
            super().apply(ctx, op)  # pyright: ignore[reportAbstractUsage] - a concrete pass
            bug(op)

    monkeypatch.setitem(PASSES, name, lambda: Buggy)


def _add_becomes_sub(module: ModuleOp) -> None:
    """A wrong rewrite: the first elementwise add subtracts."""
    add = next(op for op in module.walk() if isinstance(op, BINARY_OPS["add"]))
    Rewriter.replace_op(add, BINARY_OPS["sub"](add.lhs, add.rhs, add.result.type))


def _accumulator_starts_at_one(module: ModuleOp) -> None:
    """A wrong lowering: the matmul accumulators are filled with 1.0 instead of 0.0."""
    for fill in [op for op in module.walk() if isinstance(op, FillOp)]:
        owner = fill.inputs[0].owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr):
            one = arith.ConstantOp(FloatAttr(1.0, owner.value.type))
            block = owner.parent_block()
            assert block is not None
            block.insert_op_before(one, owner)
            fill.operands[0] = one.result


def _ffn() -> torch.export.ExportedProgram:
    """RMS norm, SwiGLU and a residual add: a small graph with every kind of kernel."""
    torch.manual_seed(0)
    return torch.export.export(DemoDecoderFFN(64, 1).eval(), (torch.randn(1, 16, 64),))


def test_a_clean_compile_passes_every_checkpoint():
    torch.manual_seed(0)
    model = DemoDecoder(128, 1).half().eval()
    x = torch.randn(1, 32, 128).half()
    result = bisect(torch.export.export(model, (x,)))
    assert result.first_bad is None, result.report()
    checked = {c.how for c in result.checkpoints if c.status == "ok"}
    assert checked == {"graph interpreter", "KTIR interpreter", "emulator"}
    assert len(result.checkpoints) == 8


class _RouterMax(torch.nn.Module):
    """An f16 router's max with its index: the index comes from an f32 [1, 4] column
    constant read with the kernel's f16-stick tiles (64 columns, one f32 stick is 32)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = torch.nn.Linear(128, 4, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = self.gate(x)
        top, index = scores.max(-1, keepdim=True)
        return scores.softmax(-1) * top + index.to(scores.dtype)


def test_a_tile_wider_than_its_view_is_checked_by_the_ktir_interpreter():
    """The wide tile is masked (`ktdp.masked`): the KTIR interpreter reads +0.0 past the
    view, as the device's zero-filled LX tile holds, instead of refusing the coordinate, so
    the kernel is checked rather than skipped."""
    torch.manual_seed(0)
    model = _RouterMax().half()
    result = bisect(torch.export.export(model, (torch.randn(16, 128).half(),)))
    assert result.first_bad is None, result.report()
    assert all(c.status == "ok" for c in result.checkpoints), result.report()


class _IndexGather(torch.nn.Module):
    """A max's int64 index, read by a gather: int64 lives on the device as int32."""

    def forward(self, x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        value, index = x.max(-1)
        return table[index] * value.unsqueeze(-1)


def test_an_int64_result_is_checked_by_the_ktir_interpreter_at_its_device_width():
    """The kernel writing the index viewed it as i64 (8-byte addresses) over int32 storage:
    the KTIR interpreter refused column 31 as outside LPDDR and skipped the kernel."""
    torch.manual_seed(0)
    inputs = (torch.randn(16, 32), torch.randn(32, 64))
    result = bisect(torch.export.export(_IndexGather(), inputs))
    assert result.first_bad is None, result.report()
    assert all(c.status == "ok" for c in result.checkpoints), result.report()


def test_a_wrong_graph_rewrite_is_named(monkeypatch, tmp_path):
    _with_bug(monkeypatch, "spyre-fuse", _add_becomes_sub)
    result = bisect(_ffn(), keep=tmp_path)
    assert result.first_bad == "spyre-fuse", result.report()
    assert [c.status for c in result.checkpoints] == ["ok", "ok", "out of tolerance"]
    assert result.reproducer == f"spyre-opt {tmp_path / 'spyre-fuse.input.mlir'} -p 'spyre-fuse'"
    assert "spyre.add" in (tmp_path / "spyre-fuse.input.mlir").read_text()


def test_a_wrong_kernel_lowering_is_named(monkeypatch, tmp_path):
    _with_bug(monkeypatch, "spyre-place-memory", _accumulator_starts_at_one)
    _, _, ep = export_mlp(64, torch.float16, batch=16)
    result = bisect(ep, keep=tmp_path)
    assert result.first_bad == "spyre-place-memory", result.report()
    bad = result.checkpoints[-1]
    assert bad.how == "KTIR interpreter" and bad.error > 1


def test_a_pass_that_crashes_is_named(monkeypatch, tmp_path):
    def crash(module: ModuleOp) -> None:
        raise RuntimeError("seeded crash")

    _with_bug(monkeypatch, "spyre-tile", crash)
    _, _, ep = export_mlp(64, torch.float16, batch=16)
    result = bisect(ep, keep=tmp_path)
    assert result.first_bad == "spyre-tile"
    assert "seeded crash" in result.checkpoints[-1].status
    assert (tmp_path / "spyre-tile.input.mlir").exists()


def test_interpreter_matches_eager_per_op():
    """The graph interpreter itself against eager on a matmul + bias with a transposed
    weight (spyre.param permutation) and a residual add: the rules it bisects with."""
    torch.manual_seed(1)
    model = torch.nn.Linear(64, 96).eval()
    x = torch.randn(8, 64)
    from spyrec.driver import compile_program

    result = compile_program(torch.export.export(model, (x,)), stop_after="graph")
    assert result.module is not None and result.program is not None
    assert any(isinstance(op, MatmulOp) for op in result.module.walk())
    (out,) = GraphInterpreter(result.module, result.program.weights).run([x])
    torch.testing.assert_close(out, model(x).detach(), rtol=1e-5, atol=1e-5)


def test_each_result_of_a_launch_is_given_its_own_padded_layout():
    """A launch with several results records one layout per result (an array of them):
    the KTIR checkpoint must hand each result's kernel its padded device array, not the
    logical one (hf:vit_msn's fused cat kernel stores tensor<128x1xf16> results through
    [128, 64] views; given 128x1 arrays the interpreter reported an out-of-bounds store)."""
    def layout(cols: int) -> DictionaryAttr:
        return DictionaryAttr({"stick_dim": IntegerAttr(1, i64),
                               "padded_shape": DenseArrayBase.from_list(i64, [128, cols]),
                               "device_dtype": StringAttr("dl16"), "pad": StringAttr("undef")})

    op = TestOp.create(result_types=[TensorType(f16, [128, 1])] * 2,
                       attributes={"spyre.layout": ArrayAttr([layout(64), layout(32)])})
    assert [_padded_shape(r) for r in op.results] == [[128, 64], [128, 32]]
    single = TestOp.create(result_types=[TensorType(f16, [128, 1])],
                           attributes={"spyre.layout": layout(64)})
    assert _padded_shape(single.results[0]) == [128, 64]


@pytest.mark.parametrize("seeded", [False, True])
def test_cli(tmp_path, spyrec_cli, cli_env, seeded):
    torch.export.save(_ffn(), tmp_path / "m.pt2")
    args = [*spyrec_cli, "bisect", str(tmp_path / "m.pt2"), "--keep", str(tmp_path / "keep")]
    if not seeded:
        res = subprocess.run(args, capture_output=True, text=True, env=cli_env, timeout=600,
                             check=False)
        assert res.returncode == 0, res.stderr
        assert "every checkpoint is within tolerance" in res.stdout
        return
    # the CLI with a seeded bug: a script that patches the pass, then runs spyrec's main
    script = tmp_path / "buggy.py"
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "import pytest, test_bisect\nfrom spyrec.cli import main\n"
        "test_bisect._with_bug(pytest.MonkeyPatch(), 'spyre-stickify', "
        "test_bisect._add_becomes_sub)\nmain()\n")
    res = subprocess.run([sys.executable, str(script), *args[len(spyrec_cli):]],
                         capture_output=True, text=True, env=cli_env, timeout=600, check=False)
    assert res.returncode == 1, res.stderr
    assert "spyre-stickify             graph interpreter" in res.stdout
    assert "out of tolerance (" in res.stdout
    assert "first pass out of tolerance: spyre-stickify" in res.stdout
    assert f"reproduce: spyre-opt {tmp_path / 'keep' / 'spyre-stickify.input.mlir'}" in res.stdout
