# ruff: noqa: E501  (the MLIR snippets keep one op per line)
"""The interpreter's whole-tensor ops (linalg, tensor, arith) against NumPy.

These functions take and return tensors, so no memory is involved: each runs on one core and
`KernelRun.returned[0]` holds what it returned.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from spyrec.runtime.ktir_interpreter import KtirError, run_kernel

RNG = np.random.default_rng(7)


def call(text: str, name: str, **args: np.ndarray) -> tuple[np.ndarray, ...]:
    return run_kernel(text, name, args).returned[0]


def test_generic_broadcast_and_transposed_output():
    # out[j, i] = a[i, j] + b[0, j]: a (0, d1) map broadcasts b's row, the output map
    # (d1, d0) writes the transpose.
    text = """
    func.func @f(%a: tensor<4x8xf32>, %b: tensor<1x8xf32>, %o: tensor<8x4xf32>) -> tensor<8x4xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d1, d0)>], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<4x8xf32>, tensor<1x8xf32>) outs(%o : tensor<8x4xf32>) {
      ^bb0(%x: f32, %y: f32, %out: f32):
        %s = arith.addf %x, %y : f32
        linalg.yield %s : f32
      } -> tensor<8x4xf32>
      func.return %r : tensor<8x4xf32>
    }
    """
    a = RNG.standard_normal((4, 8)).astype(np.float32)
    b = RNG.standard_normal((1, 8)).astype(np.float32)
    (out,) = call(text, "f", a=a, b=b, o=np.zeros((8, 4), np.float32))
    np.testing.assert_array_equal(out, (a + b).T)


def test_generic_index_and_two_results():
    # linalg.index gives each element its loop counters; two outputs come out of one body.
    text = """
    func.func @f(%o1: tensor<3x5xi64>, %o2: tensor<3x5xi64>) -> (tensor<3x5xi64>, tensor<3x5xi64>) {
      %r1, %r2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%o1, %o2 : tensor<3x5xi64>, tensor<3x5xi64>) {
      ^bb0(%a: i64, %b: i64):
        %i = linalg.index 0 : index
        %j = linalg.index 1 : index
        %ii = arith.index_cast %i : index to i64
        %jj = arith.index_cast %j : index to i64
        %c10 = arith.constant 10 : i64
        %t = arith.muli %ii, %c10 : i64
        %s = arith.addi %t, %jj : i64
        linalg.yield %s, %jj : i64, i64
      } -> (tensor<3x5xi64>, tensor<3x5xi64>)
      func.return %r1, %r2 : tensor<3x5xi64>, tensor<3x5xi64>
    }
    """
    zeros = np.zeros((3, 5), np.int64)
    first, second = call(text, "f", o1=zeros, o2=zeros)
    i, j = np.indices((3, 5))
    np.testing.assert_array_equal(first, 10 * i + j)
    np.testing.assert_array_equal(second, j)


def test_reductions_fast_and_general():
    # Sum of squares folds with the fast path; the argmax carries (value, index) pairs and
    # takes the general path (a loop over the reduced axis only).
    text = """
    func.func @f(%x: tensor<6x10xf32>, %s0: tensor<6xf32>, %v0: tensor<6xf32>, %i0: tensor<6xi64>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xi64>) {
      %sq = linalg.reduce ins(%x : tensor<6x10xf32>) outs(%s0 : tensor<6xf32>) dimensions = [1]
        (%in: f32, %acc: f32) {
          %p = arith.mulf %in, %in : f32
          %n = arith.addf %acc, %p : f32
          linalg.yield %n : f32
        }
      %e = tensor.empty() : tensor<6x10xi64>
      %idx = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<6x10xi64>) {
      ^bb0(%o: i64):
        %j = linalg.index 1 : index
        %jj = arith.index_cast %j : index to i64
        linalg.yield %jj : i64
      } -> tensor<6x10xi64>
      %m:2 = linalg.reduce ins(%x, %idx : tensor<6x10xf32>, tensor<6x10xi64>) outs(%v0, %i0 : tensor<6xf32>, tensor<6xi64>) dimensions = [1]
        (%in: f32, %at: i64, %best: f32, %best_at: i64) {
          %gt = arith.cmpf ogt, %in, %best : f32
          %nv = arith.select %gt, %in, %best : f32
          %ni = arith.select %gt, %at, %best_at : i64
          linalg.yield %nv, %ni : f32, i64
        }
      func.return %sq, %m#0, %m#1 : tensor<6xf32>, tensor<6xf32>, tensor<6xi64>
    }
    """
    x = RNG.standard_normal((6, 10)).astype(np.float32)
    squares, best, at = call(
        text,
        "f",
        x=x,
        s0=np.zeros(6, np.float32),
        v0=np.full(6, -np.inf, np.float32),
        i0=np.zeros(6, np.int64),
    )
    np.testing.assert_allclose(squares, (x * x).sum(1), rtol=1e-6)
    np.testing.assert_array_equal(best, x.max(1))
    np.testing.assert_array_equal(at, x.argmax(1))


def test_named_ops():
    # Mixed-precision matmul and batch_matmul accumulate in f32; fill, transpose, broadcast
    # and the elementwise named ops follow their upstream definitions.
    text = """
    func.func @f(%a: tensor<4x8xf16>, %b: tensor<8x3xf16>, %ba: tensor<2x4x8xf16>, %bb: tensor<2x8x3xf16>) -> (tensor<4x3xf32>, tensor<2x4x3xf32>, tensor<8x4xf16>, tensor<5x8xf16>, tensor<4x8xf16>) {
      %zero = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<4x3xf32>
      %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
      %c = linalg.matmul ins(%a, %b : tensor<4x8xf16>, tensor<8x3xf16>) outs(%acc : tensor<4x3xf32>) -> tensor<4x3xf32>
      %be = tensor.empty() : tensor<2x4x3xf32>
      %bacc = linalg.fill ins(%zero : f32) outs(%be : tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
      %bc = linalg.batch_matmul ins(%ba, %bb : tensor<2x4x8xf16>, tensor<2x8x3xf16>) outs(%bacc : tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
      %te = tensor.empty() : tensor<8x4xf16>
      %t = linalg.transpose ins(%a : tensor<4x8xf16>) outs(%te : tensor<8x4xf16>) permutation = [1, 0]
      %row = tensor.extract_slice %a[1, 0] [1, 8] [1, 1] : tensor<4x8xf16> to tensor<8xf16>
      %bre = tensor.empty() : tensor<5x8xf16>
      %br = linalg.broadcast ins(%row : tensor<8xf16>) outs(%bre : tensor<5x8xf16>) dimensions = [0]
      %se = tensor.empty() : tensor<4x8xf16>
      %sum = linalg.add ins(%a, %a : tensor<4x8xf16>, tensor<4x8xf16>) outs(%se : tensor<4x8xf16>) -> tensor<4x8xf16>
      %q = linalg.div ins(%sum, %a : tensor<4x8xf16>, tensor<4x8xf16>) outs(%se : tensor<4x8xf16>) -> tensor<4x8xf16>
      func.return %c, %bc, %t, %br, %q : tensor<4x3xf32>, tensor<2x4x3xf32>, tensor<8x4xf16>, tensor<5x8xf16>, tensor<4x8xf16>
    }
    """
    a = RNG.standard_normal((4, 8)).astype(np.float16)
    b = RNG.standard_normal((8, 3)).astype(np.float16)
    ba = RNG.standard_normal((2, 4, 8)).astype(np.float16)
    bb = RNG.standard_normal((2, 8, 3)).astype(np.float16)
    c, bc, t, br, q = call(text, "f", a=a, b=b, ba=ba, bb=bb)
    assert c.dtype == np.float32 and bc.dtype == np.float32
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5)
    np.testing.assert_allclose(bc, ba.astype(np.float32) @ bb.astype(np.float32), rtol=1e-5)
    np.testing.assert_array_equal(t, a.T)
    np.testing.assert_array_equal(br, np.broadcast_to(a[1], (5, 8)))
    np.testing.assert_array_equal(q, np.full((4, 8), 2, np.float16))


def test_tensor_arith_on_whole_tensors():
    # Masks from tensor compares drive select; casts, shape ops and math.erf work elementwise.
    text = """
    func.func @f(%x: tensor<2x8xf32>, %n: tensor<2x8xi32>) -> (tensor<2x8xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<4x4xf32>) {
      %zero = arith.constant dense<0.0> : tensor<2x8xf32>
      %pos = arith.cmpf ogt, %x, %zero : tensor<2x8xf32>
      %relu = arith.select %pos, %x, %zero : tensor<2x8xi1>, tensor<2x8xf32>
      %flat = tensor.collapse_shape %relu [[0, 1]] : tensor<2x8xf32> into tensor<16xf32>
      %nf = arith.sitofp %n : tensor<2x8xi32> to tensor<2x8xf32>
      %er = math.erf %x : tensor<2x8xf32>
      %mix = arith.addf %nf, %er : tensor<2x8xf32>
      %sq = tensor.expand_shape %flat [[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
      func.return %relu, %flat, %mix, %sq : tensor<2x8xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<4x4xf32>
    }
    """
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    n = RNG.integers(-5, 5, (2, 8)).astype(np.int32)
    relu, flat, mix, square = call(text, "f", x=x, n=n)
    np.testing.assert_array_equal(relu, np.maximum(x, 0))
    np.testing.assert_array_equal(flat, np.maximum(x, 0).reshape(-1))
    erf = np.array([[math.erf(v) for v in row] for row in x.astype(np.float64)])
    np.testing.assert_allclose(mix, n + erf, atol=2e-6)
    np.testing.assert_array_equal(square, np.maximum(x, 0).reshape(4, 4))


def test_slice_out_of_range_is_an_error():
    text = """
    func.func @f(%a: tensor<4x8xf32>) -> tensor<2x8xf32> {
      %s = tensor.extract_slice %a[3, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32>
      func.return %s : tensor<2x8xf32>
    }
    """
    with pytest.raises(KtirError, match="extract_slice reaches index 4 of dim 0, which has 4"):
        call(text, "f", a=np.zeros((4, 8), np.float32))


def test_affine_apply_and_min_on_indices():
    # KTIR depends on the affine dialect: index arithmetic may be written as affine.apply
    # (dims, then symbols) and affine.min; floordiv and mod round toward minus infinity.
    text = """
    func.func @f(%i: index, %j: index, %n: index) -> (index, index, index) {
      %a = affine.apply affine_map<(d0, d1)[s0] -> (d0 * 4 + d1 + s0)>(%i, %j)[%n]
      %b = affine.apply affine_map<(d0) -> ((d0 - 7) floordiv 4 + (d0 - 7) mod 4)>(%i)
      %c = affine.min affine_map<(d0)[s0] -> (d0 * 16, s0)>(%i)[%n]
      func.return %a, %b, %c : index, index, index
    }
    """
    # (3 - 7) floordiv 4 = -1 and (3 - 7) mod 4 = 0; min(48, 40) = 40.
    assert run_kernel(text, "f", {"i": 3, "j": 2, "n": 40}).returned[0] == (54, -1, 40)


def test_tensor_argument_of_another_shape_is_refused():
    # tensor parameters are values: a (1, 8) array for tensor<4x8xf32> would broadcast
    # through the add and return a 4x8 result built from the wrong input
    text = """
    func.func @f(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
      %s = arith.addf %a, %b : tensor<4x8xf32>
      func.return %s : tensor<4x8xf32>
    }
    """
    a = np.ones((4, 8), np.float32)
    with pytest.raises(KtirError, match=r"@f: argument %b is a 1x8 array, but its type is "
                       r"tensor<4x8xf32>: pass an array of that shape"):
        run_kernel(text, "f", {"a": a, "b": np.ones((1, 8), np.float32)})
    assert run_kernel(text, "f", {"a": a, "b": a}).returned[0][0].sum() == 64
