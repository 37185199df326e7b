// RUN: spyre-opt --split-input-file %s -p spyre-tile | filecheck %s
// RUN: spyre-opt --split-input-file %s -p 'spyre-tile{double_buffer=false}' | filecheck %s --check-prefix=NOBUF
// RUN: spyre-opt --split-input-file %s -p spyre-tile,convert-spyre-to-ktir | filecheck %s --check-prefix=KTIR

// Store pieces (design note 54): a core with several output-stationary tiles stores each one
// after its last K step, on the same DMA engine that loads the next tile's operands. Stored
// whole, every core's store leaves at the same moment and the next tile's loads queue behind
// it; stored in row pieces, one per K step of the next tile, the store rides along with the
// loads.
//
// 2048x2048 @ 2048x2048 fp16 on a fixed 8x4 grid: each core owns 256 rows x 512 columns.
// The cost model's tiling is 128x256x64 with A resident in K slices (two row tiles, each
// over two column tiles: four output tiles per core, 32 K steps each). A 128x256 fp16 tile
// is 65536 B; stored whole, the 32 cores store 2097152 B at once, 2097152 / 136.53 B per
// cycle = 15360 cycles on the shared channel, while the PT has only the K step already in
// the other slot to work on: one 64-row corelet half of a 128x64 @ 64x256 step is
// 2 x 64 x 64 x 256 / 1024 flops per cycle = 2048 cycles. So the PT would wait
// 15360 - 2048 = 13312 cycles at each of the 3 boundaries between tiles: 281884 cycles with
// the stores paced against 281884 + 3 x 13312 = 321820 stored whole.
// Pieces: at most one per K step (32), whole rows, each inside one corelet's 64-row half (an
// even count whose half divides 64): 32 pieces of 4 rows, 2048 B each. They fit beside the
// loads: a K step (2048 cycles) carries 2048 x 136.53 = 279620 B over the channel; the
// shared operand tiles take 8 grid rows x 16384 B of A slices + 4 grid columns x 32768 B of
// B = 262144 B of it in the first column tile of a row and 131072 B (B alone) in the next,
// which is where the 32 cores' 2048 B pieces (65536 B a step) go.
// CHECK-LABEL: func.func @two_tiles
// CHECK: tile = [128 : i64, 256 : i64, 64 : i64], resident = "a", share = "ring", store_pieces = 32 : i64, spyre.tiling = {choice = "128x256x64", reason = "{{.*}}; output tiles stored in 32 pieces of 4 rows, one per K step of the next tile (stored whole: 321820 cycles, the PT waiting 13312 cycles at each of 3 tile boundaries)"
// CHECK-SAME: predicted_cycles = 2.818840e+05 : f64
// CHECK-SAME: store_pieces = 32 : i64
// Lowered: the 128x2048 A row block is one ktdp.load in 32 K slices (spyre.load_pieces:
// spyre-schedule-dataflow issues a DMA per 128x64 slice, each released next to the B tile
// of its K step), the K loop reads its slice with tensor.extract_slice (a view, no copy),
// and the store carries its pieces.
// KTIR-LABEL: func.func @k0
// KTIR: %[[BLOCK:.*]] = ktdp.load %{{.*}} {spyre.load_pieces = 32 : i64} : !ktdp.access_tile<128x2048xindex> -> tensor<128x2048xf16>
// KTIR: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// KTIR-NEXT: tensor.extract_slice %[[BLOCK]][0, %[[K]]] [128, 64] [1, 1] : tensor<128x2048xf16> to tensor<128x64xf16>
// KTIR: ktdp.store %{{.*}}, %{{.*}} {spyre.store_pieces = 32 : i64} : tensor<128x256xf16>
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

// 256x256 @ 256x256 on 4x4: each core's 64x64 block is one output tile (64x64x64, K-blocked),
// stored after the core's last matmul: nothing follows it to overlap, so one store.
// CHECK-LABEL: func.func @one_tile
// CHECK: tile = [64 : i64, 64 : i64, 64 : i64], resident = "acc"
// CHECK-NOT: store_pieces
// CHECK: func.return

func.func @one_tile(%x: tensor<256x256xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}}) -> tensor<256x256xf16> {
  %w = spyre.param {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}, param_name = "w"} : tensor<256x256xf16>
  %y = spyre.kernel "k0"(%x, %w) {fused = ["mm"], reason = "single op", grid = [4 : i64, 4 : i64], spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}} : (tensor<256x256xf16>, tensor<256x256xf16>) -> tensor<256x256xf16> {
  ^bb0(%x_1: tensor<256x256xf16>, %w_1: tensor<256x256xf16>):
    %y_1 = spyre.matmul %x_1, %w_1 {fx_node = "mm", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}} : tensor<256x256xf16>, tensor<256x256xf16> -> tensor<256x256xf16>
    spyre.yield %y_1 : tensor<256x256xf16>
  }
  func.return %y : tensor<256x256xf16>
}
