// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile,convert-spyre-to-ktir | filecheck %s

// The KTIR of the window kernels of a 3x3, padding-1 convolution of a 1x64x4x4 fp16 image
// (64 channels: one stick per pixel).
//
// @k0 puts the image into a zero border: a 1x1 window with padding 1 gives [1, 6, 6, 64]
// (36 rows). It splits over images, loads the 6-row pad tile once, stores it as the top
// row (output rows 0-5) and the bottom row (30-35), stores 1-row pads left and right of
// the 4 inner rows (rows 6 + 6j and 6 + 6j + 5), and copies input row j (rows 4j .. 4j+3)
// to rows 6 + 6j + 1 .. 6 + 6j + 4.
// CHECK-LABEL: func.func @k0
// CHECK-SAME:  reason = "window rows (im2col by DMA)"
// CHECK:       %[[PAD:.*]] = ktdp.load {{.*}} -> tensor<6x64xf16>
// CHECK:       ktdp.construct_access_tile %[[OUT:.*]][%{{.*}} * 36 + %{{.*}} * 6, 0]
// CHECK-NEXT:  ktdp.store %[[PAD]]
// CHECK:       ktdp.construct_access_tile %[[OUT]][%{{.*}} * 36 + (%{{.*}} * 6 + 30), 0]
// CHECK-NEXT:  ktdp.store %[[PAD]]
// CHECK:       ktdp.construct_access_tile %[[OUT]][%{{.*}} * 36 + (%{{.*}} * 6 + 6), 0]
// CHECK:       ktdp.construct_access_tile %[[OUT]][%{{.*}} * 36 + (%{{.*}} * 6 + 6) + 5, 0]
// CHECK:       %[[IN:.*]] = ktdp.construct_access_tile %{{[0-9]+}}[%{{.*}} * 16 + %{{.*}} * 4, 0]
// CHECK-NEXT:  %[[ROWS:.*]] = ktdp.load %[[IN]] {{.*}} -> tensor<4x64xf16>
// CHECK-NEXT:  ktdp.construct_access_tile %[[OUT]][%{{.*}} * 36 + (%{{.*}} * 6 + 6) + 1, 0]
// CHECK-NEXT:  ktdp.store %[[ROWS]]
//
// @k1 gathers the 9 taps inside the padded image: its cores split the 4 output rows. Taps
// (kh, 0), (kh, 1), (kh, 2) of a pixel are 3 consecutive padded rows and fill 3 adjacent
// 64-column blocks, so one DMA moves them: a view of the padded image whose rows are 3
// sticks (192 columns) long and start one stick (64 elements) apart, 36 - 3 + 1 = 34 of
// them. For output row r (image r / 4, row r mod 4) kernel row kh reads 4 such rows from
// (r / 4) * 36 + (r mod 4 + kh) * 6 and stores them into columns 192 * kh of output rows
// 4r .. 4r + 3 (576 columns: 9 sticks).
// CHECK-LABEL: func.func @k1
// CHECK:       %[[COLS:.*]] = ktdp.construct_memory_view {{.*}}sizes: [16, 576], strides: [576, 1]
// CHECK:       %[[WIDE:.*]] = ktdp.construct_memory_view {{.*}}sizes: [34, 192], strides: [64, 1]
// CHECK:       ktdp.construct_access_tile %[[WIDE]][%[[R0:.*]] floordiv 4 * 36 + %[[R0]] mod 4 * 6, 0]
// CHECK-NEXT:  ktdp.load {{.*}} -> tensor<4x192xf16>
// CHECK-NEXT:  ktdp.construct_access_tile %[[COLS]][%[[R0]] * 4, 0]
// CHECK:       ktdp.construct_access_tile %[[WIDE]][%[[R1:.*]] floordiv 4 * 36 + %[[R1]] mod 4 * 6 + 6, 0]
// CHECK:       ktdp.construct_access_tile %[[COLS]][%[[R1]] * 4, 192]
// CHECK:       ktdp.construct_access_tile %[[WIDE]][%[[R2:.*]] floordiv 4 * 36 + %[[R2]] mod 4 * 6 + 12, 0]
// CHECK:       ktdp.construct_access_tile %[[COLS]][%[[R2]] * 4, 384]
//
// @k2 is the matmul: 16 pixels x 576 by 576 x 64.
// CHECK-LABEL: func.func @k2
// CHECK:       spyre.fn = "matmul"
func.func @conv(%x: tensor<1x64x4x4xf16>) -> tensor<1x64x4x4xf16> attributes {spyre.output_names = ["c"]} {
  %w = spyre.param {param_name = "c.weight"} : tensor<576x64xf16>
  %c = spyre.aten "aten.convolution.default"(%x, %w) {fx_node = "c", args = {stride = [1 : i64, 1 : i64], padding = [1 : i64, 1 : i64], dilation = [1 : i64, 1 : i64], transposed = false, output_padding = [0 : i64, 0 : i64], groups = 1 : i64, kernel_size = [3 : i64, 3 : i64]}, operand_names = ["input", "weight"]} : (tensor<1x64x4x4xf16>, tensor<576x64xf16>) -> tensor<1x64x4x4xf16>
  func.return %c : tensor<1x64x4x4xf16>
}
