// RUN: spyre-opt %s -p spyre-legalize | filecheck %s

// x.t() of a [16, 64] activation: the innermost dim moves, so the device transposes it as
// identity_64 @ x^T, a batch matmul whose rhs the PT reads as stored (design note 37).
// CHECK-LABEL: func.func @transpose_2d
// CHECK:      %[[I:.*]] = spyre.param {{.*}}param_name = "t.identity"{{.*}}: tensor<64x64xf16>
// The transpose is exact for NaN (spyre-legalize-exact-moves.mlir): x's finite part and
// its NaN code are transposed by the same identity.
// CHECK:      spyre.batch_matmul %[[I]], %{{.*}} {{.*}}transpose_rhs{{.*}} : tensor<64x64xf16>, tensor<16x64xf16> -> tensor<64x16xf16>
// CHECK:      spyre.batch_matmul %[[I]], %{{.*}} {{.*}}transpose_rhs{{.*}} : tensor<64x64xf16>, tensor<16x64xf16> -> tensor<64x16xf16>
func.func @transpose_2d(%x: tensor<16x64xf16>) -> tensor<64x16xf16> {
  %y = spyre.aten "aten.t.default"(%x) {args = {}, operand_names = ["self"], fx_node = "t"} : (tensor<16x64xf16>) -> tensor<64x16xf16>
  func.return %y : tensor<64x16xf16>
}

// permute(2, 0, 1) of [2, 8, 32]: dim 2 becomes innermost. Dim 1 is already next to it, so
// the device swaps the last two ([2, 32, 8], the identity broadcast over the batch of 2)
// and a row move puts the leading dims in order.
// CHECK-LABEL: func.func @permute_last
// CHECK:      %[[I:.*]] = spyre.param {{.*}}: tensor<32x32xf32>
// CHECK-NEXT: %[[I3:.*]] = spyre.reshape %[[I]] {{.*}}: tensor<32x32xf32> -> tensor<1x32x32xf32>
// CHECK-NEXT: %[[E:.*]] = spyre.expand_rows %[[I3]] {{.*}}-> tensor<2x32x32xf32>
// In f32 the finite part and the +inf and -inf codes take one transpose each.
// CHECK:      spyre.batch_matmul %[[E]], %{{.*}} {{.*}}transpose_rhs{{.*}} -> tensor<2x32x8xf32>
// CHECK:      spyre.batch_matmul %[[E]], %{{.*}} {{.*}}transpose_rhs{{.*}} -> tensor<2x32x8xf32>
// CHECK:      spyre.batch_matmul %[[E]], %{{.*}} {{.*}}transpose_rhs{{.*}} -> tensor<2x32x8xf32>
// CHECK:      %[[T:.*]] = spyre.add
// CHECK-NEXT: spyre.permute_rows %[[T]] {{.*}}permutation = array<i64: 1, 0, 2>{{.*}} -> tensor<32x2x8xf32>
func.func @permute_last(%x: tensor<2x8x32xf32>) -> tensor<32x2x8xf32> {
  %y = spyre.aten "aten.permute.default"(%x) {args = {dims = [2 : i64, 0 : i64, 1 : i64]}, operand_names = ["self"], fx_node = "permute"} : (tensor<2x8x32xf32>) -> tensor<32x2x8xf32>
  func.return %y : tensor<32x2x8xf32>
}

// q @ k.transpose(-1, -2) written out: the bmm reads k as stored (transpose_rhs), and the
// device transpose it replaced, with its identity, is erased.
// CHECK-LABEL: func.func @scores
// CHECK-NOT:  identity
// CHECK:      spyre.batch_matmul %q, %k {{.*}}transpose_rhs{{.*}} : tensor<4x16x32xf32>, tensor<4x24x32xf32> -> tensor<4x16x24xf32>
// CHECK-NOT:  spyre.batch_matmul
func.func @scores(%q: tensor<4x16x32xf32>, %k: tensor<4x24x32xf32>) -> tensor<4x16x24xf32> {
  %kt = spyre.aten "aten.transpose.int"(%k) {args = {dim0 = -1 : i64, dim1 = -2 : i64}, operand_names = ["self"], fx_node = "transpose"} : (tensor<4x24x32xf32>) -> tensor<4x32x24xf32>
  %s = spyre.aten "aten.bmm.default"(%q, %kt) {args = {}, operand_names = ["self", "mat2"], fx_node = "bmm"} : (tensor<4x16x32xf32>, tensor<4x32x24xf32>) -> tensor<4x16x24xf32>
  func.return %s : tensor<4x16x24xf32>
}

// bmm of two activations as they are: the rhs [K, N] is read as stored per batch.
// CHECK-LABEL: func.func @bmm
// CHECK:      spyre.batch_matmul %a, %b {fx_node = "bmm"} : tensor<4x16x32xf32>, tensor<4x32x8xf32> -> tensor<4x16x8xf32>
func.func @bmm(%a: tensor<4x16x32xf32>, %b: tensor<4x32x8xf32>) -> tensor<4x16x8xf32> {
  %s = spyre.aten "aten.bmm.default"(%a, %b) {args = {}, operand_names = ["self", "mat2"], fx_node = "bmm"} : (tensor<4x16x32xf32>, tensor<4x32x8xf32>) -> tensor<4x16x8xf32>
  func.return %s : tensor<4x16x8xf32>
}

// x.sum(-1) without keepdim: the [16, 1] column of sums is transposed to a [1, 16] row
// (identity_1 @ sums^T) and reshaped to [16].
// CHECK-LABEL: func.func @sum_to_row
// CHECK:      %[[S:.*]] = spyre.reduce_sum %x {{.*}}-> tensor<16x1xf32>
// CHECK:      %[[R:.*]] = spyre.batch_matmul %{{.*}}, %[[S]] {{.*}}transpose_rhs{{.*}} : tensor<1x1xf32>, tensor<16x1xf32> -> tensor<1x16xf32>
// CHECK-NEXT: spyre.reshape %[[R]] {{.*}}: tensor<1x16xf32> -> tensor<16xf32>
func.func @sum_to_row(%x: tensor<16x64xf32>) -> tensor<16xf32> {
  %y = spyre.aten "aten.sum.dim_IntList"(%x) {args = {dim = [-1 : i64], keepdim = false}, operand_names = ["self"], fx_node = "sum"} : (tensor<16x64xf32>) -> tensor<16xf32>
  func.return %y : tensor<16xf32>
}

// Splitting a 64-wide row into 4 heads of 16 ([8, 64] -> [8, 4, 16]; 16 fp32 values are half
// a stick): transpose to [64, 8], regroup the rows as [4, 16, 8] for free, transpose each
// head back to [4, 8, 16] and move the rows into [8, 4, 16].
// CHECK-LABEL: func.func @split_heads
// (Each transpose moves x's finite part and its two codes, spyre-legalize-exact-moves.mlir.)
// CHECK:      spyre.batch_matmul %{{.*}}, %{{.*}} {{.*}}transpose_rhs{{.*}} -> tensor<64x8xf32>
// CHECK:      %[[R:.*]] = spyre.reshape %{{.*}} : tensor<64x8xf32> -> tensor<4x16x8xf32>
// CHECK:      spyre.batch_matmul %{{.*}}, %{{.*}} {{.*}}transpose_rhs{{.*}} -> tensor<4x8x16xf32>
// CHECK:      spyre.permute_rows %{{.*}} -> tensor<8x4x16xf32>
func.func @split_heads(%x: tensor<8x64xf32>) -> tensor<8x4x16xf32> {
  %y = spyre.aten "aten.view.default"(%x) {args = {size = [8 : i64, 4 : i64, 16 : i64]}, operand_names = ["self"], fx_node = "view"} : (tensor<8x64xf32>) -> tensor<8x4x16xf32>
  func.return %y : tensor<8x4x16xf32>
}

// torch.cat([past, new], dim=-2) of a KV cache: each piece transposed ([2, 64, 10] and
// [2, 64, 1]), placed into the 11 columns by constant column maps, added, and transposed
// back to [2, 11, 64].
// CHECK-LABEL: func.func @cat_rows
// CHECK:      spyre.batch_matmul {{.*}}transpose_rhs{{.*}} -> tensor<2x64x10xf32>
// CHECK:      spyre.param {{.*}}param_name = "cat.rows0"{{.*}}: tensor<10x11xf32>
// CHECK:      spyre.batch_matmul {{.*}}transpose_rhs{{.*}} -> tensor<2x64x1xf32>
// CHECK:      spyre.param {{.*}}param_name = "cat.rows1"{{.*}}: tensor<1x11xf32>
// CHECK:      spyre.add {{.*}} -> tensor<128x11xf32>
// CHECK:      spyre.batch_matmul %{{.*}}, %{{.*}} {{.*}}transpose_rhs{{.*}} -> tensor<2x11x64xf32>
func.func @cat_rows(%past: tensor<2x10x64xf32>, %new: tensor<2x1x64xf32>) -> tensor<2x11x64xf32> {
  %y = spyre.aten "aten.cat.default"(%past, %new) {args = {dim = -2 : i64}, operand_names = ["tensors", "tensors"], fx_node = "cat"} : (tensor<2x10x64xf32>, tensor<2x1x64xf32>) -> tensor<2x11x64xf32>
  func.return %y : tensor<2x11x64xf32>
}
