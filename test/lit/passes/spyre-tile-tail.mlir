// RUN: spyre-opt %s -p spyre-tile | filecheck %s
// RUN: spyre-opt %s -p 'spyre-tile{tail=1}' | filecheck %s --check-prefix=NOTAIL
// RUN: spyre-opt %s -p spyre-tile,convert-spyre-to-ktir | filecheck %s --check-prefix=KTIR

// Tails (design note 57): the last column tile of a K-sliced A block computed in row pieces,
// so that only the last piece's store is left after the last matmul.
//
// 1500x1000 @ 1000x1500 fp16 on a fixed 5x6 grid: each core owns 300 rows x 256 columns
// (1536 / 6) with K padded to 1024 (16 K steps of 64). It is memory-bound (10.5 MB over
// 204.8 GB/s is 51.3 us, the flops 45.8 us), so every cycle of fill and drain counts.
//
// Without a tail (NOTAIL) the model's best is 64-wide column tiles: the drain is the last
// 300x64 tile of each core, 30 x 38400 B = 1152000 B / 136.53 B a cycle = 8437 cycles,
// and the first column tile waits for the whole A row block (3 MB over the channel).
// 128-wide tiles do the first tile's compute over twice as many columns, enough to cover A,
// but alone their drain doubles: 2304000 B, 16875 cycles (99153 predicted in all).
//
// With a tail of 3 the last 128-wide tile runs as pieces of 112, 112 and 76 rows: whole
// 16-row PT blocks (8 rows a corelet) but the last, because 300 / 3 = 100 rows would pad
// every corelet's 50 rows to 56. PT per corelet: 16 x 2432 (152 x 64 x 128 x 2 / 1024)
// for the first tile + 2 x 16 x 896 + 16 x 640 for the pieces = 77824 cycles. The drain is
// the 76-row piece: 30 x 19456 B = 583680 B, 4275 cycles. Each piece's K step (896 cycles
// for 112 rows) outlasts the B slices the 6 grid columns' loaders bring it (6 x 64 x 128 x 2
// = 98304 B, 720 cycles); four pieces of 80 rows (640 cycles) would not, and are not
// offered. Predicted 86105 cycles against 99153 in one piece (the emulator: 86748).
// CHECK-LABEL: func.func @tail
// CHECK: tile = [300 : i64, 128 : i64, 64 : i64], resident = "a", share = "ring", tail = 3 : i64
// CHECK-SAME: the last column tile in 3 row pieces (112 rows, the last 76), its B block resident, so the drain is the last piece's store (in one piece: 99153 cycles)
// CHECK-SAME: predicted_cycles = 8.610520e+04 : f64
// NOTAIL-LABEL: func.func @tail
// NOTAIL: tile = [300 : i64, 64 : i64, 64 : i64], resident = "a", share = "ring", store_pieces = 12 : i64, spyre.tiling
// NOTAIL-NOT: tail =
// NOTAIL: func.return
//
// Lowered: the first column tile as before (A block in 16 K slices, B streamed); then the
// tail's 1024x128 block of B, loaded in 16 row slices (spyre.load_pieces_dim = 0) that the
// first piece's K loop reads as they arrive; the two 112-row pieces in a loop and the
// 76-row piece after it, each K step reading a slice of both resident blocks; the pieces'
// stores are whole (the pieces are the split).
// KTIR-LABEL: func.func @k0
// KTIR: %[[A:.*]] = ktdp.load %{{.*}} {spyre.load_pieces = 16 : i64} : !ktdp.access_tile<300x1024xindex> -> tensor<300x1024xf16>
// KTIR: ktdp.store %{{.*}}, %{{.*}} {spyre.store_pieces = 12 : i64} : tensor<300x128xf16>
// KTIR: %[[B:.*]] = ktdp.load %{{.*}} {spyre.load_pieces = 16 : i64, spyre.load_pieces_dim = 0 : i64} : !ktdp.access_tile<1024x128xindex> -> tensor<1024x128xf16>
// KTIR: scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// KTIR: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<112x128xf32>)
// KTIR-NEXT: tensor.extract_slice %[[A]][%[[P]], %[[K]]] [112, 64] [1, 1] : tensor<300x1024xf16> to tensor<112x64xf16>
// KTIR-NEXT: tensor.extract_slice %[[B]][%[[K]], 0] [64, 128] [1, 1] : tensor<1024x128xf16> to tensor<64x128xf16>
// KTIR: ktdp.store %{{.*}}, %{{.*}} : tensor<112x128xf16>
// KTIR: tensor.extract_slice %[[A]][%{{.*}}, %{{.*}}] [76, 64] [1, 1] : tensor<300x1024xf16> to tensor<76x64xf16>
// KTIR: ktdp.store %{{.*}}, %{{.*}} : tensor<76x128xf16>

func.func @tail(%x: tensor<1500x1000xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 1500, 1024>, device_dtype = "dl16", pad = "zero"}}) -> tensor<1500x1500xf16> {
  %w = spyre.param {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 1024, 1536>, device_dtype = "dl16", pad = "zero"}, param_name = "w"} : tensor<1000x1500xf16>
  %y = spyre.kernel "k0"(%x, %w) {fused = ["mm"], reason = "single op", grid = [5 : i64, 6 : i64], spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 1500, 1536>, device_dtype = "dl16", pad = "zero"}} : (tensor<1500x1000xf16>, tensor<1000x1500xf16>) -> tensor<1500x1500xf16> {
  ^bb0(%x_1: tensor<1500x1000xf16>, %w_1: tensor<1000x1500xf16>):
    %y_1 = spyre.matmul %x_1, %w_1 {fx_node = "mm", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 1500, 1536>, device_dtype = "dl16", pad = "zero"}} : tensor<1500x1000xf16>, tensor<1000x1500xf16> -> tensor<1500x1500xf16>
    spyre.yield %y_1 : tensor<1500x1500xf16>
  }
  func.return %y : tensor<1500x1500xf16>
}
