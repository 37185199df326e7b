// RUN: spyre-opt %s -p spyre-legalize --split-input-file | filecheck %s

// Convolution, pooling and batch norm are selected channels-last: the image becomes
// [N, H, W, C] (channels in the stick), the program input is stored so (the host permutes
// it: spyre.host_perms), and the ops between them follow.

// A 3x3 convolution with padding 1 on a 1x3x8x8 fp16 image. The frontend stored the weight
// as the matrix of its 9 taps, each block the 3 input channels padded to one 64-element
// stick: 9 * 64 = 576 rows. A first spyre.window_rows (1x1, padding 1) puts the image in a
// zero border (10x10, the pad row 10 pixels wide); the second gathers, per output pixel,
// the 9 input rows into 9 stick-aligned blocks (576 columns), never leaving the padded
// image, so its cores split the output rows. One matmul of the 64 pixels x 576 by 576 x 16
// adds the bias; relu follows on [1, 8, 8, 16].
// CHECK-LABEL: func.func @conv3x3
// CHECK-SAME: (%x: tensor<1x8x8x3xf16>) -> tensor<1x8x8x16xf16>
// CHECK-SAME: spyre.host_perms = {relu = array<i64: 0, 2, 3, 1>, x = array<i64: 0, 2, 3, 1>}
// CHECK:      %[[ZERO:.*]] = spyre.param {{.*}}param_name = "convolution.pad", value = dense<0.000000e+00> : tensor<10x3xf16>}
// CHECK-NEXT: %[[PADDED:.*]] = spyre.window_rows %x, %[[ZERO]] {{{.*}}kernel = array<i64: 1, 1>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, taps = array<i64: 0, 0>}
// CHECK-SAME: : (tensor<1x8x8x3xf16>, tensor<10x3xf16>) -> tensor<1x10x10x3xf16>
// CHECK-NEXT: %[[UNUSED:.*]] = spyre.param {{.*}}param_name = "convolution.pad1"
// CHECK-NEXT: %[[COLS:.*]] = spyre.window_rows %[[PADDED]], %[[UNUSED]] {{{.*}}kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, taps = array<i64: 0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2, 2, 0, 2, 1, 2, 2>}
// CHECK-SAME: : (tensor<1x10x10x3xf16>, tensor<1x3xf16>) -> tensor<1x8x8x576xf16>
// CHECK-NEXT: %[[ROWS:.*]] = spyre.reshape %[[COLS]] {{.*}}-> tensor<64x576xf16>
// CHECK-NEXT: %[[MM:.*]] = spyre.matmul %[[ROWS]], %convolution_weight bias %convolution_bias
// CHECK-SAME: -> tensor<64x16xf16>
// CHECK-NEXT: %[[Y:.*]] = spyre.reshape %[[MM]] {{.*}}-> tensor<1x8x8x16xf16>
// CHECK-NEXT: %[[R:.*]] = spyre.relu %[[Y]] {{.*}}-> tensor<1x8x8x16xf16>
// CHECK-NEXT: func.return %[[R]] : tensor<1x8x8x16xf16>
func.func @conv3x3(%x: tensor<1x3x8x8xf16>) -> tensor<1x16x8x8xf16> attributes {spyre.output_names = ["relu"]} {
  %convolution_weight = spyre.param {param_name = "convolution.weight"} : tensor<576x16xf16>
  %convolution_bias = spyre.param {param_name = "convolution.bias"} : tensor<16xf16>
  %c = spyre.aten "aten.convolution.default"(%x, %convolution_weight, %convolution_bias) {fx_node = "convolution", args = {stride = [1 : i64, 1 : i64], padding = [1 : i64, 1 : i64], dilation = [1 : i64, 1 : i64], transposed = false, output_padding = [0 : i64, 0 : i64], groups = 1 : i64, kernel_size = [3 : i64, 3 : i64]}, operand_names = ["input", "weight", "bias"]} : (tensor<1x3x8x8xf16>, tensor<576x16xf16>, tensor<16xf16>) -> tensor<1x16x8x8xf16>
  %relu = spyre.aten "aten.relu.default"(%c) {fx_node = "relu", args = {}, operand_names = ["self"]} : (tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf16>
  func.return %relu : tensor<1x16x8x8xf16>
}

// -----

// A 1x1 stride-1 convolution needs no windows: the 2 * 4 * 4 = 32 pixels are the rows
// and the 64 channels the columns, so it is the matmul alone (weight 64 x 32: one tap).
// CHECK-LABEL: func.func @conv1x1
// CHECK-NOT:  spyre.window_rows
// CHECK:      %[[ROWS:.*]] = spyre.reshape %x {{.*}}: tensor<2x4x4x64xf32> -> tensor<32x64xf32>
// CHECK-NEXT: spyre.matmul %[[ROWS]], %w {{.*}}-> tensor<32x32xf32>
func.func @conv1x1(%x: tensor<2x64x4x4xf32>) -> tensor<2x32x4x4xf32> attributes {spyre.output_names = ["c"]} {
  %w = spyre.param {param_name = "c.weight"} : tensor<64x32xf32>
  %c = spyre.aten "aten.convolution.default"(%x, %w) {fx_node = "c", args = {stride = [1 : i64, 1 : i64], padding = [0 : i64, 0 : i64], dilation = [1 : i64, 1 : i64], transposed = false, output_padding = [0 : i64, 0 : i64], groups = 1 : i64, kernel_size = [1 : i64, 1 : i64]}, operand_names = ["input", "weight"]} : (tensor<2x64x4x4xf32>, tensor<64x32xf32>) -> tensor<2x32x4x4xf32>
  func.return %c : tensor<2x32x4x4xf32>
}

// -----

// max_pool2d 2x2 on 8x8: one window per tap (a block of the 16 channels each, 4x4 output
// pixels), all four first, then their elementwise maximum (spyre-fuse makes the chain one
// kernel). No padding, so no border image; the indices output is unused.
// CHECK-LABEL: func.func @max_pool
// CHECK:      %[[T0:.*]] = spyre.window_rows %x, %{{.*}} {{.*}}taps = array<i64: 0, 0>{{.*}} -> tensor<1x4x4x16xf16>
// CHECK:      %[[T1:.*]] = spyre.window_rows %x, %{{.*}} {{.*}}taps = array<i64: 0, 1>
// CHECK:      %[[T2:.*]] = spyre.window_rows %x, %{{.*}} {{.*}}taps = array<i64: 1, 0>
// CHECK:      %[[T3:.*]] = spyre.window_rows %x, %{{.*}} {{.*}}taps = array<i64: 1, 1>
// CHECK-NEXT: %[[M1:.*]] = spyre.maximum %[[T0]], %[[T1]]
// CHECK-NEXT: %[[M2:.*]] = spyre.maximum %[[M1]], %[[T2]]
// CHECK-NEXT: %[[M3:.*]] = spyre.maximum %[[M2]], %[[T3]]
// CHECK-NEXT: func.return %[[M3]] : tensor<1x4x4x16xf16>
func.func @max_pool(%x: tensor<1x16x8x8xf16>) -> tensor<1x16x4x4xf16> attributes {spyre.output_names = ["pool"]} {
  %p:2 = spyre.aten "aten.max_pool2d_with_indices.default"(%x) {fx_node = "pool", args = {kernel_size = [2 : i64, 2 : i64], stride = [2 : i64, 2 : i64], padding = [0 : i64, 0 : i64], dilation = [1 : i64, 1 : i64], ceil_mode = false}, operand_names = ["self"]} : (tensor<1x16x8x8xf16>) -> (tensor<1x16x4x4xf16>, tensor<1x16x4x4xi64>)
  func.return %p#0 : tensor<1x16x4x4xf16>
}

// -----

// Global average pooling (mean over H and W, keepdim=False). 2 images of 4x4 pixels are
// 32 rows: one fp32 stick, so the mean is one matmul, a constant [2, 32] matrix (1/16
// over each image's 16 rows) times the image's rows, and [2, 32] is the result as stored.
// The input is a program input, so it is stored channels-last.
// CHECK-LABEL: func.func @global_mean
// CHECK-SAME: (%x: tensor<2x4x4x32xf32>) -> tensor<2x32xf32>
// CHECK-SAME: spyre.host_perms = {x = array<i64: 0, 2, 3, 1>}
// CHECK-NOT:  spyre.window_rows
// CHECK:      %[[ROWS:.*]] = spyre.reshape %x {{.*}}-> tensor<32x32xf32>
// CHECK-NEXT: %[[AVG:.*]] = spyre.param {{.*}}param_name = "mean.average"{{.*}} : tensor<2x32xf32>
// The rows' finite part and their +inf and -inf codes are averaged apart, so a NaN in one
// image stays in its mean (exact moves, spyre-legalize-exact-moves.mlir):
// CHECK:      spyre.matmul %[[AVG]], %{{.*}} {{.*}}-> tensor<2x32xf32>
// CHECK:      spyre.matmul %[[AVG]], %{{.*}} {{.*}}-> tensor<2x32xf32>
// CHECK:      spyre.matmul %[[AVG]], %{{.*}} {{.*}}-> tensor<2x32xf32>
// CHECK:      %[[M:.*]] = spyre.add
// CHECK-NEXT: %[[M4:.*]] = spyre.reshape %[[M]] {{.*}}-> tensor<2x1x1x32xf32>
// CHECK-NEXT: %[[OUT:.*]] = spyre.reshape %[[M4]] {{.*}}-> tensor<2x32xf32>
// CHECK-NEXT: func.return %[[OUT]]
func.func @global_mean(%x: tensor<2x32x4x4xf32>) -> tensor<2x32xf32> attributes {spyre.output_names = ["mean"]} {
  %m = spyre.aten "aten.mean.dim"(%x) {fx_node = "mean", args = {dim = [-1 : i64, -2 : i64], keepdim = false}, operand_names = ["self"]} : (tensor<2x32x4x4xf32>) -> tensor<2x32xf32>
  func.return %m : tensor<2x32xf32>
}

// -----

// The same on one 3x3 image: 9 rows are not a whole stick, and an activation cannot be a
// matmul's rhs with unpadded K rows, so the 9 taps are gathered into blocks of 32 fp32
// channels (one stick) and multiplied by a constant [9 * 32, 32] matrix of identity / 9.
// CHECK-LABEL: func.func @global_mean_windows
// CHECK:      %[[COLS:.*]] = spyre.window_rows %x, %{{.*}} {{.*}}kernel = array<i64: 3, 3>{{.*}} -> tensor<1x1x1x288xf32>
// CHECK:      %[[AVG:.*]] = spyre.param {{.*}}param_name = "mean.average"{{.*}} : tensor<288x32xf32>
// CHECK:      spyre.matmul %{{.*}}, %[[AVG]] {{.*}}-> tensor<1x32xf32>
func.func @global_mean_windows(%x: tensor<1x32x3x3xf32>) -> tensor<1x32x1x1xf32> attributes {spyre.output_names = ["mean"]} {
  %m = spyre.aten "aten.mean.dim"(%x) {fx_node = "mean", args = {dim = [-1 : i64, -2 : i64], keepdim = true}, operand_names = ["self"]} : (tensor<1x32x3x3xf32>) -> tensor<1x32x1x1xf32>
  func.return %m : tensor<1x32x1x1xf32>
}
