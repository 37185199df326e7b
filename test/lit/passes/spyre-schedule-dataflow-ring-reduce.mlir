// RUN: spyre-opt %S/Inputs/row-reductions.mlir -p 'spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile,convert-spyre-to-ktir' | filecheck %s --check-prefix=KTIR
// RUN: spyre-opt %S/Inputs/row-reductions.mlir -p 'spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile,convert-spyre-to-ktir,spyre-place-memory,spyre-schedule-dataflow' | filecheck %s

// Reduced rows split over a grid row (design note 59), from KTIR to SpyreCode. k0 sums 4
// rows of 65536 fp16 on a 1x16 grid (spyre-partition-cores-reduce.mlir): core (0, y) =
// core number y owns columns 4096y .. 4096y + 4095 of every row, in two 2x4096 tiles. Its
// one grid row is the tiles i with i mod 1 = 0: all 16 cores.

// In KTIR each core's partial sum of a row is produced for its grid row and all-reduced
// (consumers = producers), the combiner one arith.addf; the one-column result is stored
// under scf.if by the core with y = 0 alone.
// KTIR: func.func @k0
// KTIR: %[[PART:[0-9]+]] = linalg.generic {{.*}}spyre.fn = "reduce_sum", spyre.valid_cols = 4096 : index
// KTIR: %[[F:[0-9]+]] = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(d0)[s0] : (d0 >= 0, ((d0 * -1) + 15) >= 0, ((d0 mod 1) + (s0 * -1)) == 0)> -> !ktdp.tile_future<(tensor<2x1xf32>), groups = affine_set<(d0) : (d0 >= 0, (d0 * -1) >= 0)>>
// KTIR: ktdp.yield_partial %[[PART]] : tensor<2x1xf32>
// KTIR: %[[SUM:[0-9]+]] = ktdp.inter_tile_reduce(%[[F]]) consumer_tiles_per_group = affine_set<(d0)[s0] : (d0 >= 0, ((d0 * -1) + 15) >= 0, ((d0 mod 1) + (s0 * -1)) == 0)>
// KTIR: arith.addf
// KTIR: ktdp.yield_reduced
// KTIR: %[[FIRST:[0-9]+]] = arith.cmpi eq, %1, %{{[0-9]+}} : index
// KTIR: scf.if %[[FIRST]] {
// KTIR: ktdp.store

// In SpyreCode, per tile an sfu.reduce of the core's 4096 columns of 2 rows into two f32
// sticks, then one ring.reduce of those sticks, in place, over the 16 cores first = 0,
// stride 1 (root -1: every member gets the sums), after the sfu.reduce that wrote them.
// The schedule is per core: the store depends on the core's coordinates.
// CHECK: spyrecode.program "k0" attributes {spyre.schedule = "per-core"
// CHECK: spyrecode.core attributes {id = 0 : i64}
// CHECK: spyrecode.sfu_reduce {fn = 0 : i64, src = 0 : i64, dst = [[P:[0-9]+]] : i64, rows = 2 : i64, cols = 4096 : i64
// CHECK-NEXT: spyrecode.ring_reduce {src = [[P]] : i64, dst = [[P]] : i64, rows = 2 : i64, cols = 1 : i64, src_pitch = 128 : i64, dst_pitch = 128 : i64, dtype = 0 : i64, first = 0 : i64, count = 16 : i64, stride = 1 : i64, root = -1 : i64, tag = 1 : i64, unit = 0 : i64, deps = array<i64: 2>}
// Core 0 (y = 0) converts the sums and stores their sticks, for both tiles.
// CHECK-NEXT: spyrecode.sfu_unary {fn = 0 : i64, src = [[P]] : i64
// CHECK-NEXT: spyrecode.dma_store
// CHECK-NEXT: spyrecode.sfu_reduce
// CHECK-NEXT: spyrecode.ring_reduce
// CHECK-NEXT: spyrecode.sfu_unary
// CHECK-NEXT: spyrecode.dma_store
// Core 1 (y = 1) joins both all-reduces and stores nothing.
// CHECK: spyrecode.core attributes {id = 1 : i64}
// CHECK-NEXT: spyrecode.dma_load
// CHECK-NEXT: spyrecode.dma_load
// CHECK-NEXT: spyrecode.sfu_reduce
// CHECK-NEXT: spyrecode.ring_reduce {{{.*}}first = 0 : i64, count = 16 : i64, stride = 1 : i64, root = -1 : i64
// CHECK-NEXT: spyrecode.sfu_reduce
// CHECK-NEXT: spyrecode.ring_reduce
// CHECK-NEXT: }

// k1, RMS norm on a 2x4 grid: the sum of squares is all-reduced over 4 cores 2 apart, and
// every core then scales its own 1024 columns by the row's rsqrt (sfu.colwise reads the
// reduced stick after the scalar ops on it).
// CHECK: spyrecode.program "k1"
// CHECK: spyrecode.core attributes {id = 0 : i64}
// CHECK: spyrecode.sfu_reduce {fn = 0 : i64, src = [[SQ:[0-9]+]] : i64, dst = [[S:[0-9]+]] : i64, rows = 1 : i64, cols = 1024 : i64
// CHECK-NEXT: spyrecode.ring_reduce {src = [[S]] : i64, dst = [[S]] : i64, {{.*}}first = 0 : i64, count = 4 : i64, stride = 2 : i64, root = -1 : i64
// CHECK-NEXT: spyrecode.sfu_scalar {fn = 2 : i64, src = [[S]] : i64
// CHECK-NEXT: spyrecode.sfu_scalar {fn = 0 : i64, src = [[S]] : i64
// CHECK-NEXT: spyrecode.sfu_unary {fn = 10 : i64, src = [[S]] : i64
// CHECK-NEXT: spyrecode.sfu_colwise {fn = 2 : i64, src0 = 0 : i64, src1 = [[S]] : i64, dst = [[SQ]] : i64, rows = 1 : i64, cols = 1024 : i64
