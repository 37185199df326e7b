// RUN: spyre-opt %s -p spyre-legalize | filecheck %s
// RUN: spyre-opt %s -p spyre-legalize | spyre-opt --print-op-generic | spyre-opt | filecheck %s

// Splitting a projection into heads and moving the head dim in front of the rows: the
// [2, 16, 128] fp16 rows are two 64-element (one-stick) heads each, so the view to
// [2, 16, 2, 64] regroups whole sticks (a free reshape) and transpose(1, 2) permutes leading
// dims only, with the stick dim kept last: spyre.permute_rows.
// CHECK-LABEL: func.func @heads
// CHECK:      %[[V:.*]] = spyre.reshape %x {{.*}}: tensor<2x16x128xf16> -> tensor<2x16x2x64xf16>
// CHECK-NEXT: %[[P:.*]] = spyre.permute_rows %[[V]] {{.*}}permutation = array<i64: 0, 2, 1, 3>} : tensor<2x16x2x64xf16> -> tensor<2x2x16x64xf16>
// CHECK-NEXT: func.return %[[P]]
func.func @heads(%x: tensor<2x16x128xf16>) -> tensor<2x2x16x64xf16> {
  %v = spyre.aten "aten.view.default"(%x) {args = {size = [2 : i64, 16 : i64, 2 : i64, 64 : i64]}, operand_names = ["self"], fx_node = "view"} : (tensor<2x16x128xf16>) -> tensor<2x16x2x64xf16>
  %p = spyre.aten "aten.permute.default"(%v) {args = {dims = [0 : i64, 2 : i64, 1 : i64, 3 : i64]}, operand_names = ["self"], fx_node = "permute"} : (tensor<2x16x2x64xf16>) -> tensor<2x2x16x64xf16>
  func.return %p : tensor<2x2x16x64xf16>
}

// With one key/value head, transpose(1, 2) of [2, 16, 1, 64] only moves a dim of size 1:
// every row keeps its place, so it is a reshape. A weight transpose still folds into the
// weight.
// CHECK-LABEL: func.func @single_head
// CHECK:      %[[T:.*]] = spyre.reshape %x {{.*}}: tensor<2x16x1x64xf16> -> tensor<2x1x16x64xf16>
// CHECK-NEXT: %[[WT:.*]] = spyre.param {param_name = "w", permutation = array<i64: 1, 0>} : tensor<64x64xf16>
// CHECK-NEXT: func.return %[[T]], %[[WT]]
func.func @single_head(%x: tensor<2x16x1x64xf16>) -> (tensor<2x1x16x64xf16>, tensor<64x64xf16>) {
  %w = spyre.param {param_name = "w"} : tensor<64x64xf16>
  %t = spyre.aten "aten.transpose.int"(%x) {args = {dim0 = 1 : i64, dim1 = 2 : i64}, operand_names = ["self"], fx_node = "transpose"} : (tensor<2x16x1x64xf16>) -> tensor<2x1x16x64xf16>
  %wt = spyre.aten "aten.t.default"(%w) {args = {}, operand_names = ["self"], fx_node = "t"} : (tensor<64x64xf16>) -> tensor<64x64xf16>
  func.return %t, %wt : tensor<2x1x16x64xf16>, tensor<64x64xf16>
}

// repeat_interleave(2, dim=1) of one key/value head in core ATen: unsqueeze (a reshape),
// expand of the new size-1 dim (spyre.expand_rows), clone (nothing) and view (a reshape).
// Then SDPA: scale defaults to 1/sqrt(64) = 0.125; is_causal becomes `causal`.
// CHECK-LABEL: func.func @gqa_repeat
// CHECK:      %[[U:.*]] = spyre.reshape %k {{.*}}: tensor<2x1x16x64xf16> -> tensor<2x1x1x16x64xf16>
// CHECK-NEXT: %[[E:.*]] = spyre.expand_rows %[[U]] {{.*}}: tensor<2x1x1x16x64xf16> -> tensor<2x1x2x16x64xf16>
// CHECK-NEXT: %[[K:.*]] = spyre.reshape %[[E]] {{.*}}: tensor<2x1x2x16x64xf16> -> tensor<2x2x16x64xf16>
// CHECK-NEXT: spyre.attention %q, %[[K]], %[[K]] {fx_node = "sdpa", scale = 1.250000e-01 : f64, causal} : tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16> -> tensor<2x2x16x64xf16>
func.func @gqa_repeat(%q: tensor<2x2x16x64xf16>, %k: tensor<2x1x16x64xf16>) -> tensor<2x2x16x64xf16> {
  %u = spyre.aten "aten.unsqueeze.default"(%k) {args = {dim = 2 : i64}, operand_names = ["self"], fx_node = "unsqueeze"} : (tensor<2x1x16x64xf16>) -> tensor<2x1x1x16x64xf16>
  %e = spyre.aten "aten.expand.default"(%u) {args = {size = [2 : i64, 1 : i64, 2 : i64, 16 : i64, 64 : i64], implicit = false}, operand_names = ["self"], fx_node = "expand"} : (tensor<2x1x1x16x64xf16>) -> tensor<2x1x2x16x64xf16>
  %c = spyre.aten "aten.clone.default"(%e) {args = {memory_format = "torch.contiguous_format"}, operand_names = ["self"], fx_node = "clone"} : (tensor<2x1x2x16x64xf16>) -> tensor<2x1x2x16x64xf16>
  %kk = spyre.aten "aten.view.default"(%c) {args = {size = [2 : i64, 2 : i64, 16 : i64, 64 : i64]}, operand_names = ["self"], fx_node = "view"} : (tensor<2x1x2x16x64xf16>) -> tensor<2x2x16x64xf16>
  %o = spyre.aten "aten.scaled_dot_product_attention.default"(%q, %kk, %kk) {args = {dropout_p = 0.000000e+00 : f64, is_causal = true, enable_gqa = false}, operand_names = ["query", "key", "value"], fx_node = "sdpa"} : (tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>) -> tensor<2x2x16x64xf16>
  func.return %o : tensor<2x2x16x64xf16>
}

// enable_gqa keeps the 1 key/value head: the op reads head h / 4 for query head h (the
// group follows from the shapes). An explicit scale is kept; the [1, 1, 16, 16] additive
// mask loses its size-1 dims in a free reshape.
// CHECK-LABEL: func.func @gqa_flag_with_mask
// CHECK:      %[[M:.*]] = spyre.reshape %m {{.*}}: tensor<1x1x16x16xf32> -> tensor<16x16xf32>
// CHECK-NEXT: spyre.attention %q, %k, %k mask %[[M]] {{{.*}}scale = 3.000000e-01 : f64, zero_unseen} : tensor<1x4x16x32xf32>, tensor<1x1x16x32xf32>, tensor<1x1x16x32xf32>, tensor<16x16xf32> -> tensor<1x4x16x32xf32>
func.func @gqa_flag_with_mask(%q: tensor<1x4x16x32xf32>, %k: tensor<1x1x16x32xf32>, %m: tensor<1x1x16x16xf32>) -> tensor<1x4x16x32xf32> {
  %o = spyre.aten "aten.scaled_dot_product_attention.default"(%q, %k, %k, %m) {args = {dropout_p = 0.000000e+00 : f64, is_causal = false, scale = 3.000000e-01 : f64, enable_gqa = true}, operand_names = ["query", "key", "value", "attn_mask"], fx_node = "sdpa"} : (tensor<1x4x16x32xf32>, tensor<1x1x16x32xf32>, tensor<1x1x16x32xf32>, tensor<1x1x16x16xf32>) -> tensor<1x4x16x32xf32>
  func.return %o : tensor<1x4x16x32xf32>
}
