# ruff: noqa: E501  (the MLIR snippets keep one op per line)
"""Hand-written KTIR through the compiler: `spyrec compile kernel.mlir` + the emulator give
what the KTIR reference interpreter gives on the same inputs; what the compiler does not
take yet is refused with an error naming the kernel and the op."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
            ("ffn_swiglu", "ffn_swiglu_1core"),
            # a row operand loaded before the loop, computed on inside it (not in place)
            ("row_operand_outside_loop", "scale_by_exp"),
            # Q's collapse (note 108), the causal mask of a scaled score (note 109) and K
            # transposed through the 3-D order (d0, d2, d1), a matmul's B as stored
            ("sdpa", "sdpa"),
            # mean and rstd, 8-value columns, stored into vectors in blocks of one
            # element (spyrec/frontend/ktir_blocks.py, note 112)
            ("layernorm", "layernorm")]


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
    ("rope", None, "the SFU broadcasts along rows or columns only"),
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



def test_a_tile_set_other_than_its_whole_block_is_refused(tmp_path):
    # The scheduler moves a tile as the block of its type from the base coordinate. Before
    # this check, the softmax below with its load set shifted one row down ([1, 8], base
    # 8 * id - 1: the same rows for the interpreter) compiled, and its DMAs read rows
    # 8 * id - 1 .. 8 * id + 6 (core 0 faulted at address -512, the others read wrong rows).
    text = (CONFORMANCE / "softmax.mlir").read_text()
    shifted = text.replace(
        "%tx = ktdp.construct_access_tile %vx[%id * 8, 0] {access_tile_set = #block",
        "%tx = ktdp.construct_access_tile %vx[%id * 8 - 1, 0] {access_tile_set = #shift")
    shifted = shifted.replace("#id2 = affine_map", "#shift = affine_set<(d0, d1) : "
                              "(d0 - 1 >= 0, -d0 + 8 >= 0, d1 >= 0, -d1 + 255 >= 0)>\n"
                              "#id2 = affine_map", 1)
    # a set smaller than its block is refused by the op's own verifier, before the back end
    tail = text.replace("-d0 + 7 >= 0, d1 >= 0, -d1 + 255", "-d0 + 5 >= 0, d1 >= 0, -d1 + 255")
    for name, source, message in (
            ("shifted", shifted, (r"ktdp.construct_access_tile %tx: its access_tile_set .* is "
                                  r"not the whole \[8, 256\] block")),
            ("tail", tail, "access tile dim 0 is 8 but access_tile_set spans 6")):
        assert source != text
        path = tmp_path / f"{name}.mlir"
        path.write_text(source)
        with pytest.raises(CompileError, match=message):
            compile_program(path, tmp_path / f"{name}.spyre")
        assert not (tmp_path / f"{name}.spyre").exists()


def short_view_vector_add(tmp_path: Path) -> Path:
    """The conformance vector add with a's view cut to 8064 elements: core 31's second
    chunk (elements 8064..8191) is past it, exactly where b starts in LPDDR."""
    text = (CONFORMANCE / "vector_add.mlir").read_text()
    text = text.replace(
        "%va = ktdp.construct_memory_view %a, sizes: [8192], strides: [1] {coordinate_set = "
        "#all, memory_space = #ktdp.memory_space<global>} : memref<8192xf32>",
        "%va = ktdp.construct_memory_view %a, sizes: [8064], strides: [1] {coordinate_set = "
        "#all, memory_space = #ktdp.memory_space<global>} : memref<8064xf32>")
    text = text.replace("%va[%id * 256 + %off] {access_tile_set = #chunk, access_tile_order = "
                        "#id1} : memref<8192xf32>", "%va[%id * 256 + %off] {access_tile_set = "
                        "#chunk, access_tile_order = #id1} : memref<8064xf32>")
    assert text.count("8064xf32") == 2
    source = tmp_path / "short_view.mlir"
    source.write_text(text)
    return source


def test_tile_past_its_view_is_refused_at_compile_time(tmp_path):
    # Before issue 18 this compiled, and on the emulator core 31 read b's first 128 values
    # as a's (only `run --check` against the interpreter noticed).
    source = short_view_vector_add(tmp_path)
    with pytest.raises(CompileError) as info:
        compile_program(source, tmp_path / "k.spyre")
    assert str(info.value) == (
        "kernel @vector_add, core 31 (x=31, y=0) at %off = 128: ktdp.load (%xa) loads tile "
        "%ta at coordinates [8064..8191], outside view %va (memref<8064xf32>), whose extent is "
        "[0..8063] (dim 0 reaches 8191): its DMA would read past the tensor, another tensor's "
        "bytes; keep every core's tiles within their view; if the lanes past the view's end "
        "are a tail meant to be dropped (Triton's masked tail), mask the tile (ktdp.masked, or "
        "compile with --masked-tails: docs/ktir.md §7)")
    assert not (tmp_path / "k.spyre").exists()
    result = CliRunner().invoke(main, ["compile", str(source), "-o", str(tmp_path / "k.spyre")])
    assert result.exit_code == 1 and "core 31 (x=31, y=0) at %off = 128" in result.output


@pytest.mark.parametrize("model", ["mlp", "decoder"])
def test_pytorch_path_kernels_are_in_bounds(model):
    # convert-spyre-to-ktir's kernels pass the same check (the back end does not run it on
    # them: they are in bounds by construction, and the check costs seconds on Granite)
    from xdsl.dialects.func import FuncOp

    from spyrec.dialects.ktdp import LoadOp
    from spyrec.passes.ktir.ktir_bounds import check_tile_bounds
    from spyrec.zoo import ZOO

    module, inputs = ZOO[model].build(torch.float16, 64, 64)
    result = compile_program(torch.export.export(module, inputs), stop_after="ktir")
    assert result.module is not None
    kernels = [op for op in result.module.walk()
               if isinstance(op, FuncOp) and "grid" in op.attributes]
    assert kernels and any(isinstance(op, LoadOp) for k in kernels for op in k.walk())
    for kernel in kernels:
        check_tile_bounds(kernel)


def test_check_against_another_kernel_is_refused_cleanly(tmp_path):
    # `run k.spyre --check kernel.mlir` feeds the binary's inputs to the interpreter: a
    # kernel whose views do not fit them is named, not run on reinterpreted bytes
    binary = tmp_path / "vector_add.spyre"
    compile_program(CONFORMANCE / "vector_add.mlir", binary)
    other = tmp_path / "other.mlir"
    other.write_text((CONFORMANCE / "vector_add.mlir").read_text().replace("8192", "4096")
                     .replace("8191", "4095").replace("c256 = arith.constant 256",
                                                      "c256 = arith.constant 128"))
    result = CliRunner().invoke(main, ["run", str(binary), "--check", str(other)])
    assert result.exit_code == 1, result.output
    assert ("@vector_add: argument %a is 8192 float32, but the kernel views it through view "
            "%va (memref<4096xf32>): pass an array of shape 4096 and dtype float32") in \
        result.output


GUARDED_COPY = """#v = affine_set<(d0, d1) : (d0 >= 0, -d0 + 95 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#y_set = affine_set<(d0, d1) : (d0 >= LOW, -d0 + HIGH >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @guarded(%x: index, %y: index) attributes {grid = [32, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %c24 = arith.constant 24 : index
  %vx = ktdp.construct_memory_view %x, sizes: [96, 64], strides: [64, 1] {coordinate_set = #v, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [96, 64], strides: [64, 1] {coordinate_set = #y_set, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  %inside = arith.cmpi ult, %id, %c24 : index
  scf.if %inside {
    %tx = ktdp.construct_access_tile %vx[%id * 4, 0] {access_tile_set = #rows, access_tile_order = #id2} : memref<96x64xf16> -> !ktdp.access_tile<4x64xindex>
    %t = ktdp.load %tx : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf16>
    %ty = ktdp.construct_access_tile %vy[%id * 4 + LOW, 0] {access_tile_set = #rows, access_tile_order = #id2} : memref<96x64xf16> -> !ktdp.access_tile<4x64xindex>
    ktdp.store %t, %ty : tensor<4x64xf16>, !ktdp.access_tile<4x64xindex>
  }
  func.return
}
"""


def test_view_of_part_of_a_tensor_is_refused(tmp_path):
    # y's set holds global rows 64..159: KTIR reads row r at r - 64, the back end read it
    # at r (core 8's store went past the allocation; elsewhere it would land in a
    # neighbour). Refused; the same kernel with the set from row 0 compiles and matches.
    source = tmp_path / "part.mlir"
    source.write_text(GUARDED_COPY.replace("LOW", "64").replace("HIGH", "159"))
    with pytest.raises(CompileError, match=r"the view of %y holds coordinates from \[64, 0\] "
                       r"on \(its coordinate_set\); the compiler takes views of whole tensors"):
        compile_program(source, tmp_path / "k.spyre")
    source.write_text(GUARDED_COPY.replace("LOW", "0").replace("HIGH", "95"))
    compile_program(source, tmp_path / "k.spyre")
    x = np.random.default_rng(3).standard_normal((96, 64)).astype(np.float16)
    y = spyrec.load(tmp_path / "k.spyre", numerics="ieee")(torch.from_numpy(x))  # no DL16
    assert isinstance(y, torch.Tensor)
    np.testing.assert_array_equal(y.numpy(), execute(source, "guarded", x=x,
                                                     y=np.zeros_like(x))["y"])
    np.testing.assert_array_equal(y.numpy(), x)


def test_bf16_kernel_checks_against_the_interpreter(tmp_path):
    """`run k.spyre --check kernel.mlir` hands bf16 inputs to the interpreter (NumPy has
    no bf16 of its own: ml_dtypes'), no traceback."""
    kernel = tmp_path / "add_bf16.mlir"
    kernel.write_text((Path(__file__).parent / "kernels" / "vector_add.mlir").read_text()
                      .replace("xf16>", "xbf16>"))
    binary = tmp_path / "add.spyre"
    runner = CliRunner()
    result = runner.invoke(main, ["compile", str(kernel), "--function", "add", "-o",
                                  str(binary)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["run", str(binary), "--check", str(kernel)])
    assert result.exit_code == 0, result.output
    assert "c: ok" in result.output


def _maxnum_run(tmp_path, source: Path, dtype: type, seed: int,
                special: tuple[tuple[str, Any, float], ...] = ()):
    """Compile `@maxnum` of `source`, run it in IEEE numerics and in the interpreter on
    inputs with NaN and +-inf; (outputs, the interpreter's arrays, output names)."""
    binary = tmp_path / f"{source.stem}.spyre"
    compile_program(source, binary, function="maxnum")
    exe = spyrec.load(binary, numerics="ieee")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((16, 128)).astype(dtype)
    b = rng.standard_normal((16, 128)).astype(dtype)
    a[0, 3] = b[1, 4] = a[2, 5] = b[2, 5] = np.nan
    a[4, 0], b[5, 1] = np.inf, -np.inf
    for which, at, value in special:  # (input, index, value)
        (a if which == "a" else b)[at] = value
    expected = execute(source, "maxnum", a=a, b=b, out=np.zeros_like(a), rmax=np.zeros_like(a))
    outputs = exe(torch.from_numpy(a), torch.from_numpy(b))
    return list(outputs), expected, [o.name for o in exe.binary.outputs], exe


def test_maxnum_and_minnum_drop_nan_as_the_interpreter_does(tmp_path):
    """arith.maxnumf / minnumf (what Triton's tl.maximum emits) drop a NaN operand; the SFU's
    MAX / MIN propagate it, so the compiled kernel replaces NaN operands exactly with KEEP
    first (design note 63). Elementwise and as row reductions, on NaN, +-inf and a row of
    NaN, the emulator gives the interpreter's classes and values."""
    source = Path(__file__).parent / "kernels" / "maxnum_nan.mlir"
    outputs, expected, names, exe = _maxnum_run(tmp_path, source, np.float32, 0,
                                                (("a", 3, np.nan),))  # a row of NaN
    references = [torch.from_numpy(expected[name]) for name in names]
    verdict = check_outputs(references, outputs, exe)
    assert verdict.ok, str(verdict)
    for ref, out in zip(references, outputs):
        assert torch.equal(torch.isnan(ref), torch.isnan(out))
    assert not torch.isnan(outputs[0][0]).any()  # maxnum(NaN, y) is y


def test_f16_maxnum_keeps_infinities_and_drops_nan(tmp_path):
    """The same kernel in f16: the NaN test clamps to f16's largest finite value (a clamp
    to FLT_MAX rounds back to inf in an f16 result, and inf - inf would read as NaN); the
    compiler crashed building that constant before. An f16 +-inf survives maxnum / minnum,
    NaN operands are dropped, bit for bit as the interpreter."""
    text = (Path(__file__).parent / "kernels" / "maxnum_nan.mlir").read_text()
    text = text.replace("f32", "f16").replace("0xFF800000 : f16", "0xFC00 : f16").replace(
        "0x7F800000 : f16", "0x7C00 : f16")
    source = tmp_path / "maxnum_half.mlir"
    source.write_text(text)
    special = (("a", (6, 2), np.inf), ("b", (6, 2), np.nan))
    outputs, expected, names, _ = _maxnum_run(tmp_path, source, np.float16, 1, special)
    out = outputs[names.index("out")].numpy()
    assert np.array_equal(out, expected["out"], equal_nan=True)
    # minnum(maxnum(x, y), y): -inf from y survives, and inf where y is NaN
    assert out[5, 1] == -np.inf and out[6, 2] == np.inf


def test_an_op_of_two_broadcast_columns_is_refused(tmp_path):
    """sfu.colwise broadcasts one column operand; two would leave the first read as a
    full-width tile of which only column 0 is written: refused, naming the op."""
    text = (Path(__file__).parent / "kernels" / "maxnum_nan.mlir").read_text().replace(
        """  %rc = arith.subf %rm, %rn : tensor<4xf32>
  %rcb = linalg.broadcast ins(%rc : tensor<4xf32>) outs(%e : tensor<4x128xf32>) dimensions = [1]
  %rs = arith.addf %rcb, %x : tensor<4x128xf32>""",
        """  %rmb = linalg.broadcast ins(%rm : tensor<4xf32>) outs(%e : tensor<4x128xf32>) dimensions = [1]
  %rnb = linalg.broadcast ins(%rn : tensor<4xf32>) outs(%e : tensor<4x128xf32>) dimensions = [1]
  %rs = arith.addf %rmb, %rnb : tensor<4x128xf32>""")
    source = tmp_path / "two_columns.mlir"
    source.write_text(text)
    with pytest.raises(CompileError, match="both operands are columns broadcast along the row"):
        compile_program(source, tmp_path / "k.spyre", function="maxnum")


def test_a_maxnum_reduction_from_a_nan_init_is_refused(tmp_path):
    """maxnumf folded from a NaN init drops it at the first element that is not NaN and
    keeps it for a row of NaN; the SFU's row MAX combined with the init cannot tell the two
    (a device result NaN where the interpreter's is the row's max): refused, naming the op,
    rather than computed. The identity init (-inf) compiles, as above."""
    text = (Path(__file__).parent / "kernels" / "maxnum_nan.mlir").read_text().replace(
        "%ninf = arith.constant 0xFF800000 : f32", "%ninf = arith.constant 0x7FC00000 : f32")
    source = tmp_path / "nan_init.mlir"
    source.write_text(text)
    with pytest.raises(CompileError, match=r"arith.maxnumf from an init that is not a number "
                                           r"constant .* reduce from the identity constant"):
        compile_program(source, tmp_path / "k.spyre", function="maxnum")
