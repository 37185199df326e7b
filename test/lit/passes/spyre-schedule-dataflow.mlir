// RUN: spyre-opt %S/Inputs/mlp64x100.mlir -p spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile,convert-spyre-to-ktir,spyre-place-memory,spyre-schedule-dataflow | filecheck %s

// k0 on one core, two 64x64 output tiles. The A block is loaded once; each tile loads its
// B block, multiplies (accumulate = 0: fresh accumulator), adds the bias (src1_pitch = 0
// broadcasts the bias row), applies relu, converts to DL16 and stores. The second tile uses
// the other LX slots and the other corelet (unit 1), so its loads do not wait for the
// first tile's compute: they depend on nothing.
// CHECK: spyrecode.program "k0" attributes {{.*}}num_cores = 1 : i64
// CHECK:   spyrecode.core attributes {id = 0 : i64}
// CHECK-NEXT: spyrecode.dma_load {ddr = 0 : i64, lx = 0 : i64, rows = 64 : i64, row_bytes = 256 : i64, ddr_pitch = 256 : i64, lx_pitch = 256 : i64, unit = 0 : i64, deps = array<i64>}
// CHECK-NEXT: spyrecode.dma_load {ddr = 17179869184 : i64, lx = 65536 : i64, rows = 128 : i64, row_bytes = 128 : i64
// CHECK-NEXT: spyrecode.pt_matmul {a = 0 : i64, b = 65536 : i64, c = 32768 : i64, m = 64 : i64, k = 128 : i64, n = 64 : i64, {{.*}}accumulate = 0 : i64, unit = 0 : i64, deps = array<i64: 0, 1>}
// CHECK-NEXT: spyrecode.dma_load {{.*}}rows = 1 : i64
// CHECK-NEXT: spyrecode.sfu_binary {fn = 0 : i64, {{.*}}src1_pitch = 0 : i64
// CHECK-NEXT: spyrecode.sfu_unary {fn = 1 : i64
// CHECK-NEXT: spyrecode.sfu_unary {fn = 0 : i64, {{.*}}dst_dtype = 1 : i64
// CHECK-NEXT: spyrecode.dma_store
// CHECK-NEXT: spyrecode.dma_load {ddr = 17179869312 : i64, lx = 81920 : i64, {{.*}}deps = array<i64>}
// CHECK-NEXT: spyrecode.pt_matmul {{.*}}unit = 1 : i64
// k1 runs on two cores.
// CHECK: spyrecode.program "k1" attributes {{.*}}num_cores = 2 : i64
// CHECK: spyrecode.core attributes {id = 1 : i64}
