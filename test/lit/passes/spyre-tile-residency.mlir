// RUN: spyre-opt --split-input-file %s -p 'spyre-tile{share="none"}' | filecheck %s
// RUN: spyre-opt --split-input-file %s -p 'spyre-tile{resident="a" share="none"}' | filecheck %s --check-prefix=FORCED

// spyre-tile picks, per matmul kernel, the tile and the loop order (which operand stays in
// LX) with the fewest predicted cycles; `resident` forces an order. The grids are fixed
// here (a user override), so only spyre-tile's choice is under test. Operands fp16 (2 B),
// the accumulator f32.

// Wide: 256x256 @ 256x1024 on [1, 8]: each core owns all 256 rows and 128 columns.
// B resident (columns outer) with 32x128x256 tiles: the core's 256x128 B block, 65536 B,
// is loaded once and takes one LX slot (its loop has one trip); A streams in 32x256 tiles
// (16384 B, doubled), the f32 accumulator 32x128 (16384 B, doubled), the fp16 output 32x128
// (8192 B, doubled): 65536 + 32768 + 32768 + 16384 = 147456 B of LX. Off chip per core:
// B 65536 + A 8 x 16384 + output 256 x 128 x 2 = 65536, i.e. 262144 B; 8 cores: 2097152 B.
// 16-row tiles move the same bytes in 16 more descriptors per core (an A load and a store
// per tile); the 8 cores run one program and set up their DMAs in lockstep, so each
// descriptor's 64 setup cycles idle the shared channel: 16 x 64 = 1024 cycles more, against
// a first A tile that arrives later (32 rows instead of 16), 480 cycles net slower.
// Output-stationary with the whole 256x128 core block as the accumulator reads every byte
// once too, but needs 491520 B of LX (the f32 accumulator 2 x 131072, the output 2 x 65536,
// A 256x64 2 x 32768, B 64x128 2 x 16384) and its first matmul waits for a 32 KiB A tile.
// CHECK-LABEL: func.func @wide
// CHECK: tile = [32 : i64, 128 : i64, 256 : i64], resident = "b", spyre.tiling = {choice = "32x128x256", reason = "fewest predicted cycles of {{[0-9]+}} tilings that fit LX; bound by dma; B column block resident over the row loop", lx_bytes = 147456 : i64
// CHECK-SAME: offchip_bytes = 2097152 : i64
// CHECK-SAME: "256x128x64 resident acc: {{[0-9]+}} cycles, 2097152 B off chip, 491520 B LX"
// Forced to keep A: the whole 256x256 A block (131072 B, one slot) over 64-column B tiles
// (32768 B, doubled), accumulator 256x64 f32 (65536 B, doubled), output (32768 B, doubled):
// 131072 + 65536 + 131072 + 65536 = 393216 B; the same 2097152 B, but the 128 KiB A block
// must arrive before the first matmul, so it was predicted slower. With 128-row A blocks
// B is read twice: 2621440 B. The same block loaded in 4 K slices of 256x64 (note 54),
// each multiplied as it arrives with a 64x64 B tile (8192 B, doubled) and kept for the
// second column tile: 131072 + 16384 + 131072 + 65536 = 344064 B, the same bytes, and the
// first matmul waits for one 32 KiB slice: predicted more than 3 % faster (SLICED_MARGIN),
// so it is the tiling A resident gets. Unforced, B resident is faster (17536 cycles against
// 17920 with the sliced tiling's output tiles stored in 4 pieces).
// FORCED-LABEL: func.func @wide
// FORCED: tile = [256 : i64, 64 : i64, 64 : i64], resident = "a", {{.*}}lx_bytes = 344064 : i64
// FORCED-SAME: offchip_bytes = 2097152 : i64
// FORCED-SAME: "256x64x256 resident a: {{[0-9]+}} cycles, 2097152 B off chip, 393216 B LX"

func.func @wide(%x: tensor<256x256xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}}) -> tensor<256x1024xf16> {
  %w = spyre.param {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 1024>, device_dtype = "dl16", pad = "zero"}, param_name = "w"} : tensor<256x1024xf16>
  %y = spyre.kernel "k0"(%x, %w) {fused = ["mm"], reason = "single op", grid = [1 : i64, 8 : i64], spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 1024>, device_dtype = "dl16", pad = "zero"}} : (tensor<256x256xf16>, tensor<256x1024xf16>) -> tensor<256x1024xf16> {
  ^bb0(%x_1: tensor<256x256xf16>, %w_1: tensor<256x1024xf16>):
    %y_1 = spyre.matmul %x_1, %w_1 {fx_node = "mm", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 1024>, device_dtype = "dl16", pad = "zero"}} : tensor<256x256xf16>, tensor<256x1024xf16> -> tensor<256x1024xf16>
    spyre.yield %y_1 : tensor<256x1024xf16>
  }
  func.return %y : tensor<256x1024xf16>
}

// -----

// Tall: 1024x256 @ 256x256 on [8, 1]: each core owns 128 rows and all 256 columns.
// B resident with 16x256x256 tiles: the 256x256 B block (131072 B, one slot), A tiles 16x256
// (8192 B, doubled), accumulator 16x256 f32 (16384 B, doubled), output (8192 B, doubled):
// 131072 + 16384 + 32768 + 16384 = 196608 B. Off chip per core: B 131072 + A 65536 +
// output 65536 = 262144 B, 2097152 B on 8 cores.
// CHECK-LABEL: func.func @tall
// CHECK: tile = [16 : i64, 256 : i64, 256 : i64], resident = "b", {{.*}}lx_bytes = 196608 : i64
// CHECK-SAME: offchip_bytes = 2097152 : i64
// Forced to keep A (the mirror image): the core's one 128x256 A block, 65536 B, once; B in
// 256x64 tiles (32768 B, doubled), accumulator 128x64 f32 (32768 B, doubled), output
// (16384 B, doubled): 65536 + 65536 + 65536 + 32768 = 229376 B; bytes 65536 + 4 x 32768 +
// 65536 = 262144 per core, the same 2097152 B. In 2 K slices of 128x128 (32768 B) with
// 128x64 B tiles (16384 B, doubled) the first matmul waits for 48 KiB instead of 96 KiB:
// 17408 cycles against 18112, more than the 3 % margin: 65536 + 32768 + 65536 + 32768 =
// 196608 B of LX. (Unforced it is also 0.7 % faster than B resident's 17536: within the
// margin, so B stays.)
// FORCED-LABEL: func.func @tall
// FORCED: tile = [128 : i64, 64 : i64, 128 : i64], resident = "a", {{.*}}lx_bytes = 196608 : i64
// FORCED-SAME: offchip_bytes = 2097152 : i64
// FORCED-SAME: "128x64x256 resident a: 18112 cycles, 2097152 B off chip, 229376 B LX"

func.func @tall(%x: tensor<1024x256xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 1024, 256>, device_dtype = "dl16", pad = "zero"}}) -> tensor<1024x256xf16> {
  %w = spyre.param {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}, param_name = "w"} : tensor<256x256xf16>
  %y = spyre.kernel "k0"(%x, %w) {fused = ["mm"], reason = "single op", grid = [8 : i64, 1 : i64], spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 1024, 256>, device_dtype = "dl16", pad = "zero"}} : (tensor<1024x256xf16>, tensor<256x256xf16>) -> tensor<1024x256xf16> {
  ^bb0(%x_1: tensor<1024x256xf16>, %w_1: tensor<256x256xf16>):
    %y_1 = spyre.matmul %x_1, %w_1 {fx_node = "mm", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 1024, 256>, device_dtype = "dl16", pad = "zero"}} : tensor<1024x256xf16>, tensor<256x256xf16> -> tensor<1024x256xf16>
    spyre.yield %y_1 : tensor<1024x256xf16>
  }
  func.return %y : tensor<1024x256xf16>
}

// -----

// Deep: 256x4096 @ 4096x256 on one core. A whole-K block is large (a 16-row A block is
// 131072 B, a 64-column B block 524288 B), so the resident orders need 1.3-1.6 MB of LX
// and load 640 KB or more before the first matmul can start. Output-stationary with
// 64x64x64 tiles: A and B tiles of 8192 B and the 64x64 f32 accumulator (16384 B), each
// doubled, plus the 8192 B output doubled: 81920 B. It re-reads both operands: 16 output
// tiles x 64 K steps x (8192 + 8192) + output 131072 = 16908288 B against B resident's
// 4 x 524288 + 64 x 131072 + 131072 = 10616832 B; on one core the PT bounds the kernel
// (2 x 256 x 4096 x 256 / 2048 FLOP per cycle = 262144 cycles), the extra bytes hide under
// it, and the smaller pipeline fill decides.
// CHECK-LABEL: func.func @deep
// CHECK: tile = [64 : i64, 64 : i64, 64 : i64], resident = "acc", spyre.tiling = {choice = "64x64x64", {{.*}}bound by pt; output-stationary, K-blocked, accumulator resident", lx_bytes = 81920 : i64
// CHECK-SAME: offchip_bytes = 16908288 : i64
// CHECK-SAME: "16x64x4096 resident b: {{[0-9]+}} cycles, 10616832 B off chip, 1323008 B LX"

func.func @deep(%x: tensor<256x4096xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 4096>, device_dtype = "dl16", pad = "zero"}}) -> tensor<256x256xf16> {
  %w = spyre.param {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 4096, 256>, device_dtype = "dl16", pad = "zero"}, param_name = "w"} : tensor<4096x256xf16>
  %y = spyre.kernel "k0"(%x, %w) {fused = ["mm"], reason = "single op", grid = [1 : i64, 1 : i64], spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}} : (tensor<256x4096xf16>, tensor<4096x256xf16>) -> tensor<256x256xf16> {
  ^bb0(%x_1: tensor<256x4096xf16>, %w_1: tensor<4096x256xf16>):
    %y_1 = spyre.matmul %x_1, %w_1 {fx_node = "mm", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 256, 256>, device_dtype = "dl16", pad = "zero"}} : tensor<256x4096xf16>, tensor<4096x256xf16> -> tensor<256x256xf16>
    spyre.yield %y_1 : tensor<256x256xf16>
  }
  func.return %y : tensor<256x256xf16>
}
