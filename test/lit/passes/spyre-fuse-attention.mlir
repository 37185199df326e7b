// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse | filecheck %s

// A decoder attention between its projections: the head split views, the transposes in
// front of q, k and v, and the transpose back after the attention all fold into one kernel
// whose inputs are the stored projections [2, 16, 128] / [2, 16, 64] themselves. q's run of
// 16 query rows of head h is stored rows h, h + 2, ... of the [64, 64] unit rows of %q (two
// heads a row), so one strided DMA reads it; nothing is materialised in between. The merge
// view after the kernel aliases its result.
// CHECK-LABEL: func.func @block
// CHECK:      %[[K:.*]] = spyre.kernel "k0"(%q, %k, %v) {fused = ["view", "permute", "view_1", "permute_1", "view_2", "permute_2", "sdpa", "permute_3"], reason = "attention with its row moves folded into its reads and write"
// CHECK-SAME: -> tensor<2x16x2x64xf16>
// CHECK:        spyre.permute_rows
// CHECK:        spyre.attention
// CHECK:        %[[OUT:.*]] = spyre.permute_rows
// CHECK-NEXT:   spyre.yield %[[OUT]]
// CHECK:      %[[M:.*]] = spyre.reshape %[[K]] {{.*}}-> tensor<2x16x128xf16>
// CHECK-NEXT: func.return %[[M]]
func.func @block(%q: tensor<2x16x128xf16>, %k: tensor<2x16x64xf16>, %v: tensor<2x16x64xf16>) -> tensor<2x16x128xf16> {
  %qv = spyre.aten "aten.view.default"(%q) {args = {size = [2 : i64, 16 : i64, 2 : i64, 64 : i64]}, operand_names = ["self"], fx_node = "view"} : (tensor<2x16x128xf16>) -> tensor<2x16x2x64xf16>
  %qt = spyre.aten "aten.permute.default"(%qv) {args = {dims = [0 : i64, 2 : i64, 1 : i64, 3 : i64]}, operand_names = ["self"], fx_node = "permute"} : (tensor<2x16x2x64xf16>) -> tensor<2x2x16x64xf16>
  %kv = spyre.aten "aten.view.default"(%k) {args = {size = [2 : i64, 16 : i64, 1 : i64, 64 : i64]}, operand_names = ["self"], fx_node = "view_1"} : (tensor<2x16x64xf16>) -> tensor<2x16x1x64xf16>
  %kt = spyre.aten "aten.permute.default"(%kv) {args = {dims = [0 : i64, 2 : i64, 1 : i64, 3 : i64]}, operand_names = ["self"], fx_node = "permute_1"} : (tensor<2x16x1x64xf16>) -> tensor<2x1x16x64xf16>
  %vv = spyre.aten "aten.view.default"(%v) {args = {size = [2 : i64, 16 : i64, 1 : i64, 64 : i64]}, operand_names = ["self"], fx_node = "view_2"} : (tensor<2x16x64xf16>) -> tensor<2x16x1x64xf16>
  %vt = spyre.aten "aten.permute.default"(%vv) {args = {dims = [0 : i64, 2 : i64, 1 : i64, 3 : i64]}, operand_names = ["self"], fx_node = "permute_2"} : (tensor<2x16x1x64xf16>) -> tensor<2x1x16x64xf16>
  %o = spyre.aten "aten.scaled_dot_product_attention.default"(%qt, %kt, %vt) {args = {dropout_p = 0.000000e+00 : f64, is_causal = true, enable_gqa = true}, operand_names = ["query", "key", "value"], fx_node = "sdpa"} : (tensor<2x2x16x64xf16>, tensor<2x1x16x64xf16>, tensor<2x1x16x64xf16>) -> tensor<2x2x16x64xf16>
  %ot = spyre.aten "aten.permute.default"(%o) {args = {dims = [0 : i64, 2 : i64, 1 : i64, 3 : i64]}, operand_names = ["self"], fx_node = "permute_3"} : (tensor<2x2x16x64xf16>) -> tensor<2x16x2x64xf16>
  %m = spyre.aten "aten.view.default"(%ot) {args = {size = [2 : i64, 16 : i64, 128 : i64]}, operand_names = ["self"], fx_node = "view_3"} : (tensor<2x16x2x64xf16>) -> tensor<2x16x128xf16>
  func.return %m : tensor<2x16x128xf16>
}

// The transposed q is also returned, so it must exist in LPDDR: it stays a DMA-only kernel
// of its own and the attention reads its result (k and v are one input). A relu of the attention output is a tile
// op: it does not join the attention kernel but gets a kernel of its own.
// CHECK-LABEL: func.func @shared
// CHECK:      %[[T:.*]] = spyre.kernel "k1"(%q) {fused = ["permute"], reason = "row move (DMA only)"
// CHECK:        spyre.permute_rows
// CHECK:      %[[A:.*]] = spyre.kernel "k2"(%[[T]], %kv) {fused = ["sdpa"], reason = "attention"
// CHECK:      spyre.kernel "k3"(%[[A]]) {fused = ["relu"], reason = "single op"
func.func @shared(%q: tensor<2x16x2x64xf16>, %kv: tensor<2x2x16x64xf16>) -> (tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>) {
  %qt = spyre.aten "aten.permute.default"(%q) {args = {dims = [0 : i64, 2 : i64, 1 : i64, 3 : i64]}, operand_names = ["self"], fx_node = "permute"} : (tensor<2x16x2x64xf16>) -> tensor<2x2x16x64xf16>
  %o = spyre.aten "aten.scaled_dot_product_attention.default"(%qt, %kv, %kv) {args = {dropout_p = 0.000000e+00 : f64, is_causal = false}, operand_names = ["query", "key", "value"], fx_node = "sdpa"} : (tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>) -> tensor<2x2x16x64xf16>
  %r = spyre.aten "aten.relu.default"(%o) {args = {}, operand_names = ["self"], fx_node = "relu"} : (tensor<2x2x16x64xf16>) -> tensor<2x2x16x64xf16>
  func.return %qt, %r : tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>
}
