// RUN: sed 's/tile = \[50 : i64/tile = [10 : i64/' %S/Inputs/attention-tiled.mlir | spyre-opt -p convert-spyre-to-ktir,spyre-place-memory,spyre-schedule-dataflow | filecheck %s

// An attention kernel's instructions in the order of their earliest start (design note 60).
// The input of spyre-schedule-dataflow-attention.mlir with query tiles of 10 rows: core 3
// (query head 1, rows 50..99) walks 5 tiles. In the order the kernel is unrolled, a tile's
// P V sat on the in-order PT ahead of the next tile's Q K^T, so the PT waited for every
// tile's softmax and the SFU for every tile's P V. Ordered by earliest start, the PT runs
// the next tiles' Q K^T while the SFU works on this tile's softmax. How far ahead is bounded
// by the two ping-pong slots of the fp32 scores: tile 2's Q K^T writes tile 0's slot once
// the subtraction of the row maximum has read it.
// CHECK: spyrecode.core attributes {id = 3 : i64}
// K, V and the first Q tile; tile 0's scores into slot [[S0:[0-9]+]].
// CHECK-NEXT: spyrecode.dma_load {ddr = 25600 : i64
// CHECK-NEXT: spyrecode.dma_load {ddr = 38400 : i64
// CHECK-NEXT: spyrecode.dma_load {ddr = 12928 : i64, lx = [[Q0:[0-9]+]] : i64, rows = 10 : i64
// CHECK-NEXT: spyrecode.pt_matmul_nt {a = [[Q0]] : i64, b = 0 : i64, c = [[S0:[0-9]+]] : i64, m = 10 : i64
// Tile 1's Q (10 rows further: 12928 + 10 * 256) and scores, in the other slot, before any
// SFU work of tile 0.
// CHECK-NEXT: spyrecode.dma_load {ddr = 15488 : i64, lx = [[Q1:[0-9]+]] : i64
// CHECK-NEXT: spyrecode.pt_matmul_nt {a = [[Q1]] : i64, b = 0 : i64, c = [[S1:[0-9]+]] : i64
// CHECK-NEXT: spyrecode.sfu_scalar {fn = 2 : i64, src = [[S0]] : i64
// Tile 0's softmax reads its scores into the shifted exponent tile ...
// CHECK: spyrecode.sfu_colwise {fn = 1 : i64, src0 = [[S0]] : i64
// ... and tile 2's Q K^T takes the freed slot before tile 0's P V runs.
// CHECK: spyrecode.pt_matmul_nt {a = [[Q0]] : i64, b = 0 : i64, c = [[S0]] : i64
// CHECK: spyrecode.pt_matmul {a = {{[0-9]+}} : i64, b = 12800 : i64
// CHECK: spyrecode.dma_store {lx = {{[0-9]+}} : i64, ddr = 64128 : i64
