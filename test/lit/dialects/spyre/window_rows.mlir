// RUN: spyre-opt %s --split-input-file | spyre-opt --split-input-file | filecheck %s
// RUN: spyre-opt %s --split-input-file --print-op-generic | spyre-opt --split-input-file | filecheck %s

// spyre.window_rows round-trips in its custom and generic forms. A 3x3 window with stride 2
// and padding 1 on a 2x9x9x3 fp16 image: output (9 + 2 - 3) / 2 + 1 = 5 pixels a side,
// 9 taps of 3 channels padded to a 64-element stick: 576 columns; the pad operand is one
// output row (5 pixels) of pad values.
// CHECK-LABEL: func.func @im2col
// CHECK: spyre.window_rows %x, %pad {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, taps = array<i64: 0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2, 2, 0, 2, 1, 2, 2>} : (tensor<2x9x9x3xf16>, tensor<5x3xf16>) -> tensor<2x5x5x576xf16>
func.func @im2col(%x: tensor<2x9x9x3xf16>, %pad: tensor<5x3xf16>) -> tensor<2x5x5x576xf16> {
  %c = spyre.window_rows %x, %pad {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, taps = array<i64: 0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2, 2, 0, 2, 1, 2, 2>} : (tensor<2x9x9x3xf16>, tensor<5x3xf16>) -> tensor<2x5x5x576xf16>
  func.return %c : tensor<2x5x5x576xf16>
}

// -----

// One tap keeps the channels as they are (a block of C = 16 columns, not a whole stick):
// the max-pool form. Without padding the pad operand is never read; one row suffices.
// CHECK-LABEL: func.func @one_tap
// CHECK: spyre.window_rows %x, %pad {{.*}}taps = array<i64: 1, 0>} : (tensor<1x8x8x16xf32>, tensor<1x16xf32>) -> tensor<1x4x4x16xf32>
func.func @one_tap(%x: tensor<1x8x8x16xf32>, %pad: tensor<1x16xf32>) -> tensor<1x4x4x16xf32> {
  %c = spyre.window_rows %x, %pad {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, taps = array<i64: 1, 0>} : (tensor<1x8x8x16xf32>, tensor<1x16xf32>) -> tensor<1x4x4x16xf32>
  func.return %c : tensor<1x4x4x16xf32>
}
