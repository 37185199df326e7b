// RUN: spyre-opt %s -p spyre-legalize | filecheck %s

// Norms and softmax become tile ops over the last (stick) dimension; spyre-fuse puts each
// back together into one kernel.

// layer_norm(x, [64], w, b, eps): mean = sum(x) * (1/64); d = x - mean;
// var = sum(d * d) * (1/64); y = d * rsqrt(var + eps) * w + b. 1/64 = 0.015625.
// CHECK-LABEL: func.func @layer_norm
// CHECK:      %[[S:.*]] = spyre.reduce_sum %x {{.*}}: tensor<32x64xf32> -> tensor<32x1xf32>
// CHECK-NEXT: %[[MEAN:.*]] = spyre.mul_scalar %[[S]] {fx_node = "ln", value = 1.562500e-02 : f64}
// CHECK-NEXT: %[[D:.*]] = spyre.sub %x, %[[MEAN]]
// CHECK-NEXT: %[[SQ:.*]] = spyre.mul %[[D]], %[[D]]
// CHECK-NEXT: %[[V:.*]] = spyre.reduce_sum %[[SQ]]
// CHECK-NEXT: %[[VAR:.*]] = spyre.mul_scalar %[[V]] {{.*}}value = 1.562500e-02 : f64
// CHECK-NEXT: %[[E:.*]] = spyre.add_scalar %[[VAR]] {{.*}}value = 1.000000e-05 : f64
// CHECK-NEXT: %[[R:.*]] = spyre.rsqrt %[[E]]
// CHECK-NEXT: %[[N:.*]] = spyre.mul %[[D]], %[[R]]
// CHECK-NEXT: %[[W:.*]] = spyre.mul %[[N]], %w
// CHECK-NEXT: spyre.add %[[W]], %b
func.func @layer_norm(%x: tensor<32x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<32x64xf32> {
  %y = spyre.aten "aten.layer_norm.default"(%x, %w, %b) {args = {normalized_shape = [64 : i64], eps = 1.000000e-05 : f64, cudnn_enable = true}, operand_names = ["input", "weight", "bias"], fx_node = "ln"} : (tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<32x64xf32>
  func.return %y : tensor<32x64xf32>
}

// softmax(x, -1) = exp(x - max(x)) / sum(exp(x - max(x))), the max taken per row.
// CHECK-LABEL: func.func @softmax
// CHECK:      %[[M:.*]] = spyre.reduce_max %x
// CHECK-NEXT: %[[D:.*]] = spyre.sub %x, %[[M]]
// CHECK-NEXT: %[[E:.*]] = spyre.exp %[[D]]
// CHECK-NEXT: %[[S:.*]] = spyre.reduce_sum %[[E]]
// CHECK-NEXT: spyre.div %[[E]], %[[S]]
func.func @softmax(%x: tensor<2x8x128xf16>) -> tensor<2x8x128xf16> {
  %y = spyre.aten "aten._softmax.default"(%x) {args = {dim = -1 : i64, half_to_float = false}, operand_names = ["self"]} : (tensor<2x8x128xf16>) -> tensor<2x8x128xf16>
  func.return %y : tensor<2x8x128xf16>
}

// A hand-written RMS norm in core ATen: pow 2 is a square, mean(-1, keepdim) a sum and a
// scale, the scalar add a spyre.add_scalar; view keeps the innermost dim: a free reshape.
// CHECK-LABEL: func.func @rms
// CHECK:      %[[SQ:.*]] = spyre.mul %x, %x
// CHECK-NEXT: %[[S:.*]] = spyre.reduce_sum %[[SQ]]
// CHECK-NEXT: %[[MS:.*]] = spyre.mul_scalar %[[S]] {{.*}}value = 1.562500e-02 : f64
// CHECK-NEXT: %[[E:.*]] = spyre.add_scalar %[[MS]] {{.*}}value = 1.000000e-06 : f64
// CHECK-NEXT: %[[R:.*]] = spyre.rsqrt %[[E]]
// CHECK-NEXT: %[[Y:.*]] = spyre.mul %x, %[[R]]
// CHECK-NEXT: %[[V:.*]] = spyre.reshape %[[Y]] {{.*}}: tensor<32x64xf32> -> tensor<2x16x64xf32>
// CHECK-NEXT: spyre.sub_scalar %[[V]] {{.*}}value = 1.000000e+00 : f64, reverse
func.func @rms(%x: tensor<32x64xf32>) -> tensor<2x16x64xf32> {
  %p = spyre.aten "aten.pow.Tensor_Scalar"(%x) {args = {exponent = 2 : i64}, operand_names = ["self"]} : (tensor<32x64xf32>) -> tensor<32x64xf32>
  %m = spyre.aten "aten.mean.dim"(%p) {args = {dim = [-1 : i64], keepdim = true}, operand_names = ["self"]} : (tensor<32x64xf32>) -> tensor<32x1xf32>
  %e = spyre.aten "aten.add.Tensor"(%m) {args = {other = 9.9999999999999995e-07 : f64}, operand_names = ["self"]} : (tensor<32x1xf32>) -> tensor<32x1xf32>
  %r = spyre.aten "aten.rsqrt.default"(%e) {args = {}, operand_names = ["self"]} : (tensor<32x1xf32>) -> tensor<32x1xf32>
  %y = spyre.aten "aten.mul.Tensor"(%x, %r) {args = {}, operand_names = ["self", "other"]} : (tensor<32x64xf32>, tensor<32x1xf32>) -> tensor<32x64xf32>
  %v = spyre.aten "aten.view.default"(%y) {args = {size = [2 : i64, 16 : i64, 64 : i64]}, operand_names = ["self"]} : (tensor<32x64xf32>) -> tensor<2x16x64xf32>
  %o = spyre.aten "aten.rsub.Scalar"(%v) {args = {other = 1.0 : f64}, operand_names = ["self"]} : (tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  func.return %o : tensor<2x16x64xf32>
}
