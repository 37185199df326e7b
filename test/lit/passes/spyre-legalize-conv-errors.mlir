// RUN: not spyre-opt %s -p spyre-legalize 2>&1 | filecheck %s

// What channels-last selection refuses is reported with the node and line, all at once:
// a transposed convolution, a convolution whose weight the frontend could not
// turn into the matrix of its taps (it is a program input) and a max pool whose indices are
// used.
// A reduction over W that reads a convolution's output in NCHW order is not refused: the
// channels go back out of the stick by a device restickify.
// The ops after a refused one are not reported again.
// CHECK: error: {{.*}}3 op(s) have no Spyre lowering yet:
// CHECK-NEXT: m.py:3: aten.convolution.default (node dw): a transposed convolution other than a 2-D one whose stride is its kernel
// CHECK-NEXT: m.py:4: aten.convolution.default (node wx): its weight is not a constant
// CHECK-NEXT: m.py:5: aten.max_pool2d_with_indices.default (node pool): its indices output is used
// CHECK-NOT: node sum
func.func @refused(%x: tensor<1x8x8x8xf16>, %w: tensor<8x1x3x3xf16>, %w2: tensor<8x8x3x3xf16>) -> (tensor<1x8x8x8xf16>, tensor<1x8x8x8xf16>, tensor<1x8x3x3xi64>, tensor<1x8x8xf16>) attributes {spyre.output_names = ["dw", "wx", "pool", "sum"]} {
  %dw = spyre.aten "aten.convolution.default"(%x, %w) {fx_node = "dw", source = "m.py:3", args = {stride = [1 : i64, 1 : i64], padding = [1 : i64, 1 : i64], dilation = [1 : i64, 1 : i64], transposed = true, output_padding = [0 : i64, 0 : i64], groups = 8 : i64}, operand_names = ["input", "weight"]} : (tensor<1x8x8x8xf16>, tensor<8x1x3x3xf16>) -> tensor<1x8x8x8xf16>
  %wx = spyre.aten "aten.convolution.default"(%x, %w2) {fx_node = "wx", source = "m.py:4", args = {stride = [1 : i64, 1 : i64], padding = [1 : i64, 1 : i64], dilation = [1 : i64, 1 : i64], transposed = false, output_padding = [0 : i64, 0 : i64], groups = 1 : i64}, operand_names = ["input", "weight"]} : (tensor<1x8x8x8xf16>, tensor<8x8x3x3xf16>) -> tensor<1x8x8x8xf16>
  %p:2 = spyre.aten "aten.max_pool2d_with_indices.default"(%x) {fx_node = "pool", source = "m.py:5", args = {kernel_size = [3 : i64, 3 : i64], stride = [2 : i64, 2 : i64], padding = [0 : i64, 0 : i64], dilation = [1 : i64, 1 : i64], ceil_mode = false}, operand_names = ["self"]} : (tensor<1x8x8x8xf16>) -> (tensor<1x8x3x3xf16>, tensor<1x8x3x3xi64>)
  %cw = spyre.param {param_name = "c.weight"} : tensor<8x8xf16>
  %c = spyre.aten "aten.convolution.default"(%x, %cw) {fx_node = "c", source = "m.py:6", args = {stride = [1 : i64, 1 : i64], padding = [0 : i64, 0 : i64], dilation = [1 : i64, 1 : i64], transposed = false, output_padding = [0 : i64, 0 : i64], groups = 1 : i64, kernel_size = [1 : i64, 1 : i64]}, operand_names = ["input", "weight"]} : (tensor<1x8x8x8xf16>, tensor<8x8xf16>) -> tensor<1x8x8x8xf16>
  %s = spyre.aten "aten.sum.dim_IntList"(%c) {fx_node = "sum", source = "m.py:6", args = {dim = [-1 : i64], keepdim = false}, operand_names = ["self"]} : (tensor<1x8x8x8xf16>) -> tensor<1x8x8xf16>
  func.return %dw, %wx, %p#1, %s : tensor<1x8x8x8xf16>, tensor<1x8x8x8xf16>, tensor<1x8x3x3xi64>, tensor<1x8x8xf16>
}
