// RUN: spyre-opt %s -p spyre-legalize | filecheck %s

// A padded batch's mask algebra (note 105): a comparison of an int64 mask with zero, a
// constant all-true prefix (a predicate param) concatenated with it, the boolean result
// viewed as a column, and the count of the predicate as an int64 sum. The concatenation
// and the view are f32 moves whose results stay predicates, the sum runs on f32 and is
// cast back to the integer type; no op is left as spyre.aten.
// CHECK-LABEL: func.func @mask_algebra
// CHECK-NOT: spyre.aten
// CHECK: spyre.param {{.*}}spyre.predicate{{.*}} : tensor<2x2xf32>
// CHECK: %ne = spyre.minimum_scalar {{.*}}spyre.predicate
// CHECK: %cat = spyre.add {{.*}}spyre.predicate{{.*}} -> tensor<2x18xf32>
// CHECK: spyre.reduce_sum %ne {{.*}} -> tensor<2x1xf32>
// CHECK: spyre.cast {{.*}} : tensor<2x1xf32> -> tensor<2x1xi64>
// CHECK: return {{.*}} : tensor<2x18xf16>, tensor<2x1xi64>
func.func @mask_algebra(%mask: tensor<2x16xi64>) -> (tensor<2x18xf16>, tensor<2x1xi64>) {
  %prefix = spyre.param {param_name = "ones.folded", spyre.predicate, spyre.int_values = array<i64: 1, 1, 1, 1>} : tensor<2x2xf32>
  %ne = spyre.aten "aten.ne.Scalar"(%mask) {args = {other = 0 : i64}, operand_names = ["self"], fx_node = "ne", source = "m.py:1"} : (tensor<2x16xi64>) -> tensor<2x16xi1>
  %cat = spyre.aten "aten.cat.default"(%prefix, %ne) {args = {dim = 1 : i64}, operand_names = ["tensors.0", "tensors.1"], fx_node = "cat", source = "m.py:2"} : (tensor<2x2xf32>, tensor<2x16xi1>) -> tensor<2x18xi1>
  %sum = spyre.aten "aten.sum.dim_IntList"(%ne) {args = {dim = [-1 : i64], keepdim = true}, operand_names = ["self"], fx_node = "sum", source = "m.py:3"} : (tensor<2x16xi1>) -> tensor<2x1xi64>
  %f = spyre.aten "aten._to_copy.default"(%cat) {args = {dtype = "torch.float16"}, operand_names = ["self"], fx_node = "to", source = "m.py:4"} : (tensor<2x18xi1>) -> tensor<2x18xf16>
  func.return %f, %sum : tensor<2x18xf16>, tensor<2x1xi64>
}
