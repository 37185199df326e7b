// RUN: spyre-opt %s -p spyre-legalize | filecheck %s

// A boolean input of the program is f32 0/1 on the device, the predicate form comparisons
// make: the graph function takes it as f32, lists it in spyre.bool_inputs (the host
// converts torch.bool), and `where` reads it as a predicate: keep(x, m) + keep(y, 1 - m).
// CHECK-LABEL: func.func @bool_input(%x: tensor<4x64xf32>, %y: tensor<4x64xf32>, %m: tensor<4x64xf32>) -> tensor<4x64xf32> attributes {spyre.bool_inputs = array<i64: 2>}
// CHECK-NEXT:  %[[N:.*]] = spyre.sub_scalar %m {fx_node = "where", value = 1.000000e+00 : f64, reverse}
// CHECK-NEXT:  %[[A:.*]] = spyre.keep %x, %m {fx_node = "where"}
// CHECK-NEXT:  %[[B:.*]] = spyre.keep %y, %[[N]] {fx_node = "where"}
// CHECK-NEXT:  spyre.add %[[A]], %[[B]] {fx_node = "where"}
func.func @bool_input(%x: tensor<4x64xf32>, %y: tensor<4x64xf32>, %m: tensor<4x64xi1>) -> tensor<4x64xf32> {
  %w = spyre.aten "aten.where.self"(%m, %x, %y) {args = {}, operand_names = ["condition", "self", "other"], fx_node = "where"} : (tensor<4x64xi1>, tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  func.return %w : tensor<4x64xf32>
}
