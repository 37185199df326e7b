// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse | filecheck %s

// A Granite residual branch, r + down(x) * 0.22: the [64, 1024] x [1024, 256] matmul's
// [64, 256] result is viewed as [1, 64, 256] (a row view: leading dims only), so the
// scaling and the residual add are its epilogue; the residual r is read as a full input tile
// in the add.
//
// Bytes: the [64, 256] fp16 intermediates (the product and the scaled product, 32768 B each)
// were each written and read once when the reshape kept the epilogue out: 4 x 32768 =
// 131072 B saved, and two kernels fewer. LX: 16x64 tiles (4x4 cores, K blocked by 64) with the
// residual tile take 36864 B of the 1677696 B budget.
// CHECK-LABEL: func.func @forward
// CHECK:      spyre.kernel "k0"(%{{.*}}, %p_d_weight_t, %r) {fused = ["linear", "linear", "mul", "add"], reason = "matmul with tile-op epilogue"
// CHECK:        spyre.matmul
// CHECK-NEXT:   spyre.reshape
// CHECK-NEXT:   spyre.mul_scalar
// CHECK-NEXT:   spyre.add
// CHECK-NOT:  spyre.kernel
func.func @forward(%x: tensor<1x64x1024xf16>, %r: tensor<1x64x256xf16>) -> tensor<1x64x256xf16> attributes {spyre.output_names = ["add"]} {
  %p_d_weight = spyre.param {param_name = "d.weight"} : tensor<256x1024xf16>
  %linear = spyre.aten "aten.linear.default"(%x, %p_d_weight) {fx_node = "linear", args = {}, operand_names = ["input", "weight"]} : (tensor<1x64x1024xf16>, tensor<256x1024xf16>) -> tensor<1x64x256xf16>
  %mul = spyre.aten "aten.mul.Tensor"(%linear) {fx_node = "mul", args = {other = 2.200000e-01 : f64}, operand_names = ["self"]} : (tensor<1x64x256xf16>) -> tensor<1x64x256xf16>
  %add = spyre.aten "aten.add.Tensor"(%r, %mul) {fx_node = "add", args = {alpha = 1 : i64}, operand_names = ["self", "other"]} : (tensor<1x64x256xf16>, tensor<1x64x256xf16>) -> tensor<1x64x256xf16>
  func.return %add : tensor<1x64x256xf16>
}
