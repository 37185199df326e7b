// RUN: spyre-opt %S/Inputs/row-reductions.mlir -p 'spyre-stickify,spyre-fuse,spyre-partition-cores' | filecheck %s
// RUN: spyre-opt %S/Inputs/row-reductions.mlir -p 'spyre-stickify,spyre-fuse,spyre-partition-cores{ring_reduce=false}' | filecheck %s --check-prefix=WHOLE
// RUN: spyre-opt %S/Inputs/row-reductions.mlir -p 'spyre-stickify,spyre-fuse' | sed 's/spyre.kernel "k2"(\(.*\)) {/spyre.kernel "k2"(\1) {grid = [1 : i64, 4 : i64], /' | not spyre-opt -p spyre-partition-cores 2>&1 | filecheck %s --check-prefix=BAD

// Reduced rows split over a grid row (design note 59). A kernel that reduces its rows may
// split them over gn cores when every reduction is a sum and no column is stick padding:
// each core sums its share of a row and the gn partial sums are all-reduced with one
// ring.reduce per tile, tm rows x one f32 stick, over cores gm apart on the ring:
//   2 x (tm * 128 B / 128 B per cycle + (gn - 1) * gm hops * 4 cycles).

// k0: sum over 4 rows of 65536 fp16 (512 KiB in). Whole rows (4x1), a core sums one row
// as loaded: 65536 * 2 B / 128 B per cycle = 1024 SFU cycles after its 128 KiB load, and
// the four loads take 524288 B / 136.5 B per cycle = 3840 cycles of the shared channel, so
// the one-tile cores load, sum and store in turn: 4997 cycles predicted. Split 1x16, a
// core sums 4096 columns of 2 rows per tile (2 tiles): 2 * 4096 * 2 B / 128 = 128 SFU
// cycles each, plus an all-reduce of 2 sticks over 16 neighbouring cores,
// 2 x (2 + 15 * 1 * 4) = 124 cycles; the channel decides: 4324 cycles. The one-column
// sums are whole on every core of the grid row after the all-reduce, and only its first
// core stores them: 4 x 128 B besides the 512 KiB read.
// CHECK: spyre.kernel "k0"{{.*}}grid = [1 : i64, 16 : i64], spyre.partition = {choice = "1x16", reason = "fewest predicted cycles of 15 even splits of 4 rows x 1024 output sticks; bound by dma; {{.*}}; each row split over 16 cores, its 1 sum(s) combined by ring.reduce per tile (1.2x faster than whole rows)
// CHECK-SAME: predicted_cycles = 4.323800e+03 : f64, offchip_bytes = 524800 : i64

// k1: RMS norm of 2 rows of 4096 (mul, reduce_sum, mul_scalar, add_scalar, rsqrt, mul).
// Whole rows (2x1): 4 full-row SFU passes (the square, the sum, the scaling, the f16
// conversion) of 4096 * 4 B / 128 = 128 cycles each, and 6 passes over the one-column sum
// (rsqrt counts 4), a stick each: 518 SFU cycles against 368 of DMA (32 KiB over the
// channel, 240 cycles, and two descriptors of 64): 886 cycles. Split 2x4 (1024 columns a
// core): 4 x 32 + 6 = 134 SFU cycles and one all-reduce of 2 x (1 + 3 * 2 * 4) = 50: 184,
// under the 368 of DMA: 552 cycles. 2x8 predicts the same; the fewer cores win the tie.
// CHECK: spyre.kernel "k1"{{.*}}grid = [2 : i64, 4 : i64], spyre.partition = {choice = "2x4"
// CHECK-SAME: each row split over 4 cores, its 1 sum(s) combined by ring.reduce per tile (1.6x faster than whole rows)
// CHECK-SAME: predicted_cycles = 5.520000e+02 : f64

// k2: softmax reduces by max as well as by sum; ring.reduce only adds, so its rows stay
// whole: of gm | 2 with gn = 1, two candidates.
// CHECK: spyre.kernel "k2"{{.*}}grid = [2 : i64, 1 : i64], spyre.partition = {choice = "2x1", reason = "fewest predicted cycles of 2 even splits of 2 rows x 64 output sticks

// k3: 4000 fp16 columns end in 32 columns of stick padding (63 sticks of 64); a share of
// the row that holds them would sum the padding, so the rows stay whole.
// CHECK: spyre.kernel "k3"{{.*}}grid = [2 : i64, 1 : i64], spyre.partition = {choice = "2x1", reason = "fewest predicted cycles of 2 even splits of 2 rows x 63 output sticks

// With ring_reduce=false no reduced row is split: every kernel runs one row per core.
// WHOLE: spyre.kernel "k0"{{.*}}grid = [4 : i64, 1 : i64]
// WHOLE: spyre.kernel "k1"{{.*}}grid = [2 : i64, 1 : i64]
// WHOLE: spyre.kernel "k2"{{.*}}grid = [2 : i64, 1 : i64]
// WHOLE: spyre.kernel "k3"{{.*}}grid = [2 : i64, 1 : i64]

// A user grid that splits the softmax rows is refused with the rule it breaks.
// BAD: error: kernel @k2: grid [1, 4] must divide its 2 rows evenly with each row on one core (its reductions are not all sums, and ring.reduce only adds) and use at most 32 cores
