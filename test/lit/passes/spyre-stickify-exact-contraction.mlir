// RUN: spyre-opt %s -p spyre-stickify | filecheck %s

// A [8, 16] fp32 tensor made by a device transpose has 16 columns in a 32-element stick, and
// the transpose does not write the other 16: its padding is not zero. A bias-free matmul
// reading it as lhs (rotate_half's column map on heads of 16) becomes a one-batch
// spyre.batch_matmul, whose kernel loads exactly K = 16 columns, so the padding is never read.
// CHECK-LABEL: func.func @exact
// CHECK:      %[[T:.*]] = spyre.batch_matmul %i, %x {{.*}}pad = "undef"{{.*}}transpose_rhs
// CHECK-NEXT: spyre.batch_matmul %[[T]], %m {{.*}}pad = "zero"{{.*}} : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK-NOT:  spyre.matmul
func.func @exact(%x: tensor<16x8xf32>, %i: tensor<8x8xf32>, %m: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %t = spyre.batch_matmul %i, %x {transpose_rhs} : tensor<8x8xf32>, tensor<16x8xf32> -> tensor<8x16xf32>
  %y = spyre.matmul %t, %m : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  func.return %y : tensor<8x16xf32>
}

// exp(0) = 1 puts ones into the padding of %e's second stick; a matmul with a bias (a 1x1
// convolution after a gate, BatchNorm folded in) contracts exactly over its 100 columns as
// a spyre.batch_matmul, and the bias is added after it as a row.
// CHECK-LABEL: func.func @exact_bias
// CHECK:      %[[E:.*]] = spyre.exp %x {{.*}}pad = "undef"
// CHECK-NEXT: %[[P:.*]] = spyre.batch_matmul %[[E]], %w {{.*}}pad = "zero"{{.*}} : tensor<64x100xf16>, tensor<100x64xf16> -> tensor<64x64xf16>
// CHECK-NEXT: spyre.add %[[P]], %b {{.*}}source = "m.py:9"{{.*}} : tensor<64x64xf16>, tensor<64xf16> -> tensor<64x64xf16>
// CHECK-NOT:  spyre.matmul
func.func @exact_bias(%x: tensor<64x100xf16>) -> tensor<64x64xf16> {
  %w = spyre.param {param_name = "w"} : tensor<100x64xf16>
  %b = spyre.param {param_name = "b"} : tensor<64xf16>
  %e = spyre.exp %x : tensor<64x100xf16> -> tensor<64x100xf16>
  %y = spyre.matmul %e, %w bias %b {fx_node = "mm", source = "m.py:9"} : tensor<64x100xf16>, tensor<100x64xf16>, tensor<64xf16> -> tensor<64x64xf16>
  func.return %y : tensor<64x64xf16>
}
