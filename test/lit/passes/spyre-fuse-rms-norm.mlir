// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse | filecheck %s

// An RMS norm that casts its fp16 input to f32 twice (once for the mean of squares, once for
// the scaling, as Hugging Face's Granite does): the second cast reads only the function's
// input, so it starts a group of its own, and the scaling reads it and the reduction's rsqrt.
// That group is read by no other kernel and used only by the scaling: it is absorbed into the
// reduction's kernel, and the norm is one kernel (reduction + scale).
//
// Bytes at [64, 1024]: apart, the cast kernel writes 262144 B of f32 that the scaling kernel
// reads back, and the rsqrt column goes out and in (a stick per row, 8192 B each way):
// 540672 B beyond reading x (131072 B) twice. Fused, x is read once and the result written
// once. LX: 2 rows of 1024 per tile, 37376 B of the 1677696 B budget. The decision and the
// predicted cycles of the three kernels it replaces are in `spyre.fusion`.
// CHECK-LABEL: func.func @forward
// CHECK:      spyre.kernel "k0"(%x, %p_w) {fused = ["_to_copy", "pow_1", "mean", "mean", "_to_copy_1", "add", "rsqrt", "mul", "_to_copy_2", "mul_1"], reason = "tile-op graph"
// CHECK-SAME:   spyre.fusion = ["joined mul: {{[0-9]+}} predicted cycles fused against {{[0-9]+}} as 3 kernels"]
// CHECK:        spyre.reduce_sum
// CHECK:        spyre.rsqrt
// CHECK-NOT:  spyre.kernel
func.func @forward(%x: tensor<1x64x1024xf16>) -> tensor<1x64x1024xf16> attributes {spyre.output_names = ["mul_1"]} {
  %p_w = spyre.param {param_name = "w"} : tensor<1024xf16>
  %_to_copy = spyre.aten "aten._to_copy.default"(%x) {fx_node = "_to_copy", args = {dtype = "float32", non_blocking = false}, operand_names = ["self"]} : (tensor<1x64x1024xf16>) -> tensor<1x64x1024xf32>
  %pow = spyre.aten "aten.pow.Tensor_Scalar"(%_to_copy) {fx_node = "pow_1", args = {exponent = 2 : i64}, operand_names = ["self"]} : (tensor<1x64x1024xf32>) -> tensor<1x64x1024xf32>
  %mean = spyre.aten "aten.mean.dim"(%pow) {fx_node = "mean", args = {dim = [-1 : i64], keepdim = true}, operand_names = ["self"]} : (tensor<1x64x1024xf32>) -> tensor<1x64x1xf32>
  %_to_copy_1 = spyre.aten "aten._to_copy.default"(%x) {fx_node = "_to_copy_1", args = {dtype = "float32", non_blocking = false}, operand_names = ["self"]} : (tensor<1x64x1024xf16>) -> tensor<1x64x1024xf32>
  %add = spyre.aten "aten.add.Tensor"(%mean) {fx_node = "add", args = {other = 1.000000e-06 : f64, alpha = 1 : i64}, operand_names = ["self"]} : (tensor<1x64x1xf32>) -> tensor<1x64x1xf32>
  %rsqrt = spyre.aten "aten.rsqrt.default"(%add) {fx_node = "rsqrt", args = {}, operand_names = ["self"]} : (tensor<1x64x1xf32>) -> tensor<1x64x1xf32>
  %mul = spyre.aten "aten.mul.Tensor"(%_to_copy_1, %rsqrt) {fx_node = "mul", args = {}, operand_names = ["self", "other"]} : (tensor<1x64x1024xf32>, tensor<1x64x1xf32>) -> tensor<1x64x1024xf32>
  %_to_copy_2 = spyre.aten "aten._to_copy.default"(%mul) {fx_node = "_to_copy_2", args = {dtype = "float16", non_blocking = false}, operand_names = ["self"]} : (tensor<1x64x1024xf32>) -> tensor<1x64x1024xf16>
  %mul_1 = spyre.aten "aten.mul.Tensor"(%p_w, %_to_copy_2) {fx_node = "mul_1", args = {}, operand_names = ["self", "other"]} : (tensor<1024xf16>, tensor<1x64x1024xf16>) -> tensor<1x64x1024xf16>
  func.return %mul_1 : tensor<1x64x1024xf16>
}
