// RUN: spyre-opt %s -p spyre-legalize | filecheck %s

// Near misses of eager attention stay unmatched, so op selection selects their ops one by
// one. Here the softmax runs over dim 2, the queries, not the keys: softmax(q k^T) with a
// column normalisation is not attention, and a scale by a tensor (not a constant) is not
// SDPA's scale either. Their bmms become spyre.batch_matmul (q @ k^T reading k as stored),
// the scaled one's softmax over the keys is lowered on its own, and the softmax over dim 2
// moves the queries innermost (a device transpose: identity @ s^T), reduces them there and
// moves back (move_reduced_dim): no spyre.attention anywhere.
// CHECK-NOT: spyre.attention
// CHECK: spyre.batch_matmul %q3, %{{.*}} {fx_node = "bmm", source = "m.py:2", transpose_rhs}
// CHECK: spyre.batch_matmul {{.*}}transpose_rhs{{.*}} -> tensor<1x2x16x16xf32>
// CHECK: spyre.reduce_max
// CHECK: spyre.batch_matmul {{.*}}transpose_rhs{{.*}} -> tensor<1x2x16x16xf32>
// CHECK-NOT: spyre.attention
func.func @not_attention(%q: tensor<1x2x16x32xf32>, %k: tensor<1x2x16x32xf32>, %t: tensor<1x2x16x16xf32>) -> (tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>) {
  %kt = spyre.aten "aten.permute.default"(%k) {args = {dims = [0 : i64, 1 : i64, 3 : i64, 2 : i64]}, operand_names = ["self"], fx_node = "permute", source = "m.py:1"} : (tensor<1x2x16x32xf32>) -> tensor<1x2x32x16xf32>
  %q3 = spyre.aten "aten.view.default"(%q) {args = {size = [2 : i64, 16 : i64, 32 : i64]}, operand_names = ["self"], fx_node = "view"} : (tensor<1x2x16x32xf32>) -> tensor<2x16x32xf32>
  %k3 = spyre.aten "aten.view.default"(%kt) {args = {size = [2 : i64, 32 : i64, 16 : i64]}, operand_names = ["self"], fx_node = "view_1"} : (tensor<1x2x32x16xf32>) -> tensor<2x32x16xf32>
  %v3 = spyre.aten "aten.view.default"(%k) {args = {size = [2 : i64, 16 : i64, 32 : i64]}, operand_names = ["self"], fx_node = "view_2"} : (tensor<1x2x16x32xf32>) -> tensor<2x16x32xf32>
  %s3 = spyre.aten "aten.bmm.default"(%q3, %k3) {args = {}, operand_names = ["self", "mat2"], fx_node = "bmm", source = "m.py:2"} : (tensor<2x16x32xf32>, tensor<2x32x16xf32>) -> tensor<2x16x16xf32>
  %s = spyre.aten "aten.view.default"(%s3) {args = {size = [1 : i64, 2 : i64, 16 : i64, 16 : i64]}, operand_names = ["self"], fx_node = "view_3"} : (tensor<2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %p = spyre.aten "aten.softmax.int"(%s) {args = {dim = 2 : i64}, operand_names = ["self"], fx_node = "softmax", source = "m.py:3"} : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %p3 = spyre.aten "aten.view.default"(%p) {args = {size = [2 : i64, 16 : i64, 16 : i64]}, operand_names = ["self"], fx_node = "view_4"} : (tensor<1x2x16x16xf32>) -> tensor<2x16x16xf32>
  %o3 = spyre.aten "aten.bmm.default"(%p3, %v3) {args = {}, operand_names = ["self", "mat2"], fx_node = "bmm_1", source = "m.py:4"} : (tensor<2x16x16xf32>, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %o = spyre.aten "aten.view.default"(%o3) {args = {size = [1 : i64, 2 : i64, 16 : i64, 32 : i64]}, operand_names = ["self"], fx_node = "view_5"} : (tensor<2x16x32xf32>) -> tensor<1x2x16x32xf32>
  %kt2 = spyre.aten "aten.permute.default"(%k) {args = {dims = [0 : i64, 1 : i64, 3 : i64, 2 : i64]}, operand_names = ["self"], fx_node = "permute_1", source = "m.py:1"} : (tensor<1x2x16x32xf32>) -> tensor<1x2x32x16xf32>
  %k32 = spyre.aten "aten.view.default"(%kt2) {args = {size = [2 : i64, 32 : i64, 16 : i64]}, operand_names = ["self"], fx_node = "view_6"} : (tensor<1x2x32x16xf32>) -> tensor<2x32x16xf32>
  %s32 = spyre.aten "aten.bmm.default"(%q3, %k32) {args = {}, operand_names = ["self", "mat2"], fx_node = "bmm_2", source = "m.py:2"} : (tensor<2x16x32xf32>, tensor<2x32x16xf32>) -> tensor<2x16x16xf32>
  %s2 = spyre.aten "aten.view.default"(%s32) {args = {size = [1 : i64, 2 : i64, 16 : i64, 16 : i64]}, operand_names = ["self"], fx_node = "view_7"} : (tensor<2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %ss2 = spyre.aten "aten.mul.Tensor"(%s2, %t) {args = {}, operand_names = ["self", "other"], fx_node = "mul"} : (tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %p2 = spyre.aten "aten.softmax.int"(%ss2) {args = {dim = -1 : i64}, operand_names = ["self"], fx_node = "softmax_1"} : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %p32 = spyre.aten "aten.view.default"(%p2) {args = {size = [2 : i64, 16 : i64, 16 : i64]}, operand_names = ["self"], fx_node = "view_8"} : (tensor<1x2x16x16xf32>) -> tensor<2x16x16xf32>
  %o32 = spyre.aten "aten.bmm.default"(%p32, %v3) {args = {}, operand_names = ["self", "mat2"], fx_node = "bmm_3", source = "m.py:4"} : (tensor<2x16x16xf32>, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %o2 = spyre.aten "aten.view.default"(%o32) {args = {size = [1 : i64, 2 : i64, 16 : i64, 32 : i64]}, operand_names = ["self"], fx_node = "view_9"} : (tensor<2x16x32xf32>) -> tensor<1x2x16x32xf32>
  func.return %o, %o2 : tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>
}
