// Tiles narrower than a stick at multiples of their width (design note 112; kernels:
// test/python/ktir/kernels/narrow_tiles.mlir; numerics, the exact copy and the refusal:
// test_ktir_narrow_tiles.py): the tensor's last dim is stored in blocks of the tile width,
// each block in sticks of its own, so every tile moves whole sticks however many cores
// write beside it.
// - 32-column f16 tiles of 64-column rows: the view becomes 32x2x32, each tile 16x1x32 at
//   [row, col floordiv 32, col mod 32], loaded and stored as one 16-row DMA a stick wide at
//   a 256-byte pitch; the reshapes back to the kernel's tile are no instruction;
// - one f32 per row into a vector: a 64x1 view, each row sum (a column in LX) one stick.
// RUN: spyrec compile %S/../../python/ktir/kernels/narrow_tiles.mlir --function half_sticks --emit=ktir 2>/dev/null | FileCheck --check-prefix=HALF %s
// RUN: spyrec compile %S/../../python/ktir/kernels/narrow_tiles.mlir --function half_sticks --emit=ktir 2>/dev/null | spyre-opt | FileCheck --check-prefix=HALF %s
// RUN: spyrec compile %S/../../python/ktir/kernels/narrow_tiles.mlir --function half_sticks --emit=spyrecode 2>/dev/null | FileCheck --check-prefix=DMA %s
// RUN: spyrec compile %S/../../python/ktir/kernels/narrow_tiles.mlir --function row_sums --emit=ktir 2>/dev/null | FileCheck --check-prefix=SUMS %s
// RUN: spyrec compile %S/../../python/ktir/kernels/narrow_tiles.mlir --function row_sums -o %t.sums.spyre 2>/dev/null
// RUN: spyrec run %t.sums.spyre --check %S/../../python/ktir/kernels/narrow_tiles.mlir 2>&1 | FileCheck --check-prefix=CHECKED %s
// RUN: not spyrec compile %S/../../python/ktir/kernels/narrow_tiles.mlir --function off_block 2>&1 | FileCheck --check-prefix=OFF %s

// HALF: ktdp.construct_memory_view %x, sizes: [32, 2, 32]
// HALF-SAME: memref<32x2x32xf16>
// HALF: ktdp.construct_access_tile %xv[%row, %col floordiv 32, %col mod 32]
// HALF-SAME: spyre.column_block = 32
// HALF-SAME: -> !ktdp.access_tile<16x1x32xindex>
// HALF: ktdp.load %xt
// HALF-SAME: -> tensor<16x1x32xf16>
// HALF-NEXT: tensor.collapse_shape
// HALF-SAME: tensor<16x1x32xf16> into tensor<16x32xf16>
// HALF: tensor.expand_shape %s
// HALF-SAME: into tensor<16x1x32xf16>
// HALF-NEXT: ktdp.store

// DMA: spyrecode.dma_load {ddr = 0 : i64, lx = 0 : i64, rows = 16 : i64, row_bytes = 128 : i64, ddr_pitch = 256 : i64
// DMA: spyrecode.dma_store {{.*}} rows = 16 : i64, row_bytes = 128 : i64, lx_pitch = 128 : i64, ddr_pitch = 256 : i64
// DMA: spyrecode.dma_load {ddr = 128 : i64, {{.*}} rows = 16 : i64, row_bytes = 128 : i64, ddr_pitch = 256 : i64

// SUMS: ktdp.construct_memory_view %s, sizes: [64, 1]
// SUMS: ktdp.construct_access_tile %sv[%row, 0]
// SUMS-SAME: -> !ktdp.access_tile<1x1xindex>
// SUMS: tensor.expand_shape %sum
// SUMS-SAME: {spyre.tile = array<i64: 1, 1>} : tensor<1xf32> into tensor<1x1xf32>

// CHECKED: s: ok

// OFF: error: kernel @off_block, core {{[0-9]}} {{.*}} at column 16, not a multiple of its width 32
