// RUN: not spyre-opt %s -p spyre-legalize 2>&1 | filecheck %s

// A hand-written `where` whose `other` is given as an argument attribute, not an operand:
// a located refusal naming the missing tensor argument (it was a Python traceback).
// CHECK: error: {{.*}}1 op(s) have no Spyre lowering yet:
// CHECK-NEXT: m.py:3: aten.where.self (node where): its schema's tensor argument(s) other are not among its operands (condition, self); pass every tensor argument as an operand, named in `operand_names`
func.func @short(%c: tensor<4x32xi1>, %a: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %r = spyre.aten "aten.where.self"(%c, %a) {args = {other = 0.0 : f64}, operand_names = ["condition", "self"], fx_node = "where", source = "m.py:3"} : (tensor<4x32xi1>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %r : tensor<4x32xf32>
}
