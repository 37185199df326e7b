// RUN: spyre-opt %s -p spyre-legalize --split-input-file | filecheck %s

// A Linear layer: the weight transpose is folded into the weight (a permuted param), so
// no data-movement kernel is spent on it; linear becomes one spyre.matmul with bias.
// CHECK-LABEL: func.func @linear
// CHECK:       %[[WT:.*]] = spyre.param {param_name = "fc.weight", permutation = array<i64: 1, 0>} : tensor<100x32xf16>
// CHECK:       %[[Y:.*]] = spyre.matmul %x, %[[WT]] bias %b {fx_node = "linear", source = "m.py:3"}
// CHECK-SAME:    -> tensor<64x32xf16>
// CHECK:       %[[R:.*]] = spyre.relu %[[Y]]
// CHECK-NOT:   spyre.aten
func.func @linear(%x: tensor<64x100xf16>) -> tensor<64x32xf16> {
  %w = spyre.param {param_name = "fc.weight"} : tensor<32x100xf16>
  %b = spyre.param {param_name = "fc.bias"} : tensor<32xf16>
  %y = spyre.aten "aten.linear.default"(%x, %w, %b) {args = {}, operand_names = ["input", "weight", "bias"], fx_node = "linear", source = "m.py:3"} : (tensor<64x100xf16>, tensor<32x100xf16>, tensor<32xf16>) -> tensor<64x32xf16>
  %r = spyre.aten "aten.relu.default"(%y) {args = {}, operand_names = ["self"], fx_node = "relu", source = "m.py:4"} : (tensor<64x32xf16>) -> tensor<64x32xf16>
  func.return %r : tensor<64x32xf16>
}

// -----

// Core-ATen form of the same layer: permute of the weight folds, addmm becomes the matmul,
// and the exact and tanh GELUs select different SFU functions.
// CHECK-LABEL: func.func @addmm
// CHECK:       %[[WT:.*]] = spyre.param {param_name = "fc.weight", permutation = array<i64: 1, 0>}
// CHECK:       %[[Y:.*]] = spyre.matmul %x, %[[WT]] bias %b
// CHECK:       spyre.gelu %[[Y]]
// CHECK:       spyre.gelu_tanh %[[Y]]
func.func @addmm(%x: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %w = spyre.param {param_name = "fc.weight"} : tensor<64x64xf32>
  %b = spyre.param {param_name = "fc.bias"} : tensor<64xf32>
  %t = spyre.aten "aten.permute.default"(%w) {args = {dims = [1 : i64, 0 : i64]}, operand_names = ["self"]} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %y = spyre.aten "aten.addmm.default"(%b, %x, %t) {args = {beta = 1 : i64, alpha = 1 : i64}, operand_names = ["self", "mat1", "mat2"]} : (tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %g = spyre.aten "aten.gelu.default"(%y) {args = {approximate = "none"}, operand_names = ["self"]} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %h = spyre.aten "aten.gelu.default"(%y) {args = {approximate = "tanh"}, operand_names = ["self"]} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %g, %h : tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// rotate_half of a 4-wide row, cat(-x[:, 2:], x[:, :2]): the slices and the negation fold
// into one 4x4 matrix M with y = x @ M, so output column 0 is -x[:, 2] (M[2][0] = -1),
// column 1 is -x[:, 3], column 2 is x[:, 0] and column 3 is x[:, 1]. No slice is selected
// on its own: they have no uses left once the concatenation absorbed them.
// CHECK-LABEL: func.func @rotate_half
// CHECK:       %[[M:.*]] = spyre.param {fx_node = "cat", source = "m.py:9", param_name = "cat.columns0", value = dense<{{\[}}[0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00], [-1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, -1.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<4x4xf32>} : tensor<4x4xf32>
// x's finite part and its +inf and -inf codes are each moved by M (exact moves,
// spyre-legalize-exact-moves.mlir).
// CHECK:       spyre.matmul %{{.*}}, %[[M]] {fx_node = "cat", source = "m.py:9"}
// CHECK:       spyre.matmul %{{.*}}, %[[M]] {fx_node = "cat", source = "m.py:9"}
// CHECK:       spyre.matmul %{{.*}}, %[[M]] {fx_node = "cat", source = "m.py:9"}
// CHECK:       %[[Y:.*]] = spyre.add
// CHECK-NEXT:  func.return %[[Y]]
func.func @rotate_half(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %lo = spyre.aten "aten.slice.Tensor"(%x) {args = {dim = -1 : i64, start = 0 : i64, end = 2 : i64, step = 1 : i64}, operand_names = ["self"], fx_node = "slice_1"} : (tensor<8x4xf32>) -> tensor<8x2xf32>
  %hi = spyre.aten "aten.slice.Tensor"(%x) {args = {dim = -1 : i64, start = 2 : i64, end = 9223372036854775807 : i64, step = 1 : i64}, operand_names = ["self"], fx_node = "slice_2"} : (tensor<8x4xf32>) -> tensor<8x2xf32>
  %neg = spyre.aten "aten.neg.default"(%hi) {args = {}, operand_names = ["self"], fx_node = "neg"} : (tensor<8x2xf32>) -> tensor<8x2xf32>
  %y = spyre.aten "aten.cat.default"(%neg, %lo) {args = {dim = -1 : i64}, operand_names = ["tensors.0", "tensors.1"], fx_node = "cat", source = "m.py:9"} : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x4xf32>
  func.return %y : tensor<8x4xf32>
}

// -----

// A split of the innermost dim into 2 + 2 columns where only the second piece is used:
// that piece is x @ S with S[2][0] = S[3][1] = 1; the unused first piece costs nothing.
// CHECK-LABEL: func.func @split_last
// CHECK:       %[[S:.*]] = spyre.param {{.*}}param_name = "split.columns1", value = dense<{{\[}}[0.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00], [1.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00]]> : tensor<4x2xf32>}
// CHECK:       spyre.matmul %{{.*}}, %[[S]]
// CHECK-NOT:   split.columns0
func.func @split_last(%x: tensor<8x4xf32>) -> tensor<8x2xf32> {
  %a, %b = spyre.aten "aten.split_with_sizes.default"(%x) {args = {split_sizes = [2 : i64, 2 : i64], dim = -1 : i64}, operand_names = ["self"], fx_node = "split"} : (tensor<8x4xf32>) -> (tensor<8x2xf32>, tensor<8x2xf32>)
  func.return %b : tensor<8x2xf32>
}

// -----

// A [16, 64] table times [2, 16, 64] activations: the table is repeated along the batch
// dim, which the kernels' row/column broadcasting does not cover (16 rows, not 1 or 32),
// so it is reshaped to [1, 16, 64] and expanded by spyre.expand_rows first.
// CHECK-LABEL: func.func @leading_broadcast
// CHECK:       %[[R:.*]] = spyre.reshape %t {{.*}}-> tensor<1x16x64xf32>
// CHECK-NEXT:  %[[E:.*]] = spyre.expand_rows %[[R]] {{.*}}-> tensor<2x16x64xf32>
// CHECK-NEXT:  spyre.mul %x, %[[E]]
func.func @leading_broadcast(%x: tensor<2x16x64xf32>, %t: tensor<16x64xf32>) -> tensor<2x16x64xf32> {
  %y = spyre.aten "aten.mul.Tensor"(%x, %t) {args = {}, operand_names = ["self", "other"], fx_node = "mul"} : (tensor<2x16x64xf32>, tensor<16x64xf32>) -> tensor<2x16x64xf32>
  func.return %y : tensor<2x16x64xf32>
}
