// RUN: spyre-opt %s -p spyre-legalize | filecheck %s
// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse | filecheck %s --check-prefix=FUSE

// Slices, splits and selects of a leading dim move whole rows: `spyre.slice_rows`, which
// row maps fold into the reads of a move or attention kernel (start 15 of a 16-row dim
// with stride 1 row: the run of row (b, 15) starts at stored row 16 b + 15).

// CHECK-LABEL: func.func @last_position
// CHECK:      %[[S:.*]] = spyre.slice_rows %x {fx_node = "select", dim = 1 : i64, start = 15 : i64, step = 1 : i64} : tensor<2x16x64xf16> -> tensor<2x1x64xf16>
// CHECK-NEXT: spyre.reshape %[[S]] {fx_node = "select"} : tensor<2x1x64xf16> -> tensor<2x64xf16>
// FUSE-LABEL: func.func @last_position
// FUSE: spyre.kernel "k{{[0-9]+}}"(%x) {fused = ["select"], reason = "row move (DMA only)"
func.func @last_position(%x: tensor<2x16x64xf16>) -> tensor<2x64xf16> {
  %y = spyre.aten "aten.select.int"(%x) {args = {dim = 1 : i64, index = -1 : i64}, operand_names = ["self"], fx_node = "select"} : (tensor<2x16x64xf16>) -> tensor<2x64xf16>
  func.return %y : tensor<2x64xf16>
}

// x[:, 1:9:2]: four rows from 1 by 2.
// CHECK-LABEL: func.func @strided
// CHECK: spyre.slice_rows %x {fx_node = "slice", dim = 1 : i64, start = 1 : i64, step = 2 : i64} : tensor<2x16x64xf16> -> tensor<2x4x64xf16>
func.func @strided(%x: tensor<2x16x64xf16>) -> tensor<2x4x64xf16> {
  %y = spyre.aten "aten.slice.Tensor"(%x) {args = {dim = 1 : i64, start = 1 : i64, end = 9 : i64, step = 2 : i64}, operand_names = ["self"], fx_node = "slice"} : (tensor<2x16x64xf16>) -> tensor<2x4x64xf16>
  func.return %y : tensor<2x4x64xf16>
}

// A split of dim 0 in [4, 12]: the unused first piece costs nothing.
// CHECK-LABEL: func.func @split_rows
// CHECK-NOT: start = 0
// CHECK: spyre.slice_rows %x {fx_node = "split", dim = 0 : i64, start = 4 : i64, step = 1 : i64} : tensor<16x64xf16> -> tensor<12x64xf16>
func.func @split_rows(%x: tensor<16x64xf16>) -> tensor<12x64xf16> {
  %a, %b = spyre.aten "aten.split_with_sizes.default"(%x) {args = {split_sizes = [4 : i64, 12 : i64], dim = 0 : i64}, operand_names = ["self"], fx_node = "split"} : (tensor<16x64xf16>) -> (tensor<4x64xf16>, tensor<12x64xf16>)
  func.return %b : tensor<12x64xf16>
}

// Keys and values sliced along the sequence (a KV cache's valid part) are read in place by
// the attention kernel: no move kernel of their own.
// FUSE-LABEL: func.func @cache_prefix
// FUSE: spyre.kernel "k{{[0-9]+}}"(%k, %v, %q) {fused = ["ks", "vs", "sdpa"], reason = "attention with its row moves folded into its reads and write"
// FUSE-NOT: spyre.kernel
func.func @cache_prefix(%q: tensor<1x2x16x64xf16>, %k: tensor<1x2x64x64xf16>, %v: tensor<1x2x64x64xf16>) -> tensor<1x2x16x64xf16> {
  %ks = spyre.aten "aten.slice.Tensor"(%k) {args = {dim = 2 : i64, start = 0 : i64, end = 32 : i64, step = 1 : i64}, operand_names = ["self"], fx_node = "ks"} : (tensor<1x2x64x64xf16>) -> tensor<1x2x32x64xf16>
  %vs = spyre.aten "aten.slice.Tensor"(%v) {args = {dim = 2 : i64, start = 0 : i64, end = 32 : i64, step = 1 : i64}, operand_names = ["self"], fx_node = "vs"} : (tensor<1x2x64x64xf16>) -> tensor<1x2x32x64xf16>
  %a = spyre.aten "aten.scaled_dot_product_attention.default"(%q, %ks, %vs) {args = {dropout_p = 0.0 : f64, is_causal = false}, operand_names = ["query", "key", "value"], fx_node = "sdpa"} : (tensor<1x2x16x64xf16>, tensor<1x2x32x64xf16>, tensor<1x2x32x64xf16>) -> tensor<1x2x16x64xf16>
  func.return %a : tensor<1x2x16x64xf16>
}
