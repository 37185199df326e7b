// RUN: not spyre-opt %s -p spyre-legalize 2>&1 | filecheck %s

// Updates the device does not do in place are named: along the stick dim, into an
// activation, values broadcast over heads, and a buffer that is also read before.
// CHECK: error: {{.*}}4 op(s) have no Spyre lowering yet:
// CHECK-NEXT: m.py:1: aten.index_put.default (node dim3): along dim 3 of a [1, 2, 256, 64] tensor (rows are written along the second-to-last dim, the sequence dim of a KV cache)
// CHECK-NEXT: m.py:2: aten.index_put.default (node act): into an activation (only buffers are updated, in place
// CHECK-NEXT: m.py:3: aten.index_put.default (node bcast): values of shape [1, 1, 1, 64] for [1, 2, 1, 64] rows (broadcast values are not lowered; pass one row per position)
// CHECK-NEXT: m.py:4: aten.index_put.default (node twice): buffer 'c3' is also read before the update; the update happens in place, so read the updated value
func.func @unsupported(%pos: tensor<1xi64>, %x: tensor<1x2x256x64xf32>, %v: tensor<1x2x1x64xf32>, %b: tensor<1x1x1x64xf32>) -> (tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>) {
  %c1 = spyre.param {param_name = "c1"} : tensor<1x2x256x64xf32>
  %c2 = spyre.param {param_name = "c2"} : tensor<1x2x256x64xf32>
  %c3 = spyre.param {param_name = "c3"} : tensor<1x2x256x64xf32>
  %u1 = spyre.aten "aten.index_put.default"(%c1, %pos, %v) {args = {accumulate = false}, operand_names = ["self", "indices.3", "values"], fx_node = "dim3", source = "m.py:1"} : (tensor<1x2x256x64xf32>, tensor<1xi64>, tensor<1x2x1x64xf32>) -> tensor<1x2x256x64xf32>
  %u2 = spyre.aten "aten.index_put.default"(%x, %pos, %v) {args = {accumulate = false}, operand_names = ["self", "indices.2", "values"], fx_node = "act", source = "m.py:2"} : (tensor<1x2x256x64xf32>, tensor<1xi64>, tensor<1x2x1x64xf32>) -> tensor<1x2x256x64xf32>
  %u3 = spyre.aten "aten.index_put.default"(%c2, %pos, %b) {args = {accumulate = false}, operand_names = ["self", "indices.2", "values"], fx_node = "bcast", source = "m.py:3"} : (tensor<1x2x256x64xf32>, tensor<1xi64>, tensor<1x1x1x64xf32>) -> tensor<1x2x256x64xf32>
  %u4 = spyre.aten "aten.index_put.default"(%c3, %pos, %v) {args = {accumulate = false}, operand_names = ["self", "indices.2", "values"], fx_node = "twice", source = "m.py:4"} : (tensor<1x2x256x64xf32>, tensor<1xi64>, tensor<1x2x1x64xf32>) -> tensor<1x2x256x64xf32>
  func.return %u1, %u2, %u3, %u4, %c3 : tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>
}
