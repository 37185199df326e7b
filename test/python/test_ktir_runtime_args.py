"""Run-time scalar arguments of hand-written KTIR kernels (design note 83): `spyrec compile
k.mlir --arg n_rows=?` leaves a row count to run time as a symbolic size, `spyrec run
k.spyre --arg n_rows=N` (or the rows of the inputs) gives it per call, the host pads and
crops, and `run --check k.mlir` runs the interpreter with the same value. What the host
cannot correct per call is refused by name at compile time; a value out of the compiled
range is refused at run time."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

import spyrec
import spyrec.ktir
from spyrec.cli import main
from spyrec.diagnostics import CompileError
from spyrec.frontend.ktir_input import import_ktir
from spyrec.frontend.ktir_runtime_args import RuntimeArg
from spyrec.runtime.emulator import InputError
from spyrec.target import SpyreTarget
from spyrec.target.container import read_spyre, write_spyre

KERNEL = Path(__file__).parent / "ktir" / "kernels" / "row_scale.mlir"


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rt") / "rows.spyre"
    res = CliRunner().invoke(main, ["compile", str(KERNEL), "--arg", "n_rows=?", "-o",
                                    str(path), "--no-cache"])
    assert res.exit_code == 0, res.output
    return path


def test_inspect_lists_the_run_time_argument(binary):
    res = CliRunner().invoke(main, ["inspect", str(binary)])
    assert res.exit_code == 0, res.output
    assert "run-time argument n_rows: 1..64" in res.output
    assert "input in_ptr: [n_rows, 64] float16" in res.output
    assert "output out_ptr: [n_rows, 64] float16" in res.output


@pytest.mark.parametrize("rows", [1, 10, 64])
def test_python_call_takes_the_rows_and_matches_the_interpreter(binary, rows):
    """The call's rows are the value: the interpreter, given n_rows and the tensor padded to
    the kernel's 64 rows, computes the same first `rows` rows; the guards skip the rest."""
    exe = spyrec.load(binary, numerics="ieee")
    x = np.random.default_rng(rows).standard_normal((rows, 64)).astype(np.float16)
    got = exe(torch.from_numpy(x))
    assert isinstance(got, torch.Tensor) and tuple(got.shape) == (rows, 64)
    padded = np.pad(x, [(0, 64 - rows), (0, 0)])
    want = spyrec.ktir.execute(KERNEL, "row_scale", in_ptr=padded,
                               out_ptr=np.zeros_like(padded), n_rows=rows)["out_ptr"]
    np.testing.assert_array_equal(got.numpy(), want[:rows])
    assert exe.last_profile.sizes["n_rows"] == rows


def test_run_check_passes_the_value_and_catches_an_injected_bug(binary, tmp_path):
    """`run --arg n_rows=10 --check` matches; a binary whose trip-count patches skip the last
    real rows (thresholds raised by 4: an injected bug in the per-call correction) fails."""
    runner = CliRunner()
    args = ["--arg", "n_rows=10", "--check", str(KERNEL), "--numerics", "ieee"]
    res = runner.invoke(main, ["run", str(binary), *args])
    assert res.exit_code == 0, res.output
    assert "run-time arguments: n_rows=10" in res.output and "out_ptr: ok" in res.output
    wrong = read_spyre(binary)
    assert wrong.patches
    wrong.patches = [replace(p, thresholds=tuple(min(t + 4, 64) for t in p.thresholds))
                     for p in wrong.patches]
    write_spyre(wrong, tmp_path / "wrong.spyre")
    res = runner.invoke(main, ["run", str(tmp_path / "wrong.spyre"), *args])
    assert res.exit_code == 1 and "out_ptr: FAILED" in res.output


def test_a_value_out_of_range_is_refused_by_name(binary):
    res = CliRunner().invoke(main, ["run", str(binary), "--arg", "n_rows=65"])
    assert res.exit_code != 0
    assert "--arg n_rows=65: outside the range 1..64 the binary was compiled for" in res.output
    exe = spyrec.load(binary)
    with pytest.raises(InputError, match="size 65 is outside the range \\[1, 64\\] of "
                                         "symbolic size 'n_rows'"):
        exe(torch.zeros(65, 64, dtype=torch.float16))


def _kernel(tmp_path: Path, loop: str, extra: str = "", args: str = "%n_rows: index") -> Path:
    """A row kernel around `loop` (the body of the kernel after its views)."""
    text = KERNEL.read_text()
    head, _, rest = text.partition("    scf.for")
    _, _, tail = rest.partition("    }\n    return")
    path = tmp_path / "k.mlir"
    path.write_text(head.replace("%n_rows: index", args) + extra + loop + "    return" + tail)
    return path


ROW_TILE = ("{access_tile_set = #row, access_tile_order = #id} : memref<64x64xf16> -> "
            "!ktdp.access_tile<1x64xindex>")
LOAD = "ktdp.load %ti : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>"
STORE = "ktdp.store %x, %to : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>"


@pytest.mark.parametrize("loop,message", [
    (f"""    %n1 = arith.addi %n_rows, %c4 : index
    scf.for %r = %pid to %n1 step %c4 {{
      %ti = ktdp.construct_access_tile %vin[%r, %c0] {ROW_TILE}
      %to = ktdp.construct_access_tile %vout[%r, %c0] {ROW_TILE}
      %x = {LOAD}
      {STORE}
    }}
""", ("%n_rows is used by arith.addi (%n1) (as a value, not as the upper bound of an scf.for "
     "over rows), which the host cannot correct per call; bind it at compile time instead "
     "(spyrec compile ... --arg n_rows=VALUE)")),
    (f"""    scf.for %r = %pid to %n_rows step %c4 {{
      %c1 = arith.constant 1 : index
      %r1 = arith.addi %r, %c1 : index
      %ti = ktdp.construct_access_tile %vin[%r, %c0] {ROW_TILE}
      %to = ktdp.construct_access_tile %vout[%r1, %c0] {ROW_TILE}
      %x = {LOAD}
      {STORE}
    }}
""", ("a store inside the loop it bounds (ktdp.construct_access_tile (%to)) does not address "
     "one row at the loop's index")),
    (f"""    %t0 = ktdp.construct_access_tile %vin[%c0, %c0] {ROW_TILE}
    %x0 = ktdp.load %t0 : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    scf.for %r = %pid to %n_rows step %c4 {{
      %ti = ktdp.construct_access_tile %vin[%r, %c0] {ROW_TILE}
      %to = ktdp.construct_access_tile %vout[%r, %c0] {ROW_TILE}
      %x = {LOAD}
      {STORE}
    }}
""", ("%in_ptr is read or written by ktdp.construct_access_tile (%t0) outside one row at the "
     "index of a loop bounded by %n_rows")),
])
def test_what_the_host_cannot_correct_is_refused_by_name(tmp_path, loop, message):
    path = _kernel(tmp_path, loop)
    with pytest.raises(CompileError, match="--arg n_rows") as info:
        import_ktir(path, None, SpyreTarget(), {"n_rows": RuntimeArg()})
    assert message in str(info.value)


def test_a_range_past_the_rows_and_a_float_argument_are_refused(tmp_path):
    with pytest.raises(CompileError, match=r"the range must be LO\.\.64 with 1 <= LO"):
        import_ktir(KERNEL, None, SpyreTarget(), {"n_rows": RuntimeArg(1, 128)})
    loop = KERNEL.read_text().partition("    scf.for")[2].partition("    }\n    return")[0]
    path = _kernel(tmp_path, "    scf.for" + loop + "    }\n",
                   args="%n_rows: index, %eps: f32")
    with pytest.raises(CompileError, match=r"%eps is f32; only an integer argument can be "
                                           r"a run-time size"):
        import_ktir(path, None, SpyreTarget(), {"n_rows": RuntimeArg(), "eps": RuntimeArg()})


RING = Path(__file__).parent / "ktir" / "kernels" / "ring_rank_reduced.mlir"


def test_a_rank_reduced_inter_tile_reduce_runs_and_compiles_to_the_partials_type():
    """The interpreter delivers the 64-element sum of the four rows; the compiler's import
    gives the reduce the partial's type and drops the expand_shape back to it."""
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    out = spyrec.ktir.execute(RING, "ring_sum", in_ptr=x,
                              out_ptr=np.zeros((1, 64), np.float32))["out_ptr"]
    np.testing.assert_allclose(out[0], x.sum(axis=0), rtol=1e-6)
    program = import_ktir(RING, None, SpyreTarget())
    ops = [op.name for op in program.module.walk()]
    assert "tensor.expand_shape" not in ops
    (reduce,) = [op for op in program.module.walk() if op.name == "ktdp.inter_tile_reduce"]
    assert str(reduce.results[0].type) == "tensor<1x64xf32>"


def test_another_use_of_a_rank_reduced_result_is_refused_with_the_rewrite(tmp_path):
    path = tmp_path / "k.mlir"
    path.write_text(RING.read_text().replace(
        "    %first = ", "    %bad = arith.addf %sum, %sum : tensor<64xf32>\n    %first = "))
    with pytest.raises(CompileError, match=r"write `-> tensor<1x64xf32>` and use the result "
                                           r"as the partial's shape"):
        import_ktir(path, None, SpyreTarget())


POINTER = Path(__file__).parent / "ktir" / "kernels" / "ring_pointer.mlir"


def test_pointer_arithmetic_becomes_a_view_of_the_whole_tensor():
    """The row views at %in_ptr + %pid * 64 become one 4x64 view at %in_ptr (the input's
    shape), each tile shifted by %pid rows; the interpreter agrees with the sum."""
    program = import_ktir(POINTER, None, SpyreTarget())
    assert [(s.name, s.shape) for s in program.inputs] == [("in_ptr", (4, 64))]
    assert not [op for op in program.module.walk() if op.name == "arith.addi"
                and any(getattr(v, "name_hint", None) == "in_ptr" for v in op.operands)]
    x = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    out = spyrec.ktir.execute(POINTER, "ring_sum", in_ptr=x,
                              out_ptr=np.zeros((1, 64), np.float32))["out_ptr"]
    np.testing.assert_allclose(out[0], x.sum(axis=0), rtol=1e-6)


def test_a_constant_row_offset_is_a_row_shift_and_half_a_row_is_refused(tmp_path):
    """An offset of 128 elements on every core is 2 rows: the whole tensor has 3. Half a row
    (32 elements) cannot be a row shift: refused by name as pointer arithmetic."""
    path = tmp_path / "k.mlir"
    path.write_text(POINTER.read_text().replace("%offs = arith.muli %pid, %c64",
                                                "%offs = arith.addi %c64, %c64"))
    program = import_ktir(path, None, SpyreTarget())
    assert [(s.name, s.shape) for s in program.inputs] == [("in_ptr", (3, 64))]
    path.write_text(POINTER.read_text().replace("arith.constant 64 : index",
                                                "arith.constant 32 : index"))
    with pytest.raises(CompileError, match="argument %in_ptr is a tensor address offset by "
                                           "integer arithmetic"):
        import_ktir(path, None, SpyreTarget())


ADD_N = Path(__file__).parent / "ktir" / "kernels" / "add_n.mlir"


def test_view_sizes_bound_at_compile_time_are_static_and_unbound_ones_refused():
    """`sizes: [%rows]` with n bound to 1024: the tensors are 1024 elements (the views'
    coordinate sets bound as the interpreter binds them); with n a run-time argument it
    sizes views whose tiles are not masked: refused, saying to mask or bind it
    (test_ktir_masked_backend.py compiles masked ones)."""
    program = import_ktir(ADD_N, None, SpyreTarget(), {"n": 1024})
    assert [(s.name, s.shape) for s in program.inputs] == [("a", (1024,)), ("b", (1024,))]
    with pytest.raises(CompileError, match=r"--arg n: it sizes the view of %a and .* "
                                           r"accesses it unmasked.* bind it"):
        import_ktir(ADD_N, None, SpyreTarget(), {"n": RuntimeArg()})
