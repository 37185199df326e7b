// RUN: spyre-opt %s -p spyre-legalize --split-input-file | filecheck %s

// amax over dim 0 of a [64, 128] matrix, keepdim: dim 0 moves last (a permute [1, 0] whose
// innermost dim moves: identity_128 @ x^T, a batch matmul reading x as stored, each output
// element one product by 1), the max runs over the 64 elements of each of the 128 rows
// ([128, 64] -> [128, 1]), and the [128, 1] column moves back to the [1, 128] row
// (identity_1 @ c^T, one more transpose).
// CHECK-LABEL: func.func @amax_dim0
// The first transpose moves x's finite part and its NaN code apart (exact moves,
// spyre-legalize-exact-moves.mlir); the second, by a 1x1 identity, has no zero to meet a NaN.
// CHECK:       spyre.batch_matmul %{{.*}}, %{{.*}} {fx_node = "amax.to_last"{{.*}}, transpose_rhs} : tensor<128x128xf16>, tensor<64x128xf16> -> tensor<128x64xf16>
// CHECK:       spyre.batch_matmul %{{.*}}, %{{.*}} {fx_node = "amax.to_last"{{.*}}, transpose_rhs} : tensor<128x128xf16>, tensor<64x128xf16> -> tensor<128x64xf16>
// CHECK:       %[[T:.*]] = spyre.add {{.*}} -> tensor<128x64xf16>
// CHECK-NEXT:  %[[M:.*]] = spyre.reduce_max %[[T]] {fx_node = "amax"{{.*}}} : tensor<128x64xf16> -> tensor<128x1xf16>
// CHECK:       %[[B:.*]] = spyre.batch_matmul %{{.*}}, %[[M]] {fx_node = "amax.from_last"{{.*}}transpose_rhs} : tensor<1x1xf16>, tensor<128x1xf16> -> tensor<1x128xf16>
// CHECK-NEXT:  func.return %[[B]]
func.func @amax_dim0(%x: tensor<64x128xf16>) -> tensor<1x128xf16> {
  %y = spyre.aten "aten.amax.default"(%x) {args = {dim = [0 : i64], keepdim = true}, operand_names = ["self"], fx_node = "amax", source = "m.py:1"} : (tensor<64x128xf16>) -> tensor<1x128xf16>
  func.return %y : tensor<1x128xf16>
}

// -----

// softmax over dim 1 of [2, 5, 100]: permute [0, 2, 1] (per batch, identity_100 @ x^T:
// [2, 100, 5]), the last-dim softmax (max, sub, exp, sum, div over the 5 columns), and the
// inverse permute (identity_5 @ y^T per batch) back to [2, 5, 100].
// CHECK-LABEL: func.func @softmax_dim1
// CHECK:       spyre.batch_matmul {{.*}}transpose_rhs} : tensor<2x100x100xf32>, tensor<2x5x100xf32> -> tensor<2x100x5xf32>
// CHECK:       spyre.reduce_max {{.*}} : tensor<2x100x5xf32> -> tensor<2x100x1xf32>
// CHECK:       spyre.reduce_sum {{.*}} : tensor<2x100x5xf32> -> tensor<2x100x1xf32>
// CHECK-NEXT:  %[[D:.*]] = spyre.div
// CHECK:       spyre.batch_matmul %{{.*}}, %{{.*}} {{.*}}transpose_rhs} : tensor<2x5x5xf32>, tensor<2x100x5xf32> -> tensor<2x5x100xf32>
func.func @softmax_dim1(%x: tensor<2x5x100xf32>) -> tensor<2x5x100xf32> {
  %y = spyre.aten "aten.softmax.int"(%x) {args = {dim = -2 : i64}, operand_names = ["self"], fx_node = "softmax", source = "m.py:2"} : (tensor<2x5x100xf32>) -> tensor<2x5x100xf32>
  func.return %y : tensor<2x5x100xf32>
}

// -----

// Type promotion: f16 [64, 128] + f32 [128] is f32; the f16 operand is cast first (exact),
// the row broadcasts as before. An int64 tensor times an f16 tensor is f16: the ints are
// cast to f16 (exact below 2^11).
// CHECK-LABEL: func.func @promote
// CHECK:       %[[A:.*]] = spyre.cast %a {fx_node = "add"{{.*}}} : tensor<64x128xf16> -> tensor<64x128xf32>
// CHECK-NEXT:  spyre.add %[[A]], %b {fx_node = "add"{{.*}}} : tensor<64x128xf32>, tensor<128xf32> -> tensor<64x128xf32>
// CHECK:       %[[I:.*]] = spyre.cast %i {fx_node = "mul"{{.*}}} : tensor<64x128xi64> -> tensor<64x128xf16>
// CHECK-NEXT:  spyre.mul %[[I]], %a {{.*}}: tensor<64x128xf16>, tensor<64x128xf16> -> tensor<64x128xf16>
func.func @promote(%a: tensor<64x128xf16>, %b: tensor<128xf32>, %i: tensor<64x128xi64>) -> (tensor<64x128xf32>, tensor<64x128xf16>) {
  %s = spyre.aten "aten.add.Tensor"(%a, %b) {args = {}, operand_names = ["self", "other"], fx_node = "add", source = "m.py:3"} : (tensor<64x128xf16>, tensor<128xf32>) -> tensor<64x128xf32>
  %p = spyre.aten "aten.mul.Tensor"(%i, %a) {args = {}, operand_names = ["self", "other"], fx_node = "mul", source = "m.py:4"} : (tensor<64x128xi64>, tensor<64x128xf16>) -> tensor<64x128xf16>
  func.return %s, %p : tensor<64x128xf32>, tensor<64x128xf16>
}

// -----

// Run-time positions [1, 8] (int64) read as a column: pos[0, q] by the folded index grids
// [[0]] and [[0], [1], ..., [7]]. The ints go through f32 (exact below 2^24): the [1, 8]
// row times the 8 x 8 selection matrix (column j picks element picked[j] = j: here the
// identity) is the [1, 8] row of positions, which the [1, 8, 1] result needs as a column:
// a device transpose (identity_8 @ r^T); the f32 column is cast back to int64.
// CHECK-LABEL: func.func @index_column
// CHECK:       %[[F:.*]] = spyre.cast %pos {fx_node = "index"{{.*}}} : tensor<1x8xi64> -> tensor<1x8xf32>
// CHECK:       %[[S:.*]] = spyre.matmul %[[F]], %{{.*}} {fx_node = "index"{{.*}}} : tensor<1x8xf32>, tensor<8x8xf32> -> tensor<1x8xf32>
// CHECK:       spyre.batch_matmul {{.*}}transpose_rhs} : tensor<1x8x8xf32>, tensor<1x1x8xf32> -> tensor<1x8x1xf32>
// CHECK-NEXT:  spyre.cast {{.*}} : tensor<1x8x1xf32> -> tensor<1x8x1xi64>
func.func @index_column(%pos: tensor<1x8xi64>) -> tensor<1x8x1xi64> {
  %b = spyre.param {param_name = "b.folded", spyre.int_values = array<i64: 0>} : tensor<1x1x1xi64>
  %q = spyre.param {param_name = "q.folded", spyre.int_values = array<i64: 0, 1, 2, 3, 4, 5, 6, 7>} : tensor<1x8x1xi64>
  %y = spyre.aten "aten.index.Tensor"(%pos, %b, %q) {args = {}, operand_names = ["self", "indices.0", "indices.1"], fx_node = "index", source = "m.py:5"} : (tensor<1x8xi64>, tensor<1x1x1xi64>, tensor<1x8x1xi64>) -> tensor<1x8x1xi64>
  func.return %y : tensor<1x8x1xi64>
}

