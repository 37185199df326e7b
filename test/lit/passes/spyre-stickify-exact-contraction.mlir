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
