// RUN: spyre-opt %s -p spyre-legalize --split-input-file | filecheck %s

// A decode step's mask: positions 0..255 (a folded arange) <= pos (an input), viewed
// [1, 256], as SDPA's boolean attn_mask. The comparison is f32 arithmetic on the casts:
// 1 - (a - pos) is >= 1 exactly where a <= pos, clamped to [0, 1] it is the predicate (exact
// for integers below 2^24); the mask is then p * 30000 - 30000 (0 or -30000 exactly) in the
// query's type, the additive form spyre.attention takes. A query that sees no key gets zeros
// from SDPA, so the output is multiplied by max(p) over the keys (1 or 0: exact), a column
// the kernels broadcast along rows but not over the two heads: expanded to them by DMA.
// CHECK-LABEL: func.func @decode_mask
// CHECK:       %[[A:.*]] = spyre.cast %a {fx_node = "le"} : tensor<256xi64> -> tensor<256xf32>
// CHECK-NEXT:  %[[P:.*]] = spyre.cast %pos {fx_node = "le"} : tensor<1xi64> -> tensor<1xf32>
// CHECK-NEXT:  %[[D:.*]] = spyre.sub %[[A]], %[[P]] {fx_node = "le"} : tensor<256xf32>, tensor<1xf32> -> tensor<256xf32>
// CHECK-NEXT:  %[[S:.*]] = spyre.sub_scalar %[[D]] {fx_node = "le", value = 1.000000e+00 : f64, reverse}
// CHECK-NEXT:  %[[LO:.*]] = spyre.maximum_scalar %[[S]] {fx_node = "le", value = 0.000000e+00 : f64}
// CHECK-NEXT:  %[[LE:.*]] = spyre.minimum_scalar %[[LO]] {fx_node = "le", spyre.predicate, value = 1.000000e+00 : f64}
// CHECK-NEXT:  %[[M:.*]] = spyre.reshape %[[LE]] {fx_node = "view"} : tensor<256xf32> -> tensor<1x256xf32>
// CHECK-NEXT:  %[[SEES:.*]] = spyre.reduce_max %[[M]] {fx_node = "sdpa"} : tensor<1x256xf32> -> tensor<1x1xf32>
// CHECK-NEXT:  %[[X:.*]] = spyre.mul_scalar %[[M]] {fx_node = "sdpa", value = 3.000000e+04 : f64}
// CHECK-NEXT:  %[[ADD:.*]] = spyre.add_scalar %[[X]] {fx_node = "sdpa", value = -3.000000e+04 : f64}
// CHECK-NEXT:  %[[H:.*]] = spyre.cast %[[ADD]] {fx_node = "sdpa"} : tensor<1x256xf32> -> tensor<1x256xf16>
// CHECK-NEXT:  %[[Y:.*]] = spyre.attention %q, %k, %k mask %[[H]]
// CHECK-NEXT:  %[[R:.*]] = spyre.reshape %[[SEES]] {fx_node = "sdpa"} : tensor<1x1xf32> -> tensor<1x1x1x1xf32>
// CHECK-NEXT:  %[[HEADS:.*]] = spyre.expand_rows %[[R]] {fx_node = "sdpa"} : tensor<1x1x1x1xf32> -> tensor<1x2x1x1xf32>
// CHECK-NEXT:  %[[S16:.*]] = spyre.cast %[[HEADS]] {fx_node = "sdpa"} : tensor<1x2x1x1xf32> -> tensor<1x2x1x1xf16>
// CHECK-NEXT:  spyre.mul %[[Y]], %[[S16]] {fx_node = "sdpa"}
func.func @decode_mask(%pos: tensor<1xi64>, %q: tensor<1x2x1x64xf16>, %k: tensor<1x2x256x64xf16>) -> tensor<1x2x1x64xf16> {
  %a = spyre.param {param_name = "arange.folded"} : tensor<256xi64>
  %le = spyre.aten "aten.le.Tensor"(%a, %pos) {args = {}, operand_names = ["self", "other"], fx_node = "le"} : (tensor<256xi64>, tensor<1xi64>) -> tensor<256xi1>
  %m = spyre.aten "aten.view.default"(%le) {args = {size = [1 : i64, 256 : i64]}, operand_names = ["self"], fx_node = "view"} : (tensor<256xi1>) -> tensor<1x256xi1>
  %o = spyre.aten "aten.scaled_dot_product_attention.default"(%q, %k, %k, %m) {args = {}, operand_names = ["query", "key", "value", "attn_mask"], fx_node = "sdpa"} : (tensor<1x2x1x64xf16>, tensor<1x2x256x64xf16>, tensor<1x2x256x64xf16>, tensor<1x256xi1>) -> tensor<1x2x1x64xf16>
  func.return %o : tensor<1x2x1x64xf16>
}

// -----

// where(x != 3, 0.5 (a folded scalar), y): p = clamp(|x - 3|, 0, 1); keep(0.5, p) is 0.5
// where p is 1 and -0.0 elsewhere (the constant is the SFU's immediate, reverse), keep(y, 1 - p)
// is y where p is 0 and -0.0 elsewhere, and -0.0 + v == v for every v, so the sum is exactly
// the chosen value, whatever it is (a blend p * a + (1 - p) * b turns 0 * -inf into NaN).
// CHECK-LABEL: func.func @where_scalar
// CHECK:       %[[D:.*]] = spyre.sub_scalar %{{.*}} {fx_node = "ne", value = 3.000000e+00 : f64}
// CHECK-NEXT:  %[[ABS:.*]] = spyre.abs %[[D]]
// CHECK:       %[[P:.*]] = spyre.minimum_scalar %{{.*}} {fx_node = "ne", spyre.predicate, value = 1.000000e+00 : f64}
// CHECK-NEXT:  %[[NP:.*]] = spyre.sub_scalar %[[P]] {fx_node = "where", value = 1.000000e+00 : f64, reverse}
// CHECK-NEXT:  %[[T1:.*]] = spyre.keep_scalar %[[P]] {fx_node = "where", value = 5.000000e-01 : f64, reverse}
// CHECK-NEXT:  %[[T2:.*]] = spyre.keep %y, %[[NP]] {fx_node = "where"}
// CHECK-NEXT:  spyre.add %[[T1]], %[[T2]] {fx_node = "where"} : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
func.func @where_scalar(%x: tensor<4x32xi32>, %y: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %h = spyre.param {param_name = "half.folded", value = dense<0.5> : tensor<f32>} : tensor<f32>
  %ne = spyre.aten "aten.ne.Scalar"(%x) {args = {other = 3 : i64}, operand_names = ["self"], fx_node = "ne"} : (tensor<4x32xi32>) -> tensor<4x32xi1>
  %w = spyre.aten "aten.where.self"(%ne, %h, %y) {args = {}, operand_names = ["condition", "self", "other"], fx_node = "where"} : (tensor<4x32xi1>, tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %w : tensor<4x32xf32>
}

// -----

// masked_fill(x > 3, -inf) as where(p, -inf, y) (the hex string is -inf's f32 bytes, little
// endian: xDSL reads a bare hex dense as an integer): the same two keeps with -inf as the
// immediate; keep(-inf, p) is -inf where p is 1 and -0.0 where it is 0, never 0 * -inf.
// CHECK-LABEL: func.func @where_neg_inf
// CHECK:       %[[P:.*]] = spyre.minimum_scalar %{{.*}} {fx_node = "gt", spyre.predicate, value = 1.000000e+00 : f64}
// CHECK-NEXT:  %[[NP:.*]] = spyre.sub_scalar %[[P]] {fx_node = "where", value = 1.000000e+00 : f64, reverse}
// CHECK-NEXT:  %[[T1:.*]] = spyre.keep_scalar %[[P]] {fx_node = "where", value = 0xfff0000000000000 : f64, reverse}
// CHECK-NEXT:  %[[T2:.*]] = spyre.keep %y, %[[NP]] {fx_node = "where"}
// CHECK-NEXT:  spyre.add %[[T1]], %[[T2]] {fx_node = "where"}
// CHECK-NOT:   spyre.mul
func.func @where_neg_inf(%x: tensor<4x32xi32>, %y: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %h = spyre.param {param_name = "fill.folded", value = dense<"0x000080FF"> : tensor<f32>} : tensor<f32>
  %gt = spyre.aten "aten.gt.Scalar"(%x) {args = {other = 3 : i64}, operand_names = ["self"], fx_node = "gt"} : (tensor<4x32xi32>) -> tensor<4x32xi1>
  %w = spyre.aten "aten.where.self"(%gt, %h, %y) {args = {}, operand_names = ["condition", "self", "other"], fx_node = "where"} : (tensor<4x32xi1>, tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %w : tensor<4x32xf32>
}
