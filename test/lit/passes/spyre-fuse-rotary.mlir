// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse | filecheck %s

// Rotary embedding of 4 query heads of 128 over 64 positions: q * cos + rotate_half(q) * sin.
// rotate_half is a column map, a [256, 128] x [128, 128] matmul (design note 23) whose
// result is viewed back as [1, 4, 64, 128] (a row view). Its product with sin joins it as
// its epilogue; the sum reads q * cos, a kernel of its own that no other kernel reads and only
// the sum uses, so that kernel is absorbed and the whole rotary is one kernel per q/k. The
// cos and sin broadcasts over the heads stay row moves (DMA only).
//
// Bytes: each [1, 4, 64, 128] fp16 intermediate is 65536 B. Apart, q * cos, the rotation and
// its product with sin are each written and read once: 6 x 65536 = 393216 B; fused, the
// kernel reads the rotated q a second time as a full tile for q * cos (65536 B): 327680 B
// saved and three kernels fewer. LX: 16x64 tiles with three full input tiles, 57344 B of
// the 1677696 B budget.
// CHECK-LABEL: func.func @forward
// CHECK:      spyre.kernel "k0"(%view) {fused = ["permute"], reason = "row move (DMA only)"
// CHECK:      spyre.kernel "k1"({{.*}}) {fused = ["mul"], reason = "row move (DMA only)"
// CHECK:      spyre.kernel "k3"({{.*}}) {fused = ["mul_1"], reason = "row move (DMA only)"
// CHECK:      spyre.kernel "k2"({{.*}}) {fused = ["cat", "mul", "cat", "mul_1", "add"], reason = "matmul with tile-op epilogue"
// CHECK-SAME:   spyre.fusion = ["joined mul_1: {{[0-9]+}} predicted cycles fused against {{[0-9]+}} as 2 kernels", "joined add: {{[0-9]+}} predicted cycles fused against {{[0-9]+}} as 3 kernels"]
// CHECK:        spyre.matmul
// CHECK-NEXT:   spyre.mul
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
