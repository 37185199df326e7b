// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse | filecheck %s

// Rotary embedding of 4 query heads of 128 over 64 positions: q * cos + rotate_half(q) * sin.
// rotate_half is a column map, a [256, 128] x [128, 128] matmul (design note 23), exact for
// NaN (design note 63): k2 splits q into its finite part and its NaN code (both keep q's
// zero padding: keep(x, p) and keep(1, p) are -0.0 where p is 0), k3 moves the code by the
// matrix, and k4 moves the finite part with everything after it as its epilogue: the NaN
// put back where the code says, the product with sin and the sum with q * cos, which no
// other kernel reads. The cos and sin broadcasts over the heads stay row moves (DMA only).
// (The halves are whole fp16 sticks, but their swap would be a row move with a negative
// step, which DMA runs lack.)
//
// Bytes: each [1, 4, 64, 128] fp16 intermediate is 65536 B. k2 reads q and writes the two
// channels, k3 reads one and writes its move, k4 reads the other two: 5 x 65536 B that the
// plain matmul (which read q itself, with the rotary in its epilogue) did not move, the
// price of the exact move here (design note 63 measures it on the Granite layer).
// CHECK-LABEL: func.func @forward
// CHECK:      spyre.kernel "k0"(%view) {fused = ["permute"], reason = "row move (DMA only)"
// CHECK:      spyre.kernel "k1"({{.*}}) {fused = ["mul"], reason = "row move (DMA only)"
// CHECK:      spyre.kernel "k2"({{.*}}) {fused = ["cat", "cat", "cat", "cat"], reason = "tile-op graph"
// CHECK:        spyre.yield %{{.*}}, %{{.*}} : tensor<256x128xf16>, tensor<256x128xf16>
// CHECK:      spyre.kernel "k3"({{.*}}, %cat_columns0) {fused = ["cat"], reason = "single op"
// CHECK:      spyre.kernel "k5"({{.*}}) {fused = ["mul_1"], reason = "row move (DMA only)"
// CHECK:      spyre.kernel "k4"({{.*}}, %cat_columns0, %permute, {{.*}}) {fused = ["cat", "mul", "cat", "cat", "cat", "cat", "cat", "mul_1", "add"], reason = "matmul with tile-op epilogue"
// CHECK-SAME:   spyre.fusion = ["joined cat: {{[0-9]+}} predicted cycles fused against {{[0-9]+}} as 2 kernels", "joined mul_1: {{[0-9]+}} predicted cycles fused against {{[0-9]+}} as 2 kernels", "joined add: {{[0-9]+}} predicted cycles fused against {{[0-9]+}} as 3 kernels"]
// CHECK:        spyre.matmul
// CHECK-NEXT:   spyre.mul
// CHECK-NEXT:   spyre.mul_scalar
// CHECK-NEXT:   spyre.keep
// CHECK-NEXT:   spyre.sub
// CHECK-NEXT:   spyre.add
// CHECK-NEXT:   spyre.reshape
// CHECK-NEXT:   spyre.mul
// CHECK-NEXT:   spyre.add
// CHECK-NOT:  spyre.kernel
func.func @forward(%q: tensor<1x64x512xf16>, %cos: tensor<64x128xf16>, %sin: tensor<64x128xf16>) -> tensor<1x4x64x128xf16> attributes {spyre.output_names = ["add"]} {
  %view = spyre.aten "aten.view.default"(%q) {fx_node = "view", args = {size = [1 : i64, 64 : i64, -1 : i64, 128 : i64]}, operand_names = ["self"]} : (tensor<1x64x512xf16>) -> tensor<1x64x4x128xf16>
  %permute = spyre.aten "aten.permute.default"(%view) {fx_node = "permute", args = {dims = [0 : i64, 2 : i64, 1 : i64, 3 : i64]}, operand_names = ["self"]} : (tensor<1x64x4x128xf16>) -> tensor<1x4x64x128xf16>
  %mul = spyre.aten "aten.mul.Tensor"(%permute, %cos) {fx_node = "mul", args = {}, operand_names = ["self", "other"]} : (tensor<1x4x64x128xf16>, tensor<64x128xf16>) -> tensor<1x4x64x128xf16>
  %slice = spyre.aten "aten.slice.Tensor"(%permute) {fx_node = "slice_1", args = {dim = 3 : i64, start = 64 : i64, end = 9223372036854775807 : i64, step = 1 : i64}, operand_names = ["self"]} : (tensor<1x4x64x128xf16>) -> tensor<1x4x64x64xf16>
  %neg = spyre.aten "aten.neg.default"(%slice) {fx_node = "neg", args = {}, operand_names = ["self"]} : (tensor<1x4x64x64xf16>) -> tensor<1x4x64x64xf16>
  %slice_1 = spyre.aten "aten.slice.Tensor"(%permute) {fx_node = "slice_2", args = {dim = 3 : i64, start = 0 : i64, end = 64 : i64, step = 1 : i64}, operand_names = ["self"]} : (tensor<1x4x64x128xf16>) -> tensor<1x4x64x64xf16>
  %cat = spyre.aten "aten.cat.default"(%neg, %slice_1) {fx_node = "cat", args = {dim = -1 : i64}, operand_names = ["tensors.0", "tensors.1"]} : (tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16>) -> tensor<1x4x64x128xf16>
  %mul_1 = spyre.aten "aten.mul.Tensor"(%cat, %sin) {fx_node = "mul_1", args = {}, operand_names = ["self", "other"]} : (tensor<1x4x64x128xf16>, tensor<64x128xf16>) -> tensor<1x4x64x128xf16>
  %add = spyre.aten "aten.add.Tensor"(%mul, %mul_1) {fx_node = "add", args = {alpha = 1 : i64}, operand_names = ["self", "other"]} : (tensor<1x4x64x128xf16>, tensor<1x4x64x128xf16>) -> tensor<1x4x64x128xf16>
  func.return %add : tensor<1x4x64x128xf16>
}
