"""Test-case reduction: failing programs shrink to the op that fails, written as a test."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import torch
from test_bisect import _add_becomes_sub, _with_bug

from spyrec.diagnostics import CompileError
from spyrec.reduce import reduce


class _Model(torch.nn.Module):
    """Eight ops around one that spyrec does not lower (cumprod)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(64, 64)
        self.b = torch.nn.Linear(64, 64)

    def forward(self, x, y):
        h = torch.relu(self.a(x)) * 2.0
        g = torch.cumprod(h, dim=-1)
        z = self.b(g + y)
        return torch.softmax(z, -1) + 1


def _program() -> torch.export.ExportedProgram:
    torch.manual_seed(0)
    return torch.export.export(_Model().eval(), (torch.randn(8, 64), torch.randn(8, 64)))


def _targets(program: torch.export.ExportedProgram) -> list[str]:
    return [str(n.target) for n in program.graph.nodes if n.op == "call_function"]


def test_an_unsupported_op_is_isolated_and_written_as_a_test(tmp_path):
    result = reduce(_program(), "error:cumprod", tmp_path)
    assert result.ops_before == 8
    assert _targets(result.program) == ["aten.cumprod.default"]
    assert len(result.program.graph_signature.user_inputs) == 1  # y is no longer read
    pt2, test = result.files
    assert pt2.exists() and "aten.cumprod.default" in test.read_text()
    namespace: dict[str, Any] = {"__file__": str(test)}
    exec(compile(test.read_text(), str(test), "exec"), namespace)  # our own file
    with pytest.raises(AssertionError, match="still error:cumprod"):
        namespace["test_program_reduced"]()  # fails while cumprod is not lowered


def test_a_miscompiled_op_is_isolated(monkeypatch):
    _with_bug(monkeypatch, "spyre-fuse", _add_becomes_sub)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(64, 64)

        def forward(self, x, y):
            return torch.softmax(self.a(torch.relu(x) * y) + x, -1)

    torch.manual_seed(0)
    program = torch.export.export(Model().eval(), (torch.randn(8, 64), torch.randn(8, 64)))
    result = reduce(program, "mismatch")
    assert _targets(result.program) == ["aten.add.Tensor"]


def test_conditions_are_checked():
    with pytest.raises(CompileError, match="expected error:TEXT, mismatch or bisect:PASS"):
        reduce(_program(), "crash")
    with pytest.raises(CompileError, match="does not hold for the program as it is"):
        reduce(_program(), "error:no such message")


def test_cli(tmp_path, spyrec_cli, cli_env):
    torch.export.save(_program(), tmp_path / "model.pt2")
    res = subprocess.run([*spyrec_cli, "reduce", str(tmp_path / "model.pt2"), "--until",
                          "error:cumprod", "-o", str(tmp_path / "out")], capture_output=True,
                         text=True, env=cli_env, timeout=600, check=False)
    assert res.returncode == 0, res.stderr
    assert "8 ops -> 1" in res.stdout
    assert (tmp_path / "out" / "test_model_reduced.py").exists()
    assert (tmp_path / "out" / "model_reduced.pt2").exists()
