// RUN: spyre-opt %s -p spyre-tile | filecheck %s
// RUN: spyre-opt %s -p 'spyre-tile{share="none"}' | filecheck %s --check-prefix=NONE

// Ring sharing (design note 38): 256x256 @ 256x256 fp16 on a fixed 4x4 grid, so each core
// owns a 64x64 output block. Every core of a grid row needs the same 64x256 A rows, every
// core of a grid column the same 256x64 B columns.
//
// Unshared, each core reads its own: A 32768 B, B 32768 B, output 8192 B = 73728 B, on 16
// cores 1179648 B, 3x the 393216 B minimum; the best such tiling (B resident, 16-row A
// tiles) is predicted at 9488 cycles, DMA-bound: 1179648 B / 136.5 B per cycle = 8640 on
// the shared channel, plus 9 descriptors per core (the B block, 4 A tiles, 4 stores) x 64
// setup cycles = 576, which the 16 cores running one program spend at the same time, plus
// the tail after the last load (the last K step, epilogue and store).
//
// Shared, 64x64x64 output-stationary: per core one output tile and 4 K steps of 8192 B A
// and B tiles. Each A tile is read from LPDDR once per grid row (by core y = 0) and sent
// along the row's cores, 4 core numbers apart (core = y * 4 + x): 4 hops x 4 cycles +
// 8192 B / 128 B per cycle = 80 cycles a transfer; each B tile once per grid column (by
// x = 0), to the ring neighbour: 4 + 64 = 68 cycles. Off chip: A 4 rows x 4 x 8192 +
// B 4 columns x 4 x 8192 + output 16 x 8192 = 393216 B, the minimum. Receive engine per
// core: 4 x 80 + 4 x 68 = 592 cycles. DMA: 393216 / 136.53 = 2880 cycles on the shared
// channel + 48 descriptors x 64 setup / 16 cores^2 = 2892 (core 0 alone, which loads both
// chains' tiles: 9 descriptors x 64 + 73728 / 136.53 = 1116). PT: 4 K steps x 256 cycles
// (32-row halves, 2 x 32 x 64 x 64 / 1024). DMA-bound: 2892 + the last tile's trip down
// the longer chain (3 x 80 = 240) + one K step (256) + the last epilogue (64) = 3452, but
// each core's only output tile is stored after its last matmul, so the tail decides: the
// loads alone (262144 B / 136.53 = 1920) + one K step (256) + the chain (240) + the
// epilogue (64) + the 16 cores' 8192 B stores together (64 + 16 x 8192 / 136.53 = 1024) =
// 3504 cycles, 2.7x faster than unshared. LX: A, B tiles 2 x 8192 each, f32 accumulator 2 x 16384,
// output 2 x 8192 = 81920 B.
// CHECK-LABEL: func.func @square
// CHECK: tile = [64 : i64, 64 : i64, 64 : i64], resident = "acc", share = "ring", spyre.tiling = {choice = "64x64x64", reason = "fewest predicted cycles of {{[0-9]+}} tilings that fit LX; bound by dma; output-stationary, K-blocked, accumulator resident; A tiles shared over the ring by the 4 cores of a grid row, B tiles by the 4 of a grid column (ring 592 cycles per core); best unshared: 16x64x256 resident b: 9488 cycles, 1179648 B off chip, 61440 B LX", lx_bytes = 81920 : i64
// CHECK-SAME: predicted_cycles = 3.504000e+03 : f64, offchip_bytes = 393216 : i64
// CHECK-SAME: share = "ring"
// With sharing switched off, the unshared tiling above.
// NONE: tile = [16 : i64, 64 : i64, 256 : i64], resident = "b", spyre.tiling = {choice = "16x64x256", {{.*}}predicted_cycles = 9.488000e+03 : f64, offchip_bytes = 1179648 : i64
// NONE-NOT: share

func.func @square(%x: tensor<256x256xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}}) -> tensor<256x256xf16> {
  %w = spyre.param {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}, param_name = "w"} : tensor<256x256xf16>
  %y = spyre.kernel "k0"(%x, %w) {fused = ["mm"], reason = "single op", grid = [4 : i64, 4 : i64], spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}} : (tensor<256x256xf16>, tensor<256x256xf16>) -> tensor<256x256xf16> {
  ^bb0(%x_1: tensor<256x256xf16>, %w_1: tensor<256x256xf16>):
    %y_1 = spyre.matmul %x_1, %w_1 {fx_node = "mm", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}} : tensor<256x256xf16>, tensor<256x256xf16> -> tensor<256x256xf16>
    spyre.yield %y_1 : tensor<256x256xf16>
  }
  func.return %y : tensor<256x256xf16>
}
