// RUN: spyre-opt %s -p spyre-legalize --split-input-file | filecheck %s

// A token embedding: int64 ids [2, 16] pick rows of the [100, 64] table, giving
// [2, 16] + [64]. The ids stay int64 in the graph; on the device they are int32, and
// dma.gather checks each against [0, 100) when it runs.
// CHECK-LABEL: func.func @embedding
// CHECK:       %[[W:.*]] = spyre.param {param_name = "emb.weight"} : tensor<100x64xf16>
// CHECK-NEXT:  %[[E:.*]] = spyre.gather %[[W]], %ids {fx_node = "embedding", source = "m.py:5"} : tensor<100x64xf16>, tensor<2x16xi64> -> tensor<2x16x64xf16>
// CHECK-NEXT:  func.return %[[E]]
func.func @embedding(%ids: tensor<2x16xi64>) -> tensor<2x16x64xf16> {
  %w = spyre.param {param_name = "emb.weight"} : tensor<100x64xf16>
  %e = spyre.aten "aten.embedding.default"(%w, %ids) {args = {padding_idx = -1 : i64, scale_grad_by_freq = false, sparse = false}, operand_names = ["weight", "indices"], fx_node = "embedding", source = "m.py:5"} : (tensor<100x64xf16>, tensor<2x16xi64>) -> tensor<2x16x64xf16>
  func.return %e : tensor<2x16x64xf16>
}

// -----

// index_select along dim 0 of a 2-D tensor is the same gather of rows, with int32 indices;
// the source may be an activation (any graph tensor is in LPDDR).
// CHECK-LABEL: func.func @index_select_rows
// CHECK:       %[[G:.*]] = spyre.gather %x, %idx {fx_node = "index_select"} : tensor<64x32xf32>, tensor<8xi32> -> tensor<8x32xf32>
func.func @index_select_rows(%x: tensor<64x32xf32>, %idx: tensor<8xi32>) -> tensor<8x32xf32> {
  %g = spyre.aten "aten.index_select.default"(%x, %idx) {args = {dim = 0 : i64}, operand_names = ["self", "index"], fx_node = "index_select"} : (tensor<64x32xf32>, tensor<8xi32>) -> tensor<8x32xf32>
  func.return %g : tensor<8x32xf32>
}
