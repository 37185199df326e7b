// RUN: spyre-opt %s -p spyre-legalize --split-input-file | filecheck %s

// `cache[:, :, pos] = v` as torch.export writes it: index_put with indices [None, None, pos]
// (the operand name keeps the position, 2, the second-to-last dim). The values [2, 1, 64]
// are the [1, 2, 1, 64] rows (a free reshape), and the buffer has no other reader, so the
// update is a spyre.scatter done in place.
// CHECK-LABEL: func.func @kv_append
// CHECK:       %[[C:.*]] = spyre.param {param_name = "v_cache"} : tensor<1x2x256x64xf32>
// CHECK-NEXT:  %[[V:.*]] = spyre.reshape %v {fx_node = "index_put", source = "m.py:9"} : tensor<2x1x64xf32> -> tensor<1x2x1x64xf32>
// CHECK-NEXT:  %[[U:.*]] = spyre.scatter %[[C]], %pos, %[[V]] {fx_node = "index_put", source = "m.py:9"} : tensor<1x2x256x64xf32>, tensor<1xi64>, tensor<1x2x1x64xf32> -> tensor<1x2x256x64xf32>
func.func @kv_append(%pos: tensor<1xi64>, %v: tensor<2x1x64xf32>) -> tensor<1x2x256x64xf32> {
  %c = spyre.param {param_name = "v_cache"} : tensor<1x2x256x64xf32>
  %u = spyre.aten "aten.index_put.default"(%c, %pos, %v) {args = {accumulate = false}, operand_names = ["self", "indices.2", "values"], fx_node = "index_put", source = "m.py:9"} : (tensor<1x2x256x64xf32>, tensor<1xi64>, tensor<2x1x64xf32>) -> tensor<1x2x256x64xf32>
  func.return %u : tensor<1x2x256x64xf32>
}

// -----

// index_copy along dim -2 is the same update.
// CHECK-LABEL: func.func @index_copy
// CHECK:       spyre.scatter %{{.*}}, %pos, %k {fx_node = "index_copy"} : tensor<2x16x64xf16>, tensor<3xi32>, tensor<2x3x64xf16> -> tensor<2x16x64xf16>
func.func @index_copy(%pos: tensor<3xi32>, %k: tensor<2x3x64xf16>) -> tensor<2x16x64xf16> {
  %c = spyre.param {param_name = "k_cache"} : tensor<2x16x64xf16>
  %u = spyre.aten "aten.index_copy.default"(%c, %pos, %k) {args = {dim = 1 : i64}, operand_names = ["self", "index", "source"], fx_node = "index_copy"} : (tensor<2x16x64xf16>, tensor<3xi32>, tensor<2x3x64xf16>) -> tensor<2x16x64xf16>
  func.return %u : tensor<2x16x64xf16>
}
