// RUN: spyre-opt %s --split-input-file --verify-diagnostics | filecheck %s

// xDSL 0.74's --verify-diagnostics prints each chunk's first error instead of matching
// expected-error annotations, so filecheck matches the messages, one CHECK per case.

func.func @k_mismatch(%a: tensor<64x100xf16>, %b: tensor<128x64xf16>) {
  // CHECK: spyre.matmul: lhs has K = 100 columns but rhs has 128 rows
  %m = spyre.matmul %a, %b : tensor<64x100xf16>, tensor<128x64xf16> -> tensor<64x64xf16>
  func.return
}

// -----

func.func @bad_result(%a: tensor<64x128xf16>, %b: tensor<128x64xf16>) {
  // CHECK: spyre.matmul: result shape [64, 32] is not [64, 64]
  %m = spyre.matmul %a, %b : tensor<64x128xf16>, tensor<128x64xf16> -> tensor<64x32xf16>
  func.return
}

// -----

func.func @bad_bias(%a: tensor<64x128xf16>, %b: tensor<128x64xf16>, %c: tensor<32xf16>) {
  // CHECK: spyre.matmul: bias shape [32] does not match N = 64
  %m = spyre.matmul %a, %b bias %c : tensor<64x128xf16>, tensor<128x64xf16>, tensor<32xf16> -> tensor<64x64xf16>
  func.return
}

// -----

func.func @bad_broadcast(%a: tensor<64x128xf16>, %b: tensor<3x128xf16>) {
  // CHECK: spyre.add: operand shape [3, 128] does not broadcast to the result shape [64, 128]
  %m = spyre.add %a, %b : tensor<64x128xf16>, tensor<3x128xf16> -> tensor<64x128xf16>
  func.return
}

// -----

func.func @bad_unary(%a: tensor<64x128xf16>) {
  // CHECK: spyre.relu: result shape [64, 64] differs from the operand shape [64, 128]
  %m = spyre.relu %a : tensor<64x128xf16> -> tensor<64x64xf16>
  func.return
}

// -----

func.func @bad_kernel(%a: tensor<64x128xf16>) {
  // CHECK: spyre.kernel @k0: 2 block arguments for 1 inputs
  %k = spyre.kernel "k0"(%a) : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%p: tensor<64x128xf16>, %q: tensor<64x128xf16>):
    spyre.yield %p : tensor<64x128xf16>
  }
  func.return
}

// -----

func.func @restickify(%x: tensor<2x16x64xf16>) {
  // CHECK: spyre.reshape: [2, 16, 64] -> [2, 16, 2, 32] must keep the element count and either the innermost dimension or whole 128-byte sticks in it (other reshapes move data)
  %v = spyre.reshape %x : tensor<2x16x64xf16> -> tensor<2x16x2x32xf16>
  func.return
}

// -----

func.func @permute_moves_the_stick(%x: tensor<2x16x64xf16>) {
  // CHECK: spyre.permute_rows: permutation [0, 2, 1] must permute the 3 dims and keep the last (stick) dim last
  %p = spyre.permute_rows %x {permutation = array<i64: 0, 2, 1>} : tensor<2x16x64xf16> -> tensor<2x64x16xf16>
  func.return
}

// -----

func.func @permute_shape(%x: tensor<2x16x4x64xf16>) {
  // CHECK: spyre.permute_rows: result shape [2, 16, 4, 64] is not [2, 16, 4, 64] permuted by [0, 2, 1, 3]
  %p = spyre.permute_rows %x {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x64xf16> -> tensor<2x16x4x64xf16>
  func.return
}

// -----

func.func @expand_not_one(%x: tensor<2x3x64xf16>) {
  // CHECK: spyre.expand_rows: [2, 3, 64] -> [2, 6, 64] must keep the rank and the innermost dim and only broadcast leading dims of size 1
  %e = spyre.expand_rows %x : tensor<2x3x64xf16> -> tensor<2x6x64xf16>
  func.return
}

// -----

func.func @gqa_heads(%q: tensor<1x4x16x64xf16>, %k: tensor<1x3x16x64xf16>) {
  // CHECK: spyre.attention: 4 query heads are not a multiple of 3 key/value heads
  %a = spyre.attention %q, %k, %k {scale = 0.125 : f64} : tensor<1x4x16x64xf16>, tensor<1x3x16x64xf16>, tensor<1x3x16x64xf16> -> tensor<1x4x16x64xf16>
  func.return
}

// -----

func.func @attention_mask(%q: tensor<1x4x16x64xf16>, %m: tensor<16x8xf16>) {
  // CHECK: spyre.attention: mask shape [16, 8] does not broadcast to [1, 4, 16, 16]
  %a = spyre.attention %q, %q, %q mask %m {scale = 0.125 : f64} : tensor<1x4x16x64xf16>, tensor<1x4x16x64xf16>, tensor<1x4x16x64xf16>, tensor<16x8xf16> -> tensor<1x4x16x64xf16>
  func.return
}

// -----

func.func @param_value_type() {
  // CHECK: value of type tensor<2x2xf32> for a result of type tensor<2x2xf16>
  %s = spyre.param {param_name = "cat.columns0", value = dense<[[0.0, 1.0], [1.0, 0.0]]> : tensor<2x2xf32>} : tensor<2x2xf16>
  func.return
}

// -----

func.func @slice_innermost(%x: tensor<16x64xf16>) {
  // CHECK: spyre.slice_rows: dim 1 must be a leading dim of the 2-D operand and the rank must be kept
  %s = spyre.slice_rows %x {dim = 1 : i64, start = 0 : i64, step = 1 : i64} : tensor<16x64xf16> -> tensor<16x32xf16>
  func.return
}

// -----

func.func @slice_past_end(%x: tensor<16x64xf16>) {
  // CHECK: spyre.slice_rows: 4 rows from 10 by 2 leave dim 0 of size 16
  %s = spyre.slice_rows %x {dim = 0 : i64, start = 10 : i64, step = 2 : i64} : tensor<16x64xf16> -> tensor<4x64xf16>
  func.return
}

// -----

// 3x3, stride 1, padding 1 on 8x8 keeps 8x8 pixels; 9 taps of one 64-element stick
// are 576 columns, not 512.
func.func @window_bad_result(%x: tensor<1x8x8x3xf16>, %pad: tensor<8x3xf16>) {
  // CHECK: spyre.window_rows: result shape [1, 8, 8, 512], expected [1, 8, 8, 576]
  %c = spyre.window_rows %x, %pad {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, taps = array<i64: 0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2, 2, 0, 2, 1, 2, 2>} : (tensor<1x8x8x3xf16>, tensor<8x3xf16>) -> tensor<1x8x8x512xf16>
  func.return
}

// -----

func.func @gather_shape(%t: tensor<256x64xf32>, %ids: tensor<2x16xi64>) {
  // CHECK: spyre.gather: result shape [32, 64] is not the indices' [2, 16] followed by the table's row width 64
  %e = spyre.gather %t, %ids : tensor<256x64xf32>, tensor<2x16xi64> -> tensor<32x64xf32>
  func.return
}

// -----

// With padding, windows leave the image: the pad operand must hold an output row (8).
func.func @window_short_pad(%x: tensor<1x8x8x3xf16>, %pad: tensor<1x3xf16>) {
  // CHECK: spyre.window_rows: pad rows of shape [1, 3], expected [8, 3] or more rows
  %c = spyre.window_rows %x, %pad {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, taps = array<i64: 1, 1>} : (tensor<1x8x8x3xf16>, tensor<1x3xf16>) -> tensor<1x8x8x3xf16>
  func.return
}

// -----

func.func @gather_float_indices(%t: tensor<256x64xf32>, %ids: tensor<16xf32>) {
  // CHECK: spyre.gather: indices must be i32 or i64, got f32
  %e = spyre.gather %t, %ids : tensor<256x64xf32>, tensor<16xf32> -> tensor<16x64xf32>
  func.return
}

// -----

// Tap (3, 0) is outside a 3x3 kernel.
func.func @window_bad_tap(%x: tensor<1x8x8x3xf16>, %pad: tensor<8x3xf16>) {
  // CHECK: spyre.window_rows: taps [(3, 0)] outside the 3x3 kernel
  %c = spyre.window_rows %x, %pad {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, taps = array<i64: 3, 0>} : (tensor<1x8x8x3xf16>, tensor<8x3xf16>) -> tensor<1x8x8x3xf16>
  func.return
}

// -----

func.func @scatter_values(%c: tensor<1x2x256x64xf16>, %pos: tensor<2xi64>, %k: tensor<1x2x1x64xf16>) {
  // CHECK: spyre.scatter: values [1, 2, 1, 64] are not [1, 2, 2, 64] (the table's leading dims, one row per index, the row width)
  %u = spyre.scatter %c, %pos, %k : tensor<1x2x256x64xf16>, tensor<2xi64>, tensor<1x2x1x64xf16> -> tensor<1x2x256x64xf16>
  func.return
}

// -----

func.func @batch_matmul_k(%q: tensor<4x16x64xf16>, %k: tensor<4x32x48xf16>) {
  // CHECK: spyre.batch_matmul: lhs has K = 64 columns but rhs [4, 32, 48] has K = 48
  %s = spyre.batch_matmul %q, %k {transpose_rhs} : tensor<4x16x64xf16>, tensor<4x32x48xf16> -> tensor<4x16x32xf16>
  func.return
}

// -----

func.func @batch_matmul_batches(%q: tensor<4x16x64xf16>, %v: tensor<2x64x8xf16>) {
  // CHECK: spyre.batch_matmul: lhs [4, 16, 64], rhs [2, 64, 8] and the result [4, 16, 8] must have one rank of at least 2 and the same leading dims
  %o = spyre.batch_matmul %q, %v : tensor<4x16x64xf16>, tensor<2x64x8xf16> -> tensor<4x16x8xf16>
  func.return
}
