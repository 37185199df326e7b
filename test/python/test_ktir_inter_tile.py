# ruff: noqa: E501  (the MLIR snippets keep one op per line)
"""Hand-written inter-tile sums through the compiler (design note 59).

A `ktdp.inter_tile_produce` of one f32 or f16 partial and a `ktdp.inter_tile_reduce` whose
combiner is one `arith.addf` become one `ring.reduce` per core (spyre-legalize-ktir keeps
the pair, spyre-schedule-dataflow emits it). The emulator runs the group's reduction and
checks every core's LX hazards; its outputs must match the KTIR reference interpreter on
the same inputs. What ring.reduce cannot do is refused with an error naming the kernel
and the op.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import assert_close

import spyrec
from spyrec.diagnostics import CompileError
from spyrec.driver import compile_program
from spyrec.ktir import execute

TESTS = Path(__file__).parent
CONFORMANCE = TESTS.parent / "ktir" / "conformance"
KERNELS = TESTS / "ktir" / "kernels"

# The sums of squares of an 8x256 f16 x over a [4, 1] grid (tile i owns columns 64i ..
# 64i+63), reduced to tile 0 alone: ring.reduce's root is core 0, the other cores get no
# result, so the kernel uses it only under scf.if on the tile id. Core 0 scales its own 64
# columns by rsqrt(mean(x^2)).
REDUCE_TO_ONE = """
#x_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#block = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row_of = affine_map<(d0, d1) -> (d0)>
#producers = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
#tile0 = affine_set<(i)[g] : (i == 0)>
#one_group = affine_set<(g) : (g == 0)>
func.func @rms_scale_first(%x: index, %y: index) attributes {grid = [4, 1]} {
  %col, %row = ktdp.get_compute_tile_id : index, index
  %vx = ktdp.construct_memory_view %x, sizes: [8, 256], strides: [256, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<8x256xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [8, 64], strides: [64, 1] {coordinate_set = #block, memory_space = #ktdp.memory_space<global>} : memref<8x64xf16>
  %tx = ktdp.construct_access_tile %vx[0, %col * 64] {access_tile_set = #block, access_tile_order = #id2} : memref<8x256xf16> -> !ktdp.access_tile<8x64xindex>
  %x16 = ktdp.load %tx : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
  %xf = arith.extf %x16 : tensor<8x64xf16> to tensor<8x64xf32>
  %sq = arith.mulf %xf, %xf : tensor<8x64xf32>
  %zero = arith.constant 0.0 : f32
  %z8 = tensor.splat %zero : tensor<8xf32>
  %partial = linalg.reduce { arith.addf } ins(%sq : tensor<8x64xf32>) outs(%z8 : tensor<8xf32>) dimensions = [1]
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #producers -> !ktdp.tile_future<(tensor<8xf32>), groups = #one_group> {
  ^bb0(%gid: index):
    ktdp.yield_partial %partial : tensor<8xf32>
  }
  %ssq = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #tile0, identity(%z8 : tensor<8xf32>) : !ktdp.tile_future<(tensor<8xf32>), groups = #one_group> -> tensor<8xf32> {
  ^bb0(%lhs: tensor<8xf32>, %rhs: tensor<8xf32>):
    %s = arith.addf %lhs, %rhs : tensor<8xf32>
    ktdp.yield_reduced %s : tensor<8xf32>
  }
  %c0 = arith.constant 0 : index
  %root = arith.cmpi eq, %col, %c0 : index
  scf.if %root {
    %inv_n = arith.constant 3.906250e-03 : f32
    %inv_n8 = tensor.splat %inv_n : tensor<8xf32>
    %ms = arith.mulf %ssq, %inv_n8 : tensor<8xf32>
    %r = math.rsqrt %ms : tensor<8xf32>
    %e16 = tensor.empty() : tensor<8x64xf16>
    %out = linalg.generic {indexing_maps = [#id2, #row_of, #id2], iterator_types = ["parallel", "parallel"]} ins(%xf, %r : tensor<8x64xf32>, tensor<8xf32>) outs(%e16 : tensor<8x64xf16>) {
    ^bb0(%v: f32, %rs: f32, %o: f16):
      %n = arith.mulf %v, %rs : f32
      %n16 = arith.truncf %n : f32 to f16
      linalg.yield %n16 : f16
    } -> tensor<8x64xf16>
    %ty = ktdp.construct_access_tile %vy[0, 0] {access_tile_set = #block, access_tile_order = #id2} : memref<8x64xf16> -> !ktdp.access_tile<8x64xindex>
    ktdp.store %out, %ty : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
  }
  func.return
}
"""


def _ring_reduces(binary) -> list[dict[str, object]]:  # a SpyreBinary
    """The fields of every ring.reduce instruction, over every kernel and core."""
    return [instr.named_args() for kernel in binary.kernels
            for program in kernel.programs.values() for instr in program
            if instr.op == "ring.reduce"]


def _refusal(tmp_path: Path, text: str) -> str:
    """The CompileError message compiling the KTIR `text` raises; no binary is written."""
    source = tmp_path / "kernel.mlir"
    source.write_text(text)
    with pytest.raises(CompileError) as info:
        compile_program(source, tmp_path / "k.spyre")
    assert not (tmp_path / "k.spyre").exists()
    return str(info.value)


def _compile_and_compare(tmp_path: Path, source: Path, function: str,
                         numerics: str = "dl16"):
    """Compile, run on the emulator and on the interpreter with the same random inputs;
    returns the compile result and the emulator's profile warnings."""
    result = compile_program(source, tmp_path / "k.spyre", function=function)
    exe = spyrec.load(tmp_path / "k.spyre", numerics=numerics)
    rng = np.random.default_rng(7)
    args: dict[str, np.ndarray] = {}
    inputs = []
    for b in exe.binary.inputs:
        args[b.name] = rng.standard_normal(b.layout.shape).astype(b.layout.host_dtype)
        inputs.append(torch.from_numpy(args[b.name]))
    for b in exe.binary.outputs:
        args[b.name] = np.zeros(b.layout.shape, dtype=b.layout.host_dtype)
    expected = execute(source, function, **args)
    outputs = exe(*inputs)
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    assert_close(exe, [torch.from_numpy(expected[b.name].astype(np.float32))
                       for b in exe.binary.outputs], outputs)
    return result, exe.last_profile.warnings


def test_rmsnorm_hidden_sharded_all_reduces_over_the_ring(tmp_path):
    # grid [4, 2]: tile (x, y) is core 4y + x; the 4 cores of a y are one group (first 4y,
    # stride 1, count 4) and all-reduce their 8 partial sums of squares, a one-column tile
    result, warnings = _compile_and_compare(tmp_path, CONFORMANCE / "rmsnorm.mlir",
                                            "rmsnorm_hidden_sharded")
    reduces = _ring_reduces(result.binary)
    assert len(reduces) == 8  # one per core
    assert {(r["first"], r["count"], r["stride"], r["root"]) for r in reduces} == {
        (0, 4, 1, -1), (4, 4, 1, -1)}
    assert {(r["rows"], r["cols"]) for r in reduces} == {(8, 1)}
    assert not [w for w in warnings if "hazard" in w.lower()]


def test_loaded_row_all_reduce(tmp_path):
    # inter_tile.mlir's all_reduce: the partial is a loaded 1x64 f32 row, summed in place in
    # its load's slot and stored by every core
    result, warnings = _compile_and_compare(tmp_path, KERNELS / "inter_tile.mlir",
                                            "all_reduce", numerics="ieee")
    reduces = _ring_reduces(result.binary)
    assert [(r["rows"], r["cols"], r["root"]) for r in reduces] == [(1, 64, -1)] * 4
    assert not [w for w in warnings if "hazard" in w.lower()]


def test_reduce_to_one_uses_the_sum_on_the_root_only(tmp_path):
    source = tmp_path / "reduce_to_one.mlir"
    source.write_text(REDUCE_TO_ONE)
    result, warnings = _compile_and_compare(tmp_path, source, "rms_scale_first")
    assert result.binary is not None
    reduces = _ring_reduces(result.binary)
    assert [(r["first"], r["count"], r["stride"], r["root"]) for r in reduces] == [
        (0, 4, 1, 0)] * 4
    (kernel,) = result.binary.kernels
    assert [len(p) for _, p in sorted(kernel.programs.items())][1:] == [4, 4, 4]  # load,
    # square, sum, ring.reduce: cores 1 to 3 only contribute
    assert not [w for w in warnings if "hazard" in w.lower()]


TWO_PARTIALS = (
    ("ktdp.yield_partial %partial : tensor<8xf32>",
     "ktdp.yield_partial %partial, %partial : tensor<8xf32>, tensor<8xf32>"),
    ("!ktdp.tile_future<(tensor<8xf32>)", "!ktdp.tile_future<(tensor<8xf32>, tensor<8xf32>)"),
    ("%ssq = ktdp.inter_tile_reduce", "%ssq, %ssq2 = ktdp.inter_tile_reduce"),
    ("identity(%z8 : tensor<8xf32>)", "identity(%z8, %z8 : tensor<8xf32>, tensor<8xf32>)"),
    ("-> tensor<8xf32> {", "-> tensor<8xf32>, tensor<8xf32> {"),
    ("^bb0(%lhs: tensor<8xf32>, %rhs: tensor<8xf32>):",
     "^bb0(%lhs: tensor<8xf32>, %l2: tensor<8xf32>, %rhs: tensor<8xf32>, %r2: tensor<8xf32>):"),
    ("ktdp.yield_reduced %s : tensor<8xf32>",
     ("%s2 = arith.addf %l2, %r2 : tensor<8xf32>\n"
     "    ktdp.yield_reduced %s, %s2 : tensor<8xf32>, tensor<8xf32>")),
)

BF16_PARTIAL = (  # the partial rounded to bf16, which ring.reduce does not add
    ("  %f = ktdp", ("  %pb = arith.truncf %partial : tensor<8xf32> to tensor<8xbf16>\n"
     "  %zbf = arith.constant 0.0 : bf16\n  %zb = tensor.splat %zbf : tensor<8xbf16>\n"
     "  %f = ktdp")),
    ("ktdp.yield_partial %partial : tensor<8xf32>", "ktdp.yield_partial %pb : tensor<8xbf16>"),
    ("tile_future<(tensor<8xf32>)", "tile_future<(tensor<8xbf16>)"),
    ("identity(%z8 : tensor<8xf32>)", "identity(%zb : tensor<8xbf16>)"),
    ("-> tensor<8xf32> {", "-> tensor<8xbf16> {"),
    ("%lhs: tensor<8xf32>, %rhs: tensor<8xf32>", "%lhs: tensor<8xbf16>, %rhs: tensor<8xbf16>"),
    ("%s = arith.addf %lhs, %rhs : tensor<8xf32>", "%s = arith.addf %lhs, %rhs : tensor<8xbf16>"),
    ("ktdp.yield_reduced %s : tensor<8xf32>", "ktdp.yield_reduced %s : tensor<8xbf16>"),
    ("%ms = arith.mulf %ssq,", ("%sf = arith.extf %ssq : tensor<8xbf16> to tensor<8xf32>\n"
     "    %ms = arith.mulf %sf,")),
)


@pytest.mark.parametrize(("edits", "message"), [
    ((("arith.addf %lhs, %rhs", "arith.maximumf %lhs, %rhs"),),
     ("ktdp.inter_tile_reduce (%ssq): its combiner is (arith.maximumf, ktdp.yield_reduced); "
     "ring.reduce only adds")),
    ((("consumer_tiles_per_group = #tile0,", ("consumer_tiles_per_group = #tile0, "
       "producer_dependency_per_consumer = affine_set<(p)[c] : (p >= 0, -p + 3 >= 0)>,")),),
     "a partial reduction (producer_dependency_per_consumer) has no ring.reduce form"),
    (TWO_PARTIALS, "it folds 2 partials; ring.reduce sums one"),
    (BF16_PARTIAL, "its partial %pb is a tensor<8xbf16>; ring.reduce sums f32 or f16 tiles"),
    ((("ktdp.yield_partial %partial", ("%p2 = arith.addf %partial, %partial : tensor<8xf32>\n"
       "    ktdp.yield_partial %p2")),),
     ("ktdp.inter_tile_produce (%f): its region computes (arith.addf); compute the partial "
     "before the ktdp.inter_tile_produce")),
])
def test_what_ring_reduce_cannot_do_is_refused(tmp_path, edits, message):
    text = REDUCE_TO_ONE
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)  # every occurrence
    error = _refusal(tmp_path, text)
    assert "kernel @rms_scale_first" in error
    assert message in error


def test_uneven_group_reaches_the_user_naming_the_kernel(tmp_path):
    # tiles 0, 1 and 3 ((i + 1) mod 3 >= 1 drops tile 2) are no arithmetic progression of
    # cores: spyre-schedule-dataflow refuses the group, as a CompileError naming the kernel
    text = REDUCE_TO_ONE.replace(
        "#producers = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>",
        "#producers = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0, (i + 1) mod 3 - 1 >= 0)>")
    assert ("kernel @rms_scale_first, core (0, 0): ktdp.inter_tile_reduce: group 0: tiles "
            "[0, 1, 3] are not evenly spaced cores") in _refusal(tmp_path, text)


CONSUME = """
#rows4 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#tile0 = affine_set<(i)[g] : (i == 0)>
#all4 = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
#one_group = affine_set<(g) : (g == 0)>
func.func @broadcast_row(%in: index, %out: index) attributes {grid = [4, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vi = ktdp.construct_memory_view %in, sizes: [4, 64], strides: [64, 1] {coordinate_set = #rows4, memory_space = #ktdp.memory_space<global>} : memref<4x64xf32>
  %vo = ktdp.construct_memory_view %out, sizes: [4, 64], strides: [64, 1] {coordinate_set = #rows4, memory_space = #ktdp.memory_space<global>} : memref<4x64xf32>
  %ti = ktdp.construct_access_tile %vi[%id, 0] {access_tile_set = #row, access_tile_order = #id2} : memref<4x64xf32> -> !ktdp.access_tile<1x64xindex>
  %mine = ktdp.load %ti : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf32>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #tile0 -> <(tensor<1x64xf32>), groups = #one_group> {
  ^bb0(%gid: index):
    ktdp.yield_partial %mine : tensor<1x64xf32>
  }
  %first = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #all4 : <(tensor<1x64xf32>), groups = #one_group> -> tensor<1x64xf32>
  %to = ktdp.construct_access_tile %vo[%id, 0] {access_tile_set = #row, access_tile_order = #id2} : memref<4x64xf32> -> !ktdp.access_tile<1x64xindex>
  ktdp.store %first, %to : tensor<1x64xf32>, !ktdp.access_tile<1x64xindex>
  func.return
}
"""


def test_inter_tile_consume_stays_refused(tmp_path):
    # tile 0 hands its row to every tile: no ring form is built for a consume yet
    assert ("kernel @broadcast_row: ktdp.inter_tile_consume (%first): the compiler does not "
            "take this op yet") in _refusal(tmp_path, CONSUME)
