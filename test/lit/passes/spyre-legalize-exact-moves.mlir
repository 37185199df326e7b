// RUN: spyre-opt %s -p spyre-legalize --split-input-file | filecheck %s

// Exact data moves (design note 63). A move the PT does as a matmul by a constant matrix
// multiplies every element of a row by the matrix's zeros too; 0 * NaN and 0 * inf are NaN,
// so one NaN would turn its whole row into NaN. The special values travel apart instead.

// A 16-bit slice of columns 8..39 (not whole sticks: a column map). DL16 holds NaN but no
// infinity, so one code: with t = x - x (0, or NaN where x is NaN), Q = keep(1, t) is 1 at a
// NaN and -0.0 elsewhere, and f = keep(x, 1 - Q) is x with its NaNs made -0.0. Both are
// moved by the same matrix; a = keep(Q' * inf, Q') is inf where a NaN arrived (and -0.0
// elsewhere: keep drops the NaN of 0 * inf), a - a is NaN there and 0 elsewhere, and
// f' + (a - a) is the move, exactly, NaN included.
// CHECK-LABEL: func.func @slice_f16
// CHECK:      %[[T:.*]] = spyre.sub %x, %x
// CHECK-NEXT: %[[Q:.*]] = spyre.keep_scalar %[[T]] {{.*}}value = 1.000000e+00 : f64, reverse}
// CHECK-NEXT: %[[NQ:.*]] = spyre.sub_scalar %[[Q]] {{.*}}value = 1.000000e+00 : f64, reverse}
// CHECK-NEXT: %[[F:.*]] = spyre.keep %x, %[[NQ]]
// CHECK-NEXT: %[[FM:.*]] = spyre.matmul %[[F]], %[[M:.*]] {{.*}}: tensor<16x128xf16>, tensor<128x32xf16> -> tensor<16x32xf16>
// CHECK-NEXT: %[[QM:.*]] = spyre.matmul %[[Q]], %[[M]] {{.*}}: tensor<16x128xf16>, tensor<128x32xf16> -> tensor<16x32xf16>
// CHECK-NEXT: %[[I:.*]] = spyre.mul_scalar %[[QM]] {{.*}}value = 0x7ff0000000000000 : f64}
// CHECK-NEXT: %[[A:.*]] = spyre.keep %[[I]], %[[QM]]
// CHECK-NEXT: %[[N:.*]] = spyre.sub %[[A]], %[[A]]
// CHECK-NEXT: %[[Y:.*]] = spyre.add %[[FM]], %[[N]]
// CHECK-NEXT: func.return %[[Y]]
func.func @slice_f16(%x: tensor<16x128xf16>) -> tensor<16x32xf16> {
  %y = spyre.aten "aten.slice.Tensor"(%x) {args = {dim = -1 : i64, start = 8 : i64, end = 40 : i64, step = 1 : i64}, operand_names = ["self"], fx_node = "slice"} : (tensor<16x128xf16>) -> tensor<16x32xf16>
  func.return %y : tensor<16x32xf16>
}

// -----

// The same slice in f32, where +inf and -inf are values too. With S = keep(x, Q) (the
// special values, -0.0 elsewhere), P = keep(1, max(S, 0)) is 1 at +inf and NaN (max
// propagates NaN) and N = keep(1, min(S, 0)) is 1 at -inf and NaN. Each of f, P, N is moved;
// the result is f' + keep(P' * inf, P') + keep(N' * -inf, N'), so a NaN (both codes) comes
// back as inf + -inf = NaN, and a moved sum that met +inf and -inf is NaN too, as in eager.
// Three moves instead of one: the price in f32.
// CHECK-LABEL: func.func @slice_f32
// CHECK:      %[[T:.*]] = spyre.sub %x, %x
// CHECK-NEXT: %[[Q:.*]] = spyre.keep_scalar %[[T]] {{.*}}value = 1.000000e+00 : f64, reverse}
// CHECK-NEXT: %[[NQ:.*]] = spyre.sub_scalar %[[Q]]
// CHECK-NEXT: %[[F:.*]] = spyre.keep %x, %[[NQ]]
// CHECK-NEXT: %[[FM:.*]] = spyre.matmul %[[F]], %[[M:.*]] {{.*}}-> tensor<16x16xf32>
// CHECK-NEXT: %[[S:.*]] = spyre.keep %x, %[[Q]]
// CHECK-NEXT: %[[HI:.*]] = spyre.maximum_scalar %[[S]] {{.*}}value = 0.000000e+00 : f64}
// CHECK-NEXT: %[[P:.*]] = spyre.keep_scalar %[[HI]] {{.*}}value = 1.000000e+00 : f64, reverse}
// CHECK-NEXT: %[[PM:.*]] = spyre.matmul %[[P]], %[[M]]
// CHECK-NEXT: %[[PI:.*]] = spyre.mul_scalar %[[PM]] {{.*}}value = 0x7ff0000000000000 : f64}
// CHECK-NEXT: %[[PK:.*]] = spyre.keep %[[PI]], %[[PM]]
// CHECK-NEXT: %[[SUM:.*]] = spyre.add %[[FM]], %[[PK]]
// CHECK-NEXT: %[[LO:.*]] = spyre.minimum_scalar %[[S]] {{.*}}value = 0.000000e+00 : f64}
// CHECK-NEXT: %[[N:.*]] = spyre.keep_scalar %[[LO]] {{.*}}value = 1.000000e+00 : f64, reverse}
// CHECK-NEXT: %[[NM:.*]] = spyre.matmul %[[N]], %[[M]]
// CHECK-NEXT: %[[NI:.*]] = spyre.mul_scalar %[[NM]] {{.*}}value = 0xfff0000000000000 : f64}
// CHECK-NEXT: %[[NK:.*]] = spyre.keep %[[NI]], %[[NM]]
// CHECK-NEXT: %[[Y:.*]] = spyre.add %[[SUM]], %[[NK]]
// CHECK-NEXT: func.return %[[Y]]
func.func @slice_f32(%x: tensor<16x64xf32>) -> tensor<16x16xf32> {
  %y = spyre.aten "aten.slice.Tensor"(%x) {args = {dim = -1 : i64, start = 8 : i64, end = 24 : i64, step = 1 : i64}, operand_names = ["self"], fx_node = "slice"} : (tensor<16x64xf32>) -> tensor<16x16xf32>
  func.return %y : tensor<16x16xf32>
}

// -----

// Columns 128..191 of a 192-wide fp16 row are its third stick (64 fp16 values a stick): the
// row is [3, 64] sticks in the same bytes, and the slice is a row move of that leading dim,
// exact for every value and without the PT.
// CHECK-LABEL: func.func @split_sticks
// CHECK:      %[[R:.*]] = spyre.reshape %x {{.*}}: tensor<16x192xf16> -> tensor<16x3x64xf16>
// CHECK-NEXT: %[[S:.*]] = spyre.slice_rows %[[R]] {{.*}}dim = 1 : i64, start = 2 : i64, step = 1 : i64}
// CHECK-NEXT: %[[Y:.*]] = spyre.reshape %[[S]] {{.*}}: tensor<16x1x64xf16> -> tensor<16x64xf16>
// CHECK-NEXT: func.return %[[Y]]
// CHECK-NOT:  spyre.matmul
func.func @split_sticks(%x: tensor<16x192xf16>) -> tensor<16x64xf16> {
  %y = spyre.aten "aten.slice.Tensor"(%x) {args = {dim = -1 : i64, start = 128 : i64, end = 192 : i64, step = 1 : i64}, operand_names = ["self"], fx_node = "slice"} : (tensor<16x192xf16>) -> tensor<16x64xf16>
  func.return %y : tensor<16x64xf16>
}

// -----

// A sum of all 64 rows is a matmul by a row of ones: no zero meets a NaN or an infinity,
// and the PT's sum is IEEE's (inf + -inf is NaN), so the move needs no codes.
// CHECK-LABEL: func.func @sum_all_rows
// CHECK:      %[[O:.*]] = spyre.param {{.*}}param_name = "sum.rows", value = dense<1.000000e+00> : tensor<1x64xf32>}
// CHECK-NEXT: %[[Y:.*]] = spyre.matmul %[[O]], %x
// CHECK-NEXT: func.return %[[Y]]
func.func @sum_all_rows(%x: tensor<64x32xf32>) -> tensor<1x32xf32> {
  %y = spyre.aten "aten.sum.dim_IntList"(%x) {args = {dim = [0 : i64], keepdim = true}, operand_names = ["self"], fx_node = "sum"} : (tensor<64x32xf32>) -> tensor<1x32xf32>
  func.return %y : tensor<1x32xf32>
}

// -----

// argmax over a row, torch's way with NaN and infinities: c = clamp(x, -FLT_MAX, FLT_MAX)
// and p = keep(1, x - c) (1 at +-inf) encode x finitely, so x_j equals the row max m exactly
// when |c_j - c_m| + |p_j - p_m| is 0, and j + that * 2^200 is j only there (a plain
// |m - x_j| is NaN at inf == inf). A row holding a NaN (its max is NaN: max propagates it)
// takes j + 2^30 * (1 - isnan_j) instead, whose minimum is the first NaN, chosen by keep
// on the row's NaN flag (isnan = keep(1, c - c): c is finite or NaN).
// CHECK-LABEL: func.func @argmax
// CHECK:      %[[M:.*]] = spyre.reduce_max %x
// CHECK:      %[[C1:.*]] = spyre.maximum_scalar %x {{.*}}value = -3.4028234663852886e+38 : f64}
// CHECK-NEXT: %[[C:.*]] = spyre.minimum_scalar %[[C1]] {{.*}}value = 3.4028234663852886e+38 : f64}
// CHECK-NEXT: %[[D:.*]] = spyre.sub %x, %[[C]]
// CHECK-NEXT: %[[P:.*]] = spyre.keep_scalar %[[D]]
// CHECK:      %[[GAP:.*]] = spyre.add
// CHECK:      %[[MATCH:.*]] = spyre.add %{{.*}}, %argmax_columns
// CHECK-NEXT: %[[T:.*]] = spyre.sub %[[C]], %[[C]]
// CHECK-NEXT: %[[NAN:.*]] = spyre.keep_scalar %[[T]] {{.*}}value = 1.000000e+00 : f64, reverse}
// CHECK:      %[[FIRST:.*]] = spyre.add %{{.*}}, %argmax_columns
// CHECK-NEXT: %[[ROW:.*]] = spyre.reduce_max %[[NAN]]
// CHECK-NEXT: %[[NOT:.*]] = spyre.sub_scalar %[[ROW]] {{.*}}value = 1.000000e+00 : f64, reverse}
// CHECK-NEXT: %[[K1:.*]] = spyre.keep %[[MATCH]], %[[NOT]]
// CHECK-NEXT: %[[K2:.*]] = spyre.keep %[[FIRST]], %[[ROW]]
// CHECK-NEXT: %[[V:.*]] = spyre.add %[[K1]], %[[K2]]
// CHECK-NEXT: %[[I:.*]] = spyre.reduce_min %[[V]]
// CHECK-NEXT: spyre.cast %[[I]] {{.*}}-> tensor<16x1xi64>
func.func @argmax(%x: tensor<16x64xf32>) -> tensor<16x1xi64> {
  %y = spyre.aten "aten.argmax.default"(%x) {args = {dim = -1 : i64, keepdim = true}, operand_names = ["self"], fx_node = "argmax"} : (tensor<16x64xf32>) -> tensor<16x1xi64>
  func.return %y : tensor<16x1xi64>
}


