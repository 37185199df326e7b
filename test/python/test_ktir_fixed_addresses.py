"""Kernels at hard-coded addresses (the RFC 0682 examples' form) through the back end: their
views become pointer arguments named after them, the binary records the addresses, and
`spyrec run --check` gives the interpreter the same memory image (spyrec/frontend/
ktir_fixed.py). Kernels: ktir/kernels/fixed_addresses.mlir."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import spyrec
from spyrec.cli import main
from spyrec.diagnostics import CompileError
from spyrec.frontend import ktir_fixed, ktir_input

KERNELS = Path(__file__).parent / "ktir" / "kernels" / "fixed_addresses.mlir"


def _compile_and_check(tmp_path: Path) -> str:
    out = tmp_path / "fixed.spyre"
    runner = CliRunner()
    result = runner.invoke(main, ["compile", str(KERNELS), "--function", "fixed_sub",
                                  "-o", str(out)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["run", str(out), "--check", str(KERNELS)])
    return result.output if result.exit_code == 0 else f"exit {result.exit_code}\n{result.output}"


def test_fixed_views_become_arguments_and_match_the_interpreter(tmp_path):
    output = _compile_and_check(tmp_path)
    assert "C: ok" in output and "exit" not in output, output
    exe = spyrec.compile(KERNELS, function="fixed_sub", cache=False)
    assert [b.name for b in exe.binary.inputs] == ["A", "B"]  # A viewed twice: one tensor
    assert [b.name for b in exe.binary.outputs] == ["C"]
    # KTIR offsets count elements: f16 at elements 1024, 4096, 8192
    assert json.loads(exe.binary.provenance[ktir_fixed.FIXED_KEY]) == {
        "A": 2048, "B": 8192, "C": 16384}


def test_the_image_placed_wrong_fails_the_check(tmp_path, monkeypatch):
    """A and B recorded at each other's address (C = A - B read as B - A) is caught."""
    pin = ktir_fixed.pin_fixed_views

    def swapped(kernel, where):
        fixed = pin(kernel, where)
        fixed["A"], fixed["B"] = fixed["B"], fixed["A"]
        return fixed

    monkeypatch.setattr(ktir_input, "pin_fixed_views", swapped)
    output = _compile_and_check(tmp_path)
    assert output.startswith("exit") and "C: ok" not in output, output


def test_overlapping_fixed_views_are_refused():
    with pytest.raises(CompileError, match=r"@fixed_overlap: the views %A_view \(bytes 0 to "
                       r"2048\) and %B_view \(bytes 1024 to 3072\) at fixed addresses overlap"):
        spyrec.compile(KERNELS, function="fixed_overlap", cache=False)


def test_the_launch_grid_replaces_the_kernels_and_check_runs_on_it(tmp_path, monkeypatch):
    """`--grid 1` launches @fixed_sub (grid [2]) on one core: the first 8 rows of C only,
    and `run --check` runs the interpreter on that grid too (it says so); without the
    recorded grid the interpreter computes all 16 rows and the check fails."""
    from spyrec import driver

    out = tmp_path / "one.spyre"
    runner = CliRunner()
    result = runner.invoke(main, ["compile", str(KERNELS), "--function", "fixed_sub",
                                  "--grid", "1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    exe = spyrec.load(out)
    assert json.loads(exe.binary.provenance["ktir_grid"]) == [1]
    assert exe.binary.kernels[0].num_cores == 1
    result = runner.invoke(main, ["run", str(out), "--check", str(KERNELS)])
    assert result.exit_code == 0 and "launch grid: [1], as compiled" in result.output \
        and "C: ok" in result.output, result.output
    monkeypatch.setattr(driver, "GRID_KEY", "unrecorded")
    result = runner.invoke(main, ["compile", str(KERNELS), "--function", "fixed_sub",
                                  "--grid", "1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["run", str(out), "--check", str(KERNELS)])
    assert result.exit_code != 0 and "C: ok" not in result.output, result.output


@pytest.mark.parametrize(("grid", "message"), [
    ("0", "--grid 0: expected one to three positive integers"),
    ("2,2,2,2", "--grid 2,2,2,2: expected one to three positive integers"),
])
def test_a_bad_launch_grid_is_refused(tmp_path, grid, message):
    result = CliRunner().invoke(main, ["compile", str(KERNELS), "--function", "fixed_sub",
                                       "--grid", grid, "-o", str(tmp_path / "k.spyre")])
    assert result.exit_code != 0 and message in result.output, result.output
    assert not (tmp_path / "k.spyre").exists()


def test_sizes_computed_from_constants_are_folded(tmp_path):
    """A view sized by integer arithmetic on constants (the RFC examples' `%Ntkv_Ptkv =
    arith.divui %Ntkv, %Ptkv`), no argument bound: folded, the view static, compiled."""
    text = KERNELS.read_text().replace(
        "    %C_view = ktdp.construct_memory_view %c_at, sizes: [16, 64], strides: [64, 1] {",
        "    %two = arith.constant 2 : index\n"
        "    %rows = arith.muli %c8, %two : index\n"
        "    %C_view = ktdp.construct_memory_view %c_at, sizes: [%rows, 64], strides: [64, 1] {")
    path = tmp_path / "folded.mlir"
    path.write_text(text)
    exe = spyrec.compile(path, function="fixed_sub", cache=False)
    assert [b.name for b in exe.binary.outputs] == ["C"]
    assert list(exe.binary.outputs[0].layout.shape) == [16, 64]
