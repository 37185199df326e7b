// RUN: spyre-opt %s -p spyre-legalize | filecheck %s

// x.repeat(3, 1) on [16, 64]: a new size-1 dim in front of dim 0 is broadcast to 3 by a row
// move, then merged back into 48 rows (the innermost dim is kept, so both reshapes are free).
// CHECK-LABEL: func.func @repeat_rows
// CHECK:      %[[S:.*]] = spyre.reshape %x {{.*}}: tensor<16x64xf16> -> tensor<1x16x64xf16>
// CHECK-NEXT: %[[E:.*]] = spyre.expand_rows %[[S]] {{.*}}: tensor<1x16x64xf16> -> tensor<3x16x64xf16>
// CHECK-NEXT: spyre.reshape %[[E]] {{.*}}: tensor<3x16x64xf16> -> tensor<48x64xf16>
func.func @repeat_rows(%x: tensor<16x64xf16>) -> tensor<48x64xf16> {
  %y = spyre.aten "aten.repeat.default"(%x) {args = {repeats = [3 : i64, 1 : i64]}, operand_names = ["self"], fx_node = "repeat"} : (tensor<16x64xf16>) -> tensor<48x64xf16>
  func.return %y : tensor<48x64xf16>
}

// F.pad(x, (2, 1), value=0.5) on 61 columns: x @ P with P [61, 64] a shifted identity, then
// a constant row holding 0.5 in columns 0, 1 and 63. The move is exact for NaN
// (spyre-legalize-exact-moves.mlir): x's finite part and its NaN code are moved by the same P.
// CHECK-LABEL: func.func @pad_value
// CHECK:      %[[P:.*]] = spyre.param {{.*}}param_name = "pad.columns"{{.*}}: tensor<61x64xf16>
// CHECK:      %[[M:.*]] = spyre.matmul %{{.*}}, %[[P]] {{.*}}: tensor<16x61xf16>, tensor<61x64xf16> -> tensor<16x64xf16>
// CHECK-NEXT: %[[C:.*]] = spyre.matmul %{{.*}}, %[[P]] {{.*}}: tensor<16x61xf16>, tensor<61x64xf16> -> tensor<16x64xf16>
// CHECK:      %[[E:.*]] = spyre.add %[[M]], %{{.*}}
// CHECK-NEXT: %[[F:.*]] = spyre.param {{.*}}param_name = "pad.fill", value = dense<[5.000000e-01, 5.000000e-01, 0.000000e+00{{.*}}0.000000e+00, 5.000000e-01]>
// CHECK-NEXT: spyre.add %[[E]], %[[F]]
func.func @pad_value(%x: tensor<16x61xf16>) -> tensor<16x64xf16> {
  %y = spyre.aten "aten.constant_pad_nd.default"(%x) {args = {pad = [2 : i64, 1 : i64], value = 5.000000e-01 : f64}, operand_names = ["self"], fx_node = "pad"} : (tensor<16x61xf16>) -> tensor<16x64xf16>
  func.return %y : tensor<16x64xf16>
}

// x - x.mean(-1)[..., None]: the keepdim=False mean is selected with its dim kept, and the
// unsqueeze that put it back disappears.
// CHECK-LABEL: func.func @center
// CHECK:      %[[S:.*]] = spyre.reduce_sum %x {{.*}}: tensor<16x64xf32> -> tensor<16x1xf32>
// CHECK-NEXT: %[[MEAN:.*]] = spyre.mul_scalar %[[S]] {{.*}}value = 1.562500e-02 : f64
// CHECK-NEXT: spyre.sub %x, %[[MEAN]]
// CHECK-NOT:  aten
func.func @center(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %m = spyre.aten "aten.mean.dim"(%x) {args = {dim = [-1 : i64], keepdim = false}, operand_names = ["self"], fx_node = "mean"} : (tensor<16x64xf32>) -> tensor<16xf32>
  %u = spyre.aten "aten.unsqueeze.default"(%m) {args = {dim = -1 : i64}, operand_names = ["self"], fx_node = "unsqueeze"} : (tensor<16xf32>) -> tensor<16x1xf32>
  %y = spyre.aten "aten.sub.Tensor"(%x, %u) {args = {}, operand_names = ["self", "other"], fx_node = "sub"} : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32>
  func.return %y : tensor<16x64xf32>
}

// mean over dim 1 of [2, 64, 32]: the 128 input rows are the contraction of P [2, 128] @ x,
// with P[b, 64 b + s] = 1/64 (0.015625); x is the rhs, so its 128 rows must be whole sticks.
// CHECK-LABEL: func.func @mean_pool
// CHECK:      %[[X:.*]] = spyre.reshape %x {{.*}}: tensor<2x64x32xf16> -> tensor<128x32xf16>
// CHECK-NEXT: %[[P:.*]] = spyre.param {{.*}}param_name = "mean.rows", value = dense<"0x0024{{.*}}"> : tensor<2x128xf16>}
// The rows' finite part and NaN code are summed by the same P (exact moves).
// CHECK:      %[[M:.*]] = spyre.matmul %[[P]], %{{.*}} {{.*}}: tensor<2x128xf16>, tensor<128x32xf16> -> tensor<2x32xf16>
// CHECK-NEXT: %[[C:.*]] = spyre.matmul %[[P]], %{{.*}} {{.*}}: tensor<2x128xf16>, tensor<128x32xf16> -> tensor<2x32xf16>
// CHECK:      %[[Y:.*]] = spyre.add %[[M]], %{{.*}}
// CHECK-NEXT: func.return %[[Y]]
func.func @mean_pool(%x: tensor<2x64x32xf16>) -> tensor<2x32xf16> {
  %y = spyre.aten "aten.mean.dim"(%x) {args = {dim = [1 : i64], keepdim = false}, operand_names = ["self"], fx_node = "mean"} : (tensor<2x64x32xf16>) -> tensor<2x32xf16>
  func.return %y : tensor<2x32xf16>
}
