// RUN: not spyre-opt %s -p spyre-legalize 2>&1 | filecheck %s

// Composites outside the lowered range are refused with the parameter that is.
// CHECK: error: {{.*}}2 op(s) have no Spyre lowering yet:
// CHECK-NEXT: m.py:3: aten.leaky_relu.default (node lrelu): negative_slope -0.5 < 0
// CHECK-NEXT: m.py:4: aten.linalg_vector_norm.default (node norm): ord 3.0 (2, 1, inf and -inf are lowered)
func.func @refused(%x: tensor<32x64xf16>) -> tensor<32x1xf16> {
  %y = spyre.aten "aten.leaky_relu.default"(%x) {args = {negative_slope = -5.000000e-01 : f64}, operand_names = ["self"], fx_node = "lrelu", source = "m.py:3"} : (tensor<32x64xf16>) -> tensor<32x64xf16>
  %n = spyre.aten "aten.linalg_vector_norm.default"(%y) {args = {ord = 3 : i64, dim = [-1 : i64], keepdim = true}, operand_names = ["self"], fx_node = "norm", source = "m.py:4"} : (tensor<32x64xf16>) -> tensor<32x1xf16>
  func.return %n : tensor<32x1xf16>
}
