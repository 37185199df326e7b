"""Scalar arguments of hand-written KTIR kernels bound at compile time (Triton's constexprs):
`spyrec.compile(path, function=..., constants={...})` and `spyrec compile --arg NAME=VALUE`
specialise the kernel, the binary records the values, and `spyrec run k.spyre --check
k.mlir` runs the interpreter with the same values (and fails when they differ)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from xdsl.dialects.linalg import ops as linalg

import spyrec
import spyrec.ktir
from spyrec.cli import main
from spyrec.diagnostics import CompileError
from spyrec.frontend.ktir_input import import_ktir
from spyrec.frontend.ktir_specialise import CONSTANTS_KEY, specialise
from spyrec.passes.ktir import spyre_legalize_ktir
from spyrec.target import SpyreTarget
from spyrec.target.container import read_spyre, write_spyre
from spyrec.verdict import check_outputs

KERNEL = Path(__file__).parent / "ktir" / "kernels" / "scale_add.mlir"


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    return a, b


@pytest.mark.parametrize("rows", [16, 8])
def test_constants_specialise_the_kernel_and_match_the_interpreter(rows):
    """ROWS bounds each core's loop and places its first row; alpha scales through a splat.
    With ROWS=8 the cores cover rows 0..31 only, in both runs."""
    constants = {"ROWS": rows, "alpha": 0.5}
    exe = spyrec.compile(KERNEL, constants=constants, cache=False, numerics="ieee")
    assert json.loads(exe.binary.provenance[CONSTANTS_KEY]) == constants
    a, b = _inputs()
    got = exe(torch.from_numpy(a), torch.from_numpy(b))
    assert isinstance(got, torch.Tensor)
    want = spyrec.ktir.execute(KERNEL, "scale_add", a=a, b=b, c=np.zeros_like(a),
                               **constants)["c"]
    np.testing.assert_array_equal(got.numpy(), want)
    assert np.any(want[: 4 * rows] != 0) and not np.any(want[4 * rows:])


def test_run_check_uses_the_recorded_constants_and_catches_other_values(tmp_path):
    """`run --check` passes the interpreter the recorded values: the binary matches. A binary
    whose record says ROWS=8 while its code was specialised for 16 (an injected bug: the
    check's reference then computes half the rows) must fail the check, exit status 1."""
    runner = CliRunner()
    binary = tmp_path / "k.spyre"
    res = runner.invoke(main, ["compile", str(KERNEL), "--arg", "ROWS=16", "--arg",
                               "alpha=0.5", "-o", str(binary), "--no-cache"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["run", str(binary), "--check", str(KERNEL), "--numerics",
                               "ieee"])
    assert res.exit_code == 0, res.output
    assert "kernel constants: ROWS=16, alpha=0.5" in res.output and "c: ok" in res.output
    wrong = read_spyre(binary)
    wrong.provenance[CONSTANTS_KEY] = json.dumps({"ROWS": 8, "alpha": 0.5})
    write_spyre(wrong, tmp_path / "wrong.spyre")
    res = runner.invoke(main, ["run", str(tmp_path / "wrong.spyre"), "--check", str(KERNEL),
                               "--numerics", "ieee"])
    assert res.exit_code == 1 and "c: FAILED" in res.output


@pytest.mark.parametrize("constants,message", [
    ({"ROWS": 16}, ("argument %alpha is a scalar (f32); give its value at compile time: "
                    "spyrec compile ... --arg alpha=VALUE")),
    ({}, ("argument %ROWS is a scalar (it is not the offset of a memory view); give its value "
          "at compile time: spyrec compile ... --arg ROWS=VALUE")),
    ({"ROWS": 16, "alpha": 0.5, "rows": 4}, ("--arg rows: the kernel has no argument %rows; "
                                             "its arguments are %a, %b, %c, %ROWS, %alpha")),
    ({"ROWS": 16, "alpha": 0.5, "a": 0}, ("--arg a: %a is a tensor address (the offset of a "
                                          "memory view)")),
    ({"ROWS": 1.5, "alpha": 0.5}, "--arg ROWS=1.5: %ROWS is index; give an integer"),
    ({"ROWS": 2 ** 64, "alpha": 0.5}, "out of the range of index"),
])
def test_scalar_arguments_refused_by_name(constants, message):
    with pytest.raises(CompileError) as info:
        import_ktir(KERNEL, None, SpyreTarget(), constants)
    assert message in str(info.value)


POINTER_ARITHMETIC = """
module {
  func.func @row_per_core(%in: index, %out: index) attributes {grid = [4, 1]} {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %pid = ktdp.get_compute_tile_id : index
    %off = arith.muli %pid, %c64 : index
    %row = arith.addi %in, %off : index
    %v = ktdp.construct_memory_view %row, sizes: [1, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<1x64xf16>
    %o = ktdp.construct_memory_view %out, sizes: [4, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<4x64xf16>
    %t = ktdp.construct_access_tile %v[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>}
      : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
    %u = ktdp.construct_access_tile %o[%pid, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>}
      : memref<4x64xf16> -> !ktdp.access_tile<1x64xindex>
    %x = ktdp.load %t : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    ktdp.store %x, %u : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    return
  }
}
"""


def test_pointer_arithmetic_is_not_called_a_scalar(tmp_path):
    """`%in + offset` viewed as a row is offset arithmetic into %in's memory: a whole-row
    offset linear in the core id is a view of the whole tensor (design note 83; it runs
    against the interpreter in test_ktir_runtime_args.py), and binding %in is refused as
    binding a tensor address."""
    path = tmp_path / "k.mlir"
    path.write_text(POINTER_ARITHMETIC)
    import_ktir(path, None, SpyreTarget())
    with pytest.raises(CompileError, match="%in is a tensor address"):
        import_ktir(path, None, SpyreTarget(), {"in": 0})


# The constructs of Triton-generated kernels (triton_style.mlir): each compiled kernel must
# match the interpreter, in the tolerance model of `spyrec.verdict` on the device's DL16.
STYLE = Path(__file__).parent / "ktir" / "kernels" / "triton_style.mlir"


def _compiled_and_interpreted(function, constants, inputs, outputs):
    exe = spyrec.compile(STYLE, function=function, constants=constants, cache=False)
    got = exe(*(torch.from_numpy(x) for x in inputs.values()))
    zeros = {n: np.zeros(s, np.float16) for n, s in outputs.items()}
    want = spyrec.ktir.execute(STYLE, function, **constants, **inputs, **zeros)
    return exe, got, torch.from_numpy(np.asarray(want[next(iter(outputs))]))


def _row_softmax():
    x = np.random.default_rng(1).standard_normal((32, 64)).astype(np.float16)
    return _compiled_and_interpreted("row_softmax", {"n_rows": 32}, {"x_ptr": x},
                                     {"y_ptr": (32, 64)})


def test_extract_splat_f16_reductions_and_dense_constants_match():
    """Row max and sum reduced into f16 accumulators (f32 sums rounded once), extracted and
    splat back over the row, a dense<2.0> multiplier: the compiled softmax matches."""
    exe, got, want = _row_softmax()
    assert check_outputs([want], got, exe).ok
    np.testing.assert_allclose(want.float().sum(-1).numpy(), 2.0, rtol=1e-2)


def test_matmul_into_an_f16_empty_init_matches():
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((32, 64)) / 8).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    exe, got, want = _compiled_and_interpreted("matmul_f16_init", {}, {"a_ptr": a, "b_ptr": b},
                                               {"c_ptr": (32, 64)})
    assert check_outputs([want], got, exe).ok


def test_the_check_catches_a_wrong_construct(monkeypatch):
    """An injected bug (dense constants filled with their value plus 1: y = 3 p instead of
    2 p) must fail the same comparison the tests above pass."""
    legal = spyre_legalize_ktir._Kernel
    right = legal.constant
    monkeypatch.setattr(legal, "constant", lambda self, value, op: right(self, value, op) + (
        1.0 if isinstance(op, linalg.FillOp) and right(self, value, op) == 2.0 else 0.0))
    exe, got, want = _row_softmax()
    assert not check_outputs([want], got, exe).ok


def test_extract_at_another_index_is_refused(tmp_path):
    """An extract past the one element of a row statistic is not read as element 0."""
    path = tmp_path / "k.mlir"
    path.write_text(STYLE.read_text().replace("tensor.extract %m[%c0]", "tensor.extract %m[%c4]"))
    with pytest.raises(CompileError, match=r"tensor.extract \(%ms\): it reads %m "
                                           r"\(tensor<1xf16>\) at an index that is not the "
                                           "constant 0"):
        spyrec.compile(path, function="row_softmax", constants={"n_rows": 32}, cache=False)


FOLDS = """
func.func @k(%n: index) {
  %c3 = arith.constant 3 : index
  %q = arith.floordivsi %n, %c3 : index
  %r = arith.remsi %n, %c3 : index
  %i = arith.index_cast %q : index to i32
  %f = arith.sitofp %i : i32 to f16
  %m = arith.constant -1 : i8
  %u = arith.uitofp %m : i8 to f32
  %t = arith.truncf %u : f32 to f16
  func.return
}
"""


@pytest.mark.parametrize("n,expected", [
    (-7, ["-3 : index", "-1 : index", "-3 : i32", "-3.000000e+00 : f16", "2.550000e+02 : f32",
          "2.550000e+02 : f16"]),
    (8193, ["2731 : index", "0 : index", "2731 : i32", "2.732000e+03 : f16"]),
])
def test_folds_compute_as_the_interpreter(n, expected):
    """Signed floor division and remainder of a negative value, an index cast, integer to
    f16 conversions rounded to f16 (2731 is 2732 in f16), an i8 read as unsigned (255)."""
    from spyrec.dialects.ktdp_parse import parse_ktir

    kernel = next(iter(parse_ktir(FOLDS).body.block.ops))
    specialise(kernel, {"n": n}, "k")  # type: ignore[arg-type]
    text = str(kernel)
    assert "floordivsi" not in text and "sitofp" not in text and "uitofp" not in text
    for value in expected:
        assert f"arith.constant {value}" in text
