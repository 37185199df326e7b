// RUN: spyre-opt --split-input-file %s -p spyre-tile | filecheck %s
// RUN: spyre-opt --split-input-file %s -p 'spyre-tile{double_buffer=false}' | filecheck %s --check-prefix=NOBUF

// Store pieces (design note 54): a core with several output-stationary tiles stores each one
// after its last K step, on the same DMA engine that loads the next tile's operands. Stored
// whole, every core's store leaves at the same moment and the next tile's loads queue behind
// it; stored in row pieces, one per K step of the next tile, the store rides along with the
// loads.
//
// 2048x2048 @ 2048x2048 fp16 on a fixed 8x4 grid: each core owns 256 rows x 512 columns.
// The cost model keeps its 256x256x64 ring-shared tiling: two output tiles per core, 32 K
// steps each. A whole 256x256 fp16 tile is 131072 B; the 32 cores store 4194304 B at once,
// 4194304 / 136.53 B per cycle = 30720 cycles on the shared channel, while the PT has only
// the K step already in the other slot to work on: one 128-row corelet half of a
// 256x64 @ 64x256 step is 2 x 128 x 64 x 256 / 1024 flops per cycle = 4096 cycles. So the
// PT waits 30720 - 4096 = 26624 cycles at the one boundary between the two tiles: 298716
// cycles with the store paced against 325340 stored whole.
// Pieces: at most one per K step (32), whole rows, each inside one corelet's 128-row half
// (so an even count whose half divides 128): 32 pieces of 8 rows, 4096 B each. They fit
// beside the loads: a K step (4096 cycles) carries 4096 x 136.53 = 559240 B over the
// channel, and the shared operand tiles take 8 grid rows x 32768 B of A + 4 grid columns x
// 32768 B of B = 393216 B of it, leaving room for the 32 cores' 4096 B pieces (131072 B).
// CHECK-LABEL: func.func @two_tiles
// CHECK: tile = [256 : i64, 256 : i64, 64 : i64], resident = "acc", share = "ring", spyre.tiling = {choice = "256x256x64", reason = "{{.*}}; output tiles stored in 32 pieces of 8 rows, one per K step of the next tile (stored whole: 325340 cycles, the PT waiting 26624 cycles at each of 1 tile boundaries)"
// CHECK-SAME: predicted_cycles = 2.987160e+05 : f64
// CHECK-SAME: store_pieces = 32 : i64
// Without ping-pong buffers nothing overlaps anyway: one store per tile.
// NOBUF-LABEL: func.func @two_tiles
// NOBUF-NOT: store_pieces
// NOBUF: func.return

func.func @two_tiles(%x: tensor<2048x2048xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 2048, 2048>, device_dtype = "dl16", pad = "zero"}}) -> tensor<2048x2048xf16> {
  %w = spyre.param {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 2048, 2048>, device_dtype = "dl16", pad = "zero"}, param_name = "w"} : tensor<2048x2048xf16>
  %y = spyre.kernel "k0"(%x, %w) {fused = ["mm"], reason = "single op", grid = [8 : i64, 4 : i64], spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 2048, 2048>, device_dtype = "dl16", pad = "zero"}} : (tensor<2048x2048xf16>, tensor<2048x2048xf16>) -> tensor<2048x2048xf16> {
  ^bb0(%x_1: tensor<2048x2048xf16>, %w_1: tensor<2048x2048xf16>):
    %y_1 = spyre.matmul %x_1, %w_1 {fx_node = "mm", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 2048, 2048>, device_dtype = "dl16", pad = "zero"}} : tensor<2048x2048xf16>, tensor<2048x2048xf16> -> tensor<2048x2048xf16>
    spyre.yield %y_1 : tensor<2048x2048xf16>
  }
  func.return %y : tensor<2048x2048xf16>
}

// -----

// 1024x1024 @ 1024x1024 on 8x4: each core's 128x256 block is one output tile, stored after
// the core's last matmul whatever its pieces: nothing follows it to overlap, so one store.
// CHECK-LABEL: func.func @one_tile
// CHECK: tile = [128 : i64, 256 : i64, 64 : i64], resident = "acc"
// CHECK-NOT: store_pieces
// CHECK: func.return

func.func @one_tile(%x: tensor<1024x1024xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 1024, 1024>, device_dtype = "dl16", pad = "zero"}}) -> tensor<1024x1024xf16> {
  %w = spyre.param {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 1024, 1024>, device_dtype = "dl16", pad = "zero"}, param_name = "w"} : tensor<1024x1024xf16>
  %y = spyre.kernel "k0"(%x, %w) {fused = ["mm"], reason = "single op", grid = [8 : i64, 4 : i64], spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 1024, 1024>, device_dtype = "dl16", pad = "zero"}} : (tensor<1024x1024xf16>, tensor<1024x1024xf16>) -> tensor<1024x1024xf16> {
  ^bb0(%x_1: tensor<1024x1024xf16>, %w_1: tensor<1024x1024xf16>):
    %y_1 = spyre.matmul %x_1, %w_1 {fx_node = "mm", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 1024, 1024>, device_dtype = "dl16", pad = "zero"}} : tensor<1024x1024xf16>, tensor<1024x1024xf16> -> tensor<1024x1024xf16>
    spyre.yield %y_1 : tensor<1024x1024xf16>
  }
  func.return %y : tensor<1024x1024xf16>
}
