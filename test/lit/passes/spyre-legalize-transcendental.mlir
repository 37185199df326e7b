// RUN: spyre-opt %s -p spyre-legalize | filecheck %s

// Elementary functions without an SFU instruction are compositions of SFU ops
// (passes/graph/legalize/transcendental.py).

// cosh(x) = exp(x - ln 2) + exp(-x - ln 2): halved before the exponential, finite wherever
// cosh is in fp32.
// CHECK-LABEL: func.func @cosh
// CHECK:      %[[A:.*]] = spyre.add_scalar %x {{.*}}value = -0.69314718055994529 : f64
// CHECK-NEXT: %[[EA:.*]] = spyre.exp %[[A]]
// CHECK-NEXT: %[[B:.*]] = spyre.sub_scalar %x {{.*}}value = -0.69314718055994529 : f64, reverse
// CHECK-NEXT: %[[EB:.*]] = spyre.exp %[[B]]
// CHECK-NEXT: spyre.add %[[EA]], %[[EB]]
func.func @cosh(%x: tensor<32x64xf16>) -> tensor<32x64xf16> {
  %y = spyre.aten "aten.cosh.default"(%x) {args = {}, operand_names = ["self"], fx_node = "cosh"} : (tensor<32x64xf16>) -> tensor<32x64xf16>
  func.return %y : tensor<32x64xf16>
}

// asinh(x) = sign(x) log(|x| + sqrt(x^2 + 1)), the root as m sqrt(c^2 + r^2) with
// m = max(|x|, 1), c = clamp(x, -1, 1), r = 1 / m (no overflow of x^2); the sign by keeping
// log's value where x > 0 and its negation where x < 0.
// CHECK-LABEL: func.func @asinh
// CHECK:      %[[ABS:.*]] = spyre.abs %x
// CHECK-NEXT: %[[M:.*]] = spyre.maximum_scalar %[[ABS]] {{.*}}value = 1.000000e+00 : f64
// CHECK-NEXT: %[[LO:.*]] = spyre.maximum_scalar %x {{.*}}value = -1.000000e+00 : f64
// CHECK-NEXT: %[[C:.*]] = spyre.minimum_scalar %[[LO]] {{.*}}value = 1.000000e+00 : f64
// CHECK-NEXT: %[[R:.*]] = spyre.reciprocal %[[M]]
// CHECK-NEXT: %[[C2:.*]] = spyre.mul %[[C]], %[[C]]
// CHECK-NEXT: %[[R2:.*]] = spyre.mul %[[R]], %[[R]]
// CHECK-NEXT: %[[S:.*]] = spyre.add %[[C2]], %[[R2]]
// CHECK-NEXT: %[[H:.*]] = spyre.sqrt %[[S]]
// CHECK-NEXT: %[[ROOT:.*]] = spyre.mul %[[M]], %[[H]]
// CHECK:      %[[L:.*]] = spyre.log
// CHECK:      spyre.keep %[[L]]
// CHECK:      spyre.neg %[[L]]
func.func @asinh(%x: tensor<32x64xf16>) -> tensor<32x64xf16> {
  %y = spyre.aten "aten.asinh.default"(%x) {args = {}, operand_names = ["self"], fx_node = "asinh"} : (tensor<32x64xf16>) -> tensor<32x64xf16>
  func.return %y : tensor<32x64xf16>
}

// atan(x): a first half angle c / (r + sqrt(c^2 + r^2)) of the unit parts, a second
// t / (1 + sqrt(1 + t^2)), then the fitted odd polynomial (leading coefficient -1/3) on
// |t| <= tan(pi / 8), doubled twice.
// CHECK-LABEL: func.func @atan
// CHECK:      %[[H:.*]] = spyre.sqrt
// CHECK-NEXT: %[[DEN:.*]] = spyre.add %{{.*}}, %[[H]]
// CHECK-NEXT: %[[T:.*]] = spyre.div %{{.*}}, %[[DEN]]
// CHECK-NEXT: %[[T2:.*]] = spyre.mul %[[T]], %[[T]]
// CHECK-NEXT: %[[P:.*]] = spyre.add_scalar %[[T2]] {{.*}}value = 1.000000e+00 : f64
// CHECK-NEXT: %[[Q:.*]] = spyre.sqrt %[[P]]
// CHECK-NEXT: %[[QP:.*]] = spyre.add_scalar %[[Q]] {{.*}}value = 1.000000e+00 : f64
// CHECK-NEXT: %[[U:.*]] = spyre.div %[[T]], %[[QP]]
// CHECK:      spyre.add_scalar {{.*}}value = -0.33333314579631462 : f64
// CHECK:      %[[A:.*]] = spyre.mul_scalar {{.*}}value = 2.000000e+00 : f64
// CHECK-NEXT: spyre.mul_scalar %[[A]] {{.*}}value = 2.000000e+00 : f64
func.func @atan(%x: tensor<32x64xf16>) -> tensor<32x64xf16> {
  %y = spyre.aten "aten.atan.default"(%x) {args = {}, operand_names = ["self"], fx_node = "atan"} : (tensor<32x64xf16>) -> tensor<32x64xf16>
  func.return %y : tensor<32x64xf16>
}
