// RUN: not spyre-opt %s -p spyre-legalize 2>&1 | filecheck %s

// prod has no lowering: refused with the reason and what to do.
// CHECK: error: {{.*}}1 op(s) have no Spyre lowering yet:
// CHECK-NEXT: m.py:6: aten.prod.dim_int (node prod): a product reduction (not lowered: exp(sum(log|x|)) with a sign count loses precision; multiply the factors explicitly)
func.func @prod(%x: tensor<64x128xf16>) -> tensor<64xf16> {
  %y = spyre.aten "aten.prod.dim_int"(%x) {args = {dim = -1 : i64, keepdim = false}, operand_names = ["self"], fx_node = "prod", source = "m.py:6"} : (tensor<64x128xf16>) -> tensor<64xf16>
  func.return %y : tensor<64xf16>
}
