// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse | filecheck %s

// SwiGLU, silu(gate(x)) * up(x), at 64 tokens, hidden 256, MLP 1024 (fp16). A linear on
// [1, 64, 256] is a [64, 256] x [256, 1024] matmul whose [64, 1024] result is viewed as
// [1, 64, 1024]: that reshape only splits the leading dim, so for a kernel tiled over rows it
// is the same tile (a row view) and silu joins the gate matmul as its epilogue. The product
// reads the up matmul's result and silu's, a value of another kernel: it joins the up matmul
// (the later of its producers) and reads silu's [64, 1024] as a full input tile.
//
// Bytes: each [64, 1024] fp16 intermediate is 131072 B. Apart (silu and the product each a
// kernel), g, s and u are each written and read once: 6 x 131072 = 786432 B through LPDDR.
// Fused, only s is: 2 x 131072 = 262144 B; 524288 B saved. LX: the up kernel's 16x64 tiles
// (4x8 cores, K blocked by 64) need 36864 B with the silu tile, 32768 B without, of the
// 1677696 B budget. The cost model predicts the fused pair against the matmul and the
// product apart and records it in `spyre.fusion`.
// CHECK-LABEL: func.func @forward
// CHECK:      %[[S:.*]] = spyre.kernel "k0"(%{{.*}}, %p_g_weight_t) {fused = ["linear", "linear", "silu"], reason = "matmul with tile-op epilogue"
// CHECK:        spyre.matmul
// CHECK-NEXT:   spyre.reshape
// CHECK-NEXT:   spyre.silu
// CHECK:      spyre.kernel "k1"(%{{.*}}, %p_u_weight_t, %[[S]]) {fused = ["linear_1", "linear_1", "mul"], reason = "matmul with tile-op epilogue"
// CHECK-SAME:   spyre.fusion = ["joined mul: {{[0-9]+}} predicted cycles fused against {{[0-9]+}} as 2 kernels"]
// CHECK:        spyre.matmul
// CHECK-NEXT:   spyre.reshape
// CHECK-NEXT:   spyre.mul
// CHECK-NOT:  spyre.kernel
func.func @forward(%x: tensor<1x64x256xf16>) -> tensor<1x64x1024xf16> attributes {spyre.output_names = ["mul"]} {
  %p_g_weight = spyre.param {param_name = "g.weight"} : tensor<1024x256xf16>
  %p_u_weight = spyre.param {param_name = "u.weight"} : tensor<1024x256xf16>
  %linear = spyre.aten "aten.linear.default"(%x, %p_g_weight) {fx_node = "linear", args = {}, operand_names = ["input", "weight"]} : (tensor<1x64x256xf16>, tensor<1024x256xf16>) -> tensor<1x64x1024xf16>
  %silu = spyre.aten "aten.silu.default"(%linear) {fx_node = "silu", args = {}, operand_names = ["self"]} : (tensor<1x64x1024xf16>) -> tensor<1x64x1024xf16>
  %linear_1 = spyre.aten "aten.linear.default"(%x, %p_u_weight) {fx_node = "linear_1", args = {}, operand_names = ["input", "weight"]} : (tensor<1x64x256xf16>, tensor<1024x256xf16>) -> tensor<1x64x1024xf16>
  %mul = spyre.aten "aten.mul.Tensor"(%silu, %linear_1) {fx_node = "mul", args = {}, operand_names = ["self", "other"]} : (tensor<1x64x1024xf16>, tensor<1x64x1024xf16>) -> tensor<1x64x1024xf16>
  func.return %mul : tensor<1x64x1024xf16>
}
