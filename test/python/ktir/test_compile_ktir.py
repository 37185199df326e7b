"""Hand-written KTIR through the compiler: `spyrec compile kernel.mlir` + the emulator give
what the KTIR reference interpreter gives on the same inputs; what the compiler does not
take yet is refused with an error naming the kernel and the op."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

import spyrec
from spyrec.cli import main
from spyrec.diagnostics import CompileError
from spyrec.driver import compile_program
from spyrec.ktir import execute
from spyrec.verdict import Verdict, check_outputs

CONFORMANCE = Path(__file__).parents[2] / "ktir" / "conformance"

ACCEPTED = [("vector_add", "vector_add"), ("softmax", "softmax"), ("matmul", "matmul"),
            ("rmsnorm", "rmsnorm_rows"), ("rmsnorm", "rmsnorm_hidden_sharded"),
            ("ffn_swiglu", "ffn_swiglu_1core")]


def compile_and_compare(tmp_path: Path, file: str, function: str,
                        numerics: str) -> tuple[list[tuple[float, float]], Verdict]:
    """(max error, scale) per output of the emulator against the interpreter, and the
    verdict of `spyrec.verdict.check_outputs`."""
    source = CONFORMANCE / f"{file}.mlir"
    binary = tmp_path / f"{function}.spyre"
    compile_program(source, binary, function=function)
    exe = spyrec.load(binary, numerics=numerics)
    rng = np.random.default_rng(7)
    args: dict[str, np.ndarray] = {}
    inputs = []
    for b in exe.binary.inputs:
        array = rng.standard_normal(b.layout.shape).astype(b.layout.host_dtype)
        args[b.name] = array
        inputs.append(torch.from_numpy(array))
    for b in exe.binary.outputs:
        args[b.name] = np.zeros(b.layout.shape, dtype=b.layout.host_dtype)
    expected = execute(source, function, **args)
    outputs = exe(*inputs)
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    result = []
    for b, out in zip(exe.binary.outputs, outputs):
        ref = expected[b.name].astype(np.float64)
        result.append((float(np.abs(ref - out.double().numpy()).max()),
                       float(np.abs(ref).max())))
    references = [torch.from_numpy(expected[b.name]) for b in exe.binary.outputs]
    return result, check_outputs(references, list(outputs), exe)


@pytest.mark.parametrize(("file", "function"), ACCEPTED)
def test_compiled_kernel_matches_interpreter_ieee(tmp_path, file, function):
    # IEEE 16-bit storage: the same roundings as the interpreter, up to fp32 op order
    for err, scale in compile_and_compare(tmp_path, file, function, "ieee")[0]:
        assert err <= 2 ** -10 * max(scale, 1.0), (err, scale)


@pytest.mark.parametrize(("file", "function"), ACCEPTED)
def test_compiled_kernel_matches_interpreter_dl16(tmp_path, file, function):
    verdict = compile_and_compare(tmp_path, file, function, "dl16")[1]
    assert verdict.ok, str(verdict)


@pytest.mark.parametrize(("file", "function", "message"), [
    ("layernorm", None, "the 8x1 LX tile does not match the 1x8 block"),
    ("rope", None, "the SFU broadcasts along rows or columns only"),
    ("sdpa", None, "tensor.collapse_shape (%qm): no Spyre engine operation"),
    ("gather_scatter", "gather", "direct access tiles only"),
    ("symbolic_sizes", None, "argument %m is a !ktdp.runtime_arg"),
    ("ffn_swiglu", None, "defines 2 functions"),
])
def test_refused_kernels_name_the_op(tmp_path, file, function, message):
    with pytest.raises(CompileError) as info:
        compile_program(CONFORMANCE / f"{file}.mlir", tmp_path / "k.spyre", function=function)
    assert message in str(info.value)
    assert not (tmp_path / "k.spyre").exists()


def test_cli_compiles_and_runs_a_kernel(tmp_path):
    out = tmp_path / "softmax.spyre"
    runner = CliRunner()
    result = runner.invoke(main, ["compile", str(CONFORMANCE / "softmax.mlir"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.exists()
    result = runner.invoke(main, ["run", str(out), "--check", str(CONFORMANCE / "softmax.mlir")])
    assert result.exit_code == 0, result.output
    assert "emulated time" in result.output and "y: ok" in result.output
    assert "ok" in result.output
    result = runner.invoke(main, ["compile", str(CONFORMANCE / "softmax.mlir"), "--emit", "ktir"])
    assert result.exit_code == 0 and 'spyre.fn = "reduce_max"' in result.output


def test_compile_of_a_kernel_with_a_parse_error_is_located(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @k(%a: index) attributes {grid = [1, 1]} {\n  %x = ktdp.nope\n}\n")
    with pytest.raises(CompileError) as info:
        compile_program(bad, tmp_path / "bad.spyre")
    assert f"{bad}:3:1:" in str(info.value) and "ktdp.nope" in str(info.value)


def test_unused_argument_is_named(tmp_path):
    source = tmp_path / "unused.mlir"
    source.write_text("func.func @k(%a: index) attributes {grid = [1, 1]} {\n"
                      "  func.return\n}\n")
    with pytest.raises(CompileError, match="argument %a is never used"):
        compile_program(source, tmp_path / "k.spyre")


TRANSPOSED_EXP = """#s = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#t = affine_map<(d0, d1) -> (d1, d0)>
#i = affine_map<(d0, d1) -> (d0, d1)>
func.func @k(%a: index, %b: index) attributes {grid = [1, 1]} {
  %va = ktdp.construct_memory_view %a, sizes: [64, 64], strides: [64, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<64x64xf32>
  %vb = ktdp.construct_memory_view %b, sizes: [64, 64], strides: [64, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<64x64xf32>
  %ta = ktdp.construct_access_tile %va[0, 0] {access_tile_set = #s, access_tile_order = #t} : memref<64x64xf32> -> !ktdp.access_tile<64x64xindex>
  %x = ktdp.load %ta : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf32>
  %y = math.exp %x : tensor<64x64xf32>
  %tb = ktdp.construct_access_tile %vb[0, 0] {access_tile_set = #s, access_tile_order = #i} : memref<64x64xf32> -> !ktdp.access_tile<64x64xindex>
  ktdp.store %y, %tb : tensor<64x64xf32>, !ktdp.access_tile<64x64xindex>
  func.return
}
"""


def test_transposed_tile_read_by_the_sfu_is_refused(tmp_path):
    # the DMA puts the block in LX as stored; only the PT can read it transposed (matmul_nt)
    source = tmp_path / "transposed.mlir"
    source.write_text(TRANSPOSED_EXP)
    with pytest.raises(CompileError, match="only a matmul's B operand can be read that way"):
        compile_program(source, tmp_path / "k.spyre")

