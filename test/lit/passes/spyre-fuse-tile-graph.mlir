// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse | filecheck %s

// A residual add, an RMS norm and a softmax over the same 32x64 rows form one kernel: the
// add's result %h feeds the square and the normalisation (a DAG, not a chain), the row
// reductions give one-column values that broadcast back along the rows, and the norm weight
// is a one-row value. Nothing but the final softmax leaves LX.
// CHECK-LABEL: func.func @block
// CHECK:      %[[K:.*]] = spyre.kernel "k0"(%x, %r, %w) {fused = ["add", "pow", "mean", "mean", "add_1", "rsqrt", "mul", "mul_1", "softmax", "softmax", "softmax", "softmax", "softmax"], reason = "tile-op graph"
// CHECK:        spyre.reduce_sum
// CHECK:        spyre.reduce_max
// CHECK:        spyre.yield
// CHECK-NOT:  spyre.kernel
// CHECK:      func.return %[[K]]
func.func @block(%x: tensor<32x64xf32>, %r: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %w = spyre.param {param_name = "w"} : tensor<64xf32>
  %h = spyre.aten "aten.add.Tensor"(%x, %r) {args = {}, operand_names = ["self", "other"], fx_node = "add"} : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  %p = spyre.aten "aten.pow.Tensor_Scalar"(%h) {args = {exponent = 2 : i64}, operand_names = ["self"], fx_node = "pow"} : (tensor<32x64xf32>) -> tensor<32x64xf32>
  %m = spyre.aten "aten.mean.dim"(%p) {args = {dim = [-1 : i64], keepdim = true}, operand_names = ["self"], fx_node = "mean"} : (tensor<32x64xf32>) -> tensor<32x1xf32>
  %e = spyre.aten "aten.add.Tensor"(%m) {args = {other = 1.0e-06 : f64}, operand_names = ["self"], fx_node = "add_1"} : (tensor<32x1xf32>) -> tensor<32x1xf32>
  %q = spyre.aten "aten.rsqrt.default"(%e) {args = {}, operand_names = ["self"], fx_node = "rsqrt"} : (tensor<32x1xf32>) -> tensor<32x1xf32>
  %n = spyre.aten "aten.mul.Tensor"(%h, %q) {args = {}, operand_names = ["self", "other"], fx_node = "mul"} : (tensor<32x64xf32>, tensor<32x1xf32>) -> tensor<32x64xf32>
  %y = spyre.aten "aten.mul.Tensor"(%w, %n) {args = {}, operand_names = ["self", "other"], fx_node = "mul_1"} : (tensor<64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  %s = spyre.aten "aten._softmax.default"(%y) {args = {dim = -1 : i64, half_to_float = false}, operand_names = ["self"], fx_node = "softmax"} : (tensor<32x64xf32>) -> tensor<32x64xf32>
  func.return %s : tensor<32x64xf32>
}
