// RUN: spyre-opt %S/Inputs/row-reductions.mlir -p 'spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile,convert-spyre-to-ktir,spyre-place-memory,spyre-schedule-dataflow' | filecheck %s

// Reduced rows split over a grid row (design note 59) in SpyreCode (the KTIR is in
// convert-spyre-to-ktir-ring-reduce.mlir). k0 sums 4
// rows of 65536 fp16 on a 1x16 grid (spyre-partition-cores-reduce.mlir): core (0, y) =
// core number y owns columns 4096y .. 4096y + 4095 of every row, in two 2x4096 tiles. Its
// one grid row is the tiles i with i mod 1 = 0: all 16 cores.

// In SpyreCode, per tile an sfu.reduce of the core's 4096 columns of 2 rows into two f32
// sticks, then one ring.reduce of those sticks, in place, over the 16 cores first = 0,
// stride 1 (root -1: every member gets the sums), after the sfu.reduce that wrote them.
// The schedule is per core: the store depends on the core's coordinates.
// CHECK: spyrecode.program "k0" attributes {spyre.schedule = "per-core"
// CHECK: spyrecode.core attributes {id = 0 : i64}
// CHECK: spyrecode.sfu_reduce {fn = 0 : i64, src = 0 : i64, dst = [[P:[0-9]+]] : i64, rows = 2 : i64, cols = 4096 : i64
// CHECK-NEXT: spyrecode.ring_reduce {src = [[P]] : i64, dst = [[P]] : i64, rows = 2 : i64, cols = 1 : i64, src_pitch = 128 : i64, dst_pitch = 128 : i64, dtype = 0 : i64, first = 0 : i64, count = 16 : i64, stride = 1 : i64, root = -1 : i64, tag = 1 : i64, unit = 0 : i64, deps = array<i64: 2>}
// Core 0 (y = 0) converts the sums, writes -0.0 into the other 63 DL16 elements of each
// stick (KEEP x, 0: the conversion writes one element a row, and the store moves the
// whole stick, whose padding must be zero for a matmul to read; design note 63) and
// stores their sticks, for both tiles.
// CHECK-NEXT: spyrecode.sfu_unary {fn = 0 : i64, src = [[P]] : i64, dst = [[C:[0-9]+]] : i64
// CHECK-NEXT: spyrecode.sfu_scalar {fn = 6 : i64, {{.*}}rows = 2 : i64, cols = 63 : i64, src_pitch = 128 : i64, dst_pitch = 128 : i64, src_dtype = 1 : i64, dst_dtype = 1 : i64, imm = 0 : i64, reverse = 0 : i64
// CHECK-NEXT: spyrecode.dma_store
// CHECK-NEXT: spyrecode.sfu_reduce
// CHECK-NEXT: spyrecode.ring_reduce
// CHECK-NEXT: spyrecode.sfu_unary
// CHECK-NEXT: spyrecode.sfu_scalar {fn = 6 : i64
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
