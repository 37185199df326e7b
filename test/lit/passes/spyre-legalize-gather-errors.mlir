// RUN: not spyre-opt %s -p spyre-legalize 2>&1 | filecheck %s

// Gathers the device does not do are named with their node, line and what to do instead:
// two run-time index tensors in one index, and rows of a 3-D table.
// CHECK: error: {{.*}}2 op(s) have no Spyre lowering yet:
// CHECK-NEXT: m.py:7: aten.index.Tensor (node index): run-time index tensors at dims [0, 1] (one run-time index tensor, at any dim, is lowered; index one dim at a time)
// CHECK-NEXT: m.py:8: aten.embedding.default (node embedding): a 3-D table [4, 8, 64] (rows of a 2-D table are gathered; reshape it to [rows, width] first)
func.func @unsupported(%x: tensor<64x32x16xf32>, %idx: tensor<8xi64>, %t: tensor<4x8x64xf32>) -> (tensor<8x16xf32>, tensor<8x8x64xf32>) {
  %c = spyre.aten "aten.index.Tensor"(%x, %idx, %idx) {args = {}, operand_names = ["self", "indices.0", "indices.1"], fx_node = "index", source = "m.py:7"} : (tensor<64x32x16xf32>, tensor<8xi64>, tensor<8xi64>) -> tensor<8x16xf32>
  %e = spyre.aten "aten.embedding.default"(%t, %idx) {args = {}, operand_names = ["weight", "indices"], fx_node = "embedding", source = "m.py:8"} : (tensor<4x8x64xf32>, tensor<8xi64>) -> tensor<8x8x64xf32>
  func.return %c, %e : tensor<8x16xf32>, tensor<8x8x64xf32>
}
