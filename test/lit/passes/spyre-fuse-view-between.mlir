// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse | filecheck %s

// A view of an intermediate (%h, which the kernel also returns) that stands between the
// kernel's ops: the kernel is placed where its last op was, so the view moves to just after
// it instead of reading it before it runs (hf:lara_mini fp16 crashed in
// spyre-place-memory on such a view once the importer collapsed view chains).
// CHECK-LABEL: func.func @view_between
// CHECK:      %h, %n = spyre.kernel "k0"(%x, %r) {fused = ["add", "mul"]
// CHECK:      %v = spyre.reshape %h
// CHECK-NEXT: func.return %n, %v
func.func @view_between(%x: tensor<32x64xf32>, %r: tensor<32x64xf32>) -> (tensor<32x64xf32>, tensor<1x32x64xf32>) {
  %h = spyre.aten "aten.add.Tensor"(%x, %r) {args = {}, operand_names = ["self", "other"], fx_node = "add"} : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  %v = spyre.aten "aten.view.default"(%h) {args = {size = [1 : i64, 32 : i64, 64 : i64]}, operand_names = ["self"], fx_node = "view"} : (tensor<32x64xf32>) -> tensor<1x32x64xf32>
  %n = spyre.aten "aten.mul.Tensor"(%h, %h) {args = {}, operand_names = ["self", "other"], fx_node = "mul"} : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  func.return %n, %v : tensor<32x64xf32>, tensor<1x32x64xf32>
}
