// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse | filecheck %s

// Granite's attention output: h = r + o(a) * 0.22, then the RMS norm of h. The scaling and
// the residual add join the o projection (a row view of its [64, 1024] result). The norm's
// row reduction would make the matmul's tile span whole rows (tn = 1024: the 64 x 1024 x
// 1024 matmul split over rows only), so the cost model weighs it: fused, against the matmul
// with its residual epilogue plus the reduction with the cast and square feeding it (a
// single-use chain, moved along) as a kernel of its own that reads h back. Two kernels win
// (4x8 cores of 16x128 tiles, 69632 B of LX, and a 32x1 norm), and the ledger says so; the
// rest of the norm joins the reduction's kernel.
//
// Bytes: h (131072 B) is a result either way; the norm kernel reads it once more (131072 B)
// instead of splitting the matmul over rows only.
// CHECK-LABEL: func.func @forward
// CHECK:      %[[H:.*]] = spyre.kernel "k0"(%{{.*}}, %p_o_weight_t, %r) {fused = ["linear", "linear", "mul", "add"], reason = "matmul with tile-op epilogue"
// CHECK-NOT:    spyre.reduce_sum
// CHECK:      spyre.kernel "k1"(%[[H]], %p_w) {fused = ["_to_copy", "pow_1", "mean", "mean", "add_1", "rsqrt", "mul_1", "_to_copy_1", "mul_2"], reason = "tile-op graph"
// CHECK-SAME:   spyre.fusion = ["row reduction mean kept out of the matmul kernel: {{[0-9]+}} predicted cycles as two kernels against {{[0-9]+}} fused"]
// CHECK:        spyre.reduce_sum
// CHECK-NOT:  spyre.kernel
func.func @forward(%a: tensor<1x64x1024xf16>, %r: tensor<1x64x1024xf16>) -> (tensor<1x64x1024xf16>, tensor<1x64x1024xf16>) attributes {spyre.output_names = ["add", "mul_2"]} {
  %p_w = spyre.param {param_name = "w"} : tensor<1024xf16>
  %p_o_weight = spyre.param {param_name = "o.weight"} : tensor<1024x1024xf16>
  %linear = spyre.aten "aten.linear.default"(%a, %p_o_weight) {fx_node = "linear", args = {}, operand_names = ["input", "weight"]} : (tensor<1x64x1024xf16>, tensor<1024x1024xf16>) -> tensor<1x64x1024xf16>
  %mul = spyre.aten "aten.mul.Tensor"(%linear) {fx_node = "mul", args = {other = 2.200000e-01 : f64}, operand_names = ["self"]} : (tensor<1x64x1024xf16>) -> tensor<1x64x1024xf16>
  %add = spyre.aten "aten.add.Tensor"(%r, %mul) {fx_node = "add", args = {alpha = 1 : i64}, operand_names = ["self", "other"]} : (tensor<1x64x1024xf16>, tensor<1x64x1024xf16>) -> tensor<1x64x1024xf16>
  %_to_copy = spyre.aten "aten._to_copy.default"(%add) {fx_node = "_to_copy", args = {dtype = "float32", non_blocking = false}, operand_names = ["self"]} : (tensor<1x64x1024xf16>) -> tensor<1x64x1024xf32>
  %pow = spyre.aten "aten.pow.Tensor_Scalar"(%_to_copy) {fx_node = "pow_1", args = {exponent = 2 : i64}, operand_names = ["self"]} : (tensor<1x64x1024xf32>) -> tensor<1x64x1024xf32>
  %mean = spyre.aten "aten.mean.dim"(%pow) {fx_node = "mean", args = {dim = [-1 : i64], keepdim = true}, operand_names = ["self"]} : (tensor<1x64x1024xf32>) -> tensor<1x64x1xf32>
  %add_1 = spyre.aten "aten.add.Tensor"(%mean) {fx_node = "add_1", args = {other = 1.000000e-06 : f64, alpha = 1 : i64}, operand_names = ["self"]} : (tensor<1x64x1xf32>) -> tensor<1x64x1xf32>
  %rsqrt = spyre.aten "aten.rsqrt.default"(%add_1) {fx_node = "rsqrt", args = {}, operand_names = ["self"]} : (tensor<1x64x1xf32>) -> tensor<1x64x1xf32>
  %mul_1 = spyre.aten "aten.mul.Tensor"(%_to_copy, %rsqrt) {fx_node = "mul_1", args = {}, operand_names = ["self", "other"]} : (tensor<1x64x1024xf32>, tensor<1x64x1xf32>) -> tensor<1x64x1024xf32>
  %_to_copy_1 = spyre.aten "aten._to_copy.default"(%mul_1) {fx_node = "_to_copy_1", args = {dtype = "float16", non_blocking = false}, operand_names = ["self"]} : (tensor<1x64x1024xf32>) -> tensor<1x64x1024xf16>
  %mul_2 = spyre.aten "aten.mul.Tensor"(%p_w, %_to_copy_1) {fx_node = "mul_2", args = {}, operand_names = ["self", "other"]} : (tensor<1024xf16>, tensor<1x64x1024xf16>) -> tensor<1x64x1024xf16>
  func.return %add, %mul_2 : tensor<1x64x1024xf16>, tensor<1x64x1024xf16>
}
