// RUN: spyre-opt %s -p spyre-legalize | filecheck %s

// Composite elementwise ops and row reductions are selected as chains of SFU tile ops.

// leaky_relu(x, 0.1) = max(x, 0.1 * x): a scalar multiply and a maximum.
// CHECK-LABEL: func.func @leaky_relu
// CHECK:      %[[S:.*]] = spyre.mul_scalar %x {{.*}}value = 1.000000e-01 : f64
// CHECK-NEXT: spyre.maximum %x, %[[S]]
func.func @leaky_relu(%x: tensor<32x64xf16>) -> tensor<32x64xf16> {
  %y = spyre.aten "aten.leaky_relu.default"(%x) {args = {negative_slope = 1.000000e-01 : f64}, operand_names = ["self"], fx_node = "lrelu"} : (tensor<32x64xf16>) -> tensor<32x64xf16>
  func.return %y : tensor<32x64xf16>
}

// relu6 = hardtanh(x, 0, 6): max with the lower bound, then min with the upper one.
// CHECK-LABEL: func.func @relu6
// CHECK:      %[[L:.*]] = spyre.maximum_scalar %x {{.*}}value = 0.000000e+00 : f64
// CHECK-NEXT: spyre.minimum_scalar %[[L]] {{.*}}value = 6.000000e+00 : f64
func.func @relu6(%x: tensor<32x64xf16>) -> tensor<32x64xf16> {
  %y = spyre.aten "aten.hardtanh.default"(%x) {args = {min_val = 0.000000e+00 : f64, max_val = 6.000000e+00 : f64}, operand_names = ["self"], fx_node = "relu6"} : (tensor<32x64xf16>) -> tensor<32x64xf16>
  func.return %y : tensor<32x64xf16>
}

// std(x, -1, correction=1) over 64 elements: with d = x - mean and s = max |d| (at least
// 2^-126, the smallest normal f32, so a constant row divides 0 by it), s * sqrt(sum((d/s)^2)
// / 63) (1/63 = 0.015873015873015872). Scaled so the squares stay in f32's range: d = 1e30
// squares to inf, (d / s)^2 to 1.
// CHECK-LABEL: func.func @std
// CHECK:      %[[S:.*]] = spyre.reduce_sum %x
// CHECK-NEXT: %[[MEAN:.*]] = spyre.mul_scalar %[[S]] {{.*}}value = 1.562500e-02 : f64
// CHECK-NEXT: %[[D:.*]] = spyre.sub %x, %[[MEAN]]
// CHECK-NEXT: %[[A:.*]] = spyre.abs %[[D]]
// CHECK-NEXT: %[[M:.*]] = spyre.reduce_max %[[A]]
// CHECK-NEXT: %[[SC:.*]] = spyre.maximum_scalar %[[M]] {{.*}}value = 1.1754943508222875e-38 : f64
// CHECK-NEXT: %[[Q:.*]] = spyre.div %[[D]], %[[SC]]
// CHECK-NEXT: %[[SQ:.*]] = spyre.mul %[[Q]], %[[Q]]
// CHECK-NEXT: %[[V:.*]] = spyre.reduce_sum %[[SQ]]
// CHECK-NEXT: %[[VAR:.*]] = spyre.mul_scalar %[[V]] {{.*}}value = 0.015873015873015872 : f64
// CHECK-NEXT: %[[R:.*]] = spyre.sqrt %[[VAR]]
// CHECK-NEXT: spyre.mul %[[R]], %[[SC]]
func.func @std(%x: tensor<32x64xf32>) -> tensor<32x1xf32> {
  %y = spyre.aten "aten.std.correction"(%x) {args = {dim = [-1 : i64], correction = 1 : i64, keepdim = true}, operand_names = ["self"], fx_node = "std"} : (tensor<32x64xf32>) -> tensor<32x1xf32>
  func.return %y : tensor<32x1xf32>
}

// log_softmax = x - max - log(sum(exp(x - max))).
// CHECK-LABEL: func.func @log_softmax
// CHECK:      %[[M:.*]] = spyre.reduce_max %x
// CHECK-NEXT: %[[D:.*]] = spyre.sub %x, %[[M]]
// CHECK-NEXT: %[[E:.*]] = spyre.exp %[[D]]
// CHECK-NEXT: %[[S:.*]] = spyre.reduce_sum %[[E]]
// CHECK-NEXT: %[[L:.*]] = spyre.log %[[S]]
// CHECK-NEXT: %[[A:.*]] = spyre.sub %x, %[[M]]
// CHECK-NEXT: spyre.sub %[[A]], %[[L]]
func.func @log_softmax(%x: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %y = spyre.aten "aten._log_softmax.default"(%x) {args = {dim = -1 : i64, half_to_float = false}, operand_names = ["self"], fx_node = "lsm"} : (tensor<32x64xf32>) -> tensor<32x64xf32>
  func.return %y : tensor<32x64xf32>
}

// x ** 1.5 has no one-op form: exp(1.5 * log x).
// CHECK-LABEL: func.func @pow_frac
// CHECK:      %[[L:.*]] = spyre.log %x
// CHECK-NEXT: %[[P:.*]] = spyre.mul_scalar %[[L]] {{.*}}value = 1.500000e+00 : f64
// CHECK-NEXT: spyre.exp %[[P]]
func.func @pow_frac(%x: tensor<32x64xf16>) -> tensor<32x64xf16> {
  %y = spyre.aten "aten.pow.Tensor_Scalar"(%x) {args = {exponent = 1.500000e+00 : f64}, operand_names = ["self"], fx_node = "pow"} : (tensor<32x64xf16>) -> tensor<32x64xf16>
  func.return %y : tensor<32x64xf16>
}
