// RUN: not spyre-opt %s -p spyre-tile 2>&1 | filecheck %s

// A user's `tail` (design note 57) is checked like the rest of a `tile` override. Here
// 256 x 256 @ 256 x 256 on 4x4 gives each core K = 256: four K steps of 64, fewer than the
// eight a tail needs to overlap its B block and the previous store, so it is refused with
// what a tail requires.
// CHECK: error: kernel @k0: tile [64, 64, 64] must divide the core's rows, columns (whole sticks) and K (whole sticks), and fit 1677696 B of LX with double buffering (it needs 131072 B); a tail of 2 row pieces needs resident = "a" with tk < K, at least 8 K steps, and pieces of at least 16 rows, an even count, whose K step outlasts their B slice's load

func.func @bad(%x: tensor<256x256xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}}) -> tensor<256x256xf16> {
  %w = spyre.param {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}, param_name = "w"} : tensor<256x256xf16>
  %y = spyre.kernel "k0"(%x, %w) {fused = ["mm"], reason = "single op", grid = [4 : i64, 4 : i64], tile = [64 : i64, 64 : i64, 64 : i64], resident = "a", tail = 2 : i64, spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}} : (tensor<256x256xf16>, tensor<256x256xf16>) -> tensor<256x256xf16> {
  ^bb0(%x_1: tensor<256x256xf16>, %w_1: tensor<256x256xf16>):
    %y_1 = spyre.matmul %x_1, %w_1 {fx_node = "mm", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}} : tensor<256x256xf16>, tensor<256x256xf16> -> tensor<256x256xf16>
    spyre.yield %y_1 : tensor<256x256xf16>
  }
  func.return %y : tensor<256x256xf16>
}
