// RUN: spyre-opt %S/Inputs/mlp64x100-tiled.mlir -p convert-spyre-to-ktir,spyre-place-memory,spyre-schedule-dataflow | filecheck %s

// k0 on one core, two 64x64 output tiles. The A block is loaded once; each tile loads its
// B block and bias row into its own ping-pong slots, so no load waits for anything and all
// five are issued first (spyre-schedule-dataflow puts ready loads ahead: the DMA engine runs
// in order, and a load queued behind a store would wait for the whole epilogue). The 64-row
// matmul runs as two 32-row halves, one per corelet (unit 0 and 1, which share LX), each
// waiting only for A and its B (accumulate = 0: fresh accumulator). The bias add
// (src1_pitch = 0 broadcasts the bias row), relu and the conversion to DL16 are split the
// same way; the store waits for both halves.
// CHECK: spyrecode.program "k0" attributes {{.*}}num_cores = 1 : i64
// CHECK:   spyrecode.core attributes {id = 0 : i64}
// CHECK-NEXT: spyrecode.dma_load {ddr = 0 : i64, lx = 0 : i64, rows = 64 : i64, row_bytes = 256 : i64, ddr_pitch = 256 : i64, lx_pitch = 256 : i64, unit = 0 : i64, deps = array<i64>}
// CHECK-NEXT: spyrecode.dma_load {ddr = 17179869184 : i64, lx = 49152 : i64, rows = 128 : i64, row_bytes = 128 : i64
// CHECK-NEXT: spyrecode.dma_load {{.*}}rows = 1 : i64{{.*}}deps = array<i64>}
// The second tile's B block: 64 columns (128 bytes) further into the weight, the other slot.
// CHECK-NEXT: spyrecode.dma_load {ddr = 17179869312 : i64, lx = 65536 : i64, {{.*}}deps = array<i64>}
// CHECK-NEXT: spyrecode.dma_load {{.*}}rows = 1 : i64{{.*}}deps = array<i64>}
// CHECK-NEXT: spyrecode.pt_matmul {a = 0 : i64, b = 49152 : i64, c = 16384 : i64, m = 32 : i64, k = 128 : i64, n = 64 : i64, {{.*}}accumulate = 0 : i64, unit = 0 : i64, deps = array<i64: 0, 1>}
// The second half: 32 rows further into A (32 x 256 B = 8192) and into the accumulator.
// CHECK-NEXT: spyrecode.pt_matmul {a = 8192 : i64, b = 49152 : i64, c = 24576 : i64, m = 32 : i64, {{.*}}unit = 1 : i64, deps = array<i64: 0, 1>}
// CHECK-NEXT: spyrecode.sfu_binary {fn = 0 : i64, {{.*}}src1_pitch = 0 : i64{{.*}}unit = 0 : i64, deps = array<i64: 2, 5>}
// CHECK-NEXT: spyrecode.sfu_binary {fn = 0 : i64, {{.*}}unit = 1 : i64, deps = array<i64: 2, 6>}
// CHECK-NEXT: spyrecode.sfu_unary {fn = 1 : i64
// CHECK-NEXT: spyrecode.sfu_unary {fn = 1 : i64
// CHECK-NEXT: spyrecode.sfu_unary {fn = 0 : i64, {{.*}}dst_dtype = 1 : i64
// CHECK-NEXT: spyrecode.sfu_unary {fn = 0 : i64, {{.*}}dst_dtype = 1 : i64
// CHECK-NEXT: spyrecode.dma_store {{.*}}deps = array<i64: 11, 12>}
// CHECK-NEXT: spyrecode.pt_matmul {a = 0 : i64, b = 65536 : i64, {{.*}}deps = array<i64: 0, 3>}
// k1 runs on two cores.
// CHECK: spyrecode.program "k1" attributes {{.*}}num_cores = 2 : i64
// CHECK: spyrecode.core attributes {id = 1 : i64}
