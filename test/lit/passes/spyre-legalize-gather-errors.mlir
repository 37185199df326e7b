// RUN: not spyre-opt %s -p spyre-legalize 2>&1 | filecheck %s

// Gathers the device does not do are named with their node, line and what to do instead:
// columns (dim 1) of a 2-D tensor, and rows of a 3-D table.
// CHECK: error: {{.*}}2 op(s) have no Spyre lowering yet:
// CHECK-NEXT: m.py:7: aten.index_select.default (node index_select): along dim 1 of a [64, 32] tensor (only rows of a 2-D tensor, dim 0, are gathered; a gather of columns is a matmul by a selection matrix when the index is constant)
// CHECK-NEXT: m.py:8: aten.embedding.default (node embedding): a 3-D table [4, 8, 64] (rows of a 2-D table are gathered; reshape it to [rows, width] first)
func.func @unsupported(%x: tensor<64x32xf32>, %idx: tensor<8xi64>, %t: tensor<4x8x64xf32>) -> (tensor<64x8xf32>, tensor<8x8x64xf32>) {
  %c = spyre.aten "aten.index_select.default"(%x, %idx) {args = {dim = 1 : i64}, operand_names = ["self", "index"], fx_node = "index_select", source = "m.py:7"} : (tensor<64x32xf32>, tensor<8xi64>) -> tensor<64x8xf32>
  %e = spyre.aten "aten.embedding.default"(%t, %idx) {args = {}, operand_names = ["weight", "indices"], fx_node = "embedding", source = "m.py:8"} : (tensor<4x8x64xf32>, tensor<8xi64>) -> tensor<8x8x64xf32>
  func.return %c, %e : tensor<64x8xf32>, tensor<8x8x64xf32>
}
