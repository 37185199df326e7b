// RUN: not spyre-opt %s -p spyre-legalize 2>&1 | filecheck %s

// Every op without a lowering is reported at once, with its FX node and source line.
// CHECK: error: {{.*}}2 op(s) have no Spyre lowering yet:
// CHECK-NEXT: m.py:7: aten.cumprod.default (node cumprod): no Spyre lowering
// CHECK-NEXT: m.py:8: aten.addmm.default (node addmm): addmm with beta or alpha other than 1
func.func @unsupported(%x: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %c = spyre.aten "aten.cumprod.default"(%x) {args = {dim = 1 : i64}, operand_names = ["self"], fx_node = "cumprod", source = "m.py:7"} : (tensor<64x64xf16>) -> tensor<64x64xf16>
  %y = spyre.aten "aten.addmm.default"(%c, %x, %x) {args = {beta = 2 : i64, alpha = 1 : i64}, operand_names = ["self", "mat1", "mat2"], fx_node = "addmm", source = "m.py:8"} : (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  func.return %y : tensor<64x64xf16>
}
