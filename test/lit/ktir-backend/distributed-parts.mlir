// Distributed views of LPDDR tensors (design note 114; kernels:
// test/python/ktir/kernels/distributed_parts.mlir; exactness, the injected bug and the
// refusals: test_ktir_distributed_parts.py): a tile over parts stacked by rows moves one
// DMA per part it reaches, each into its rows of the LX tile (core 1's 32-row tile: 16
// rows of k0 at LX 0, 16 rows of k1 at LX 2048); tiles narrower than a stick through
// parts are blocked like a single tensor's.
// RUN: spyrec compile %S/../../python/ktir/kernels/distributed_parts.mlir --function stacked_rows --emit=spyrecode 2>/dev/null | FileCheck --check-prefix=ROWS %s
// RUN: spyrec compile %S/../../python/ktir/kernels/distributed_parts.mlir --function narrow_parts --emit=ktir 2>/dev/null | FileCheck --check-prefix=NARROW %s
// RUN: spyrec compile %S/../../python/ktir/kernels/distributed_parts.mlir --function narrow_parts -o %t.spyre 2>/dev/null
// RUN: spyrec run %t.spyre --check %S/../../python/ktir/kernels/distributed_parts.mlir --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED %s
// RUN: not spyrec compile %S/../../python/ktir/kernels/distributed_parts.mlir --function half_stick_parts 2>&1 | FileCheck --check-prefix=HALF %s

// ROWS: spyrecode.dma_load {ddr = 4096 : i64, lx = 0 : i64, rows = 16 : i64, row_bytes = 128 : i64
// ROWS-NEXT: spyrecode.dma_load {ddr = 6144 : i64, lx = 2048 : i64, rows = 16 : i64, row_bytes = 128 : i64

// NARROW: %v0 = ktdp.construct_memory_view %p0, sizes: [24, 2, 16]
// NARROW: %v1 = ktdp.construct_memory_view %p1, sizes: [40, 2, 16]
// NARROW-SAME: (d0 + -24) >= 0
// NARROW: ktdp.construct_distributed_memory_view(%v0, %v1 : memref<24x2x16xf16>, memref<40x2x16xf16>) : memref<64x2x16xf16>
// NARROW: ktdp.construct_access_tile %pv[%row, %col floordiv 16, %col mod 16]

// CHECKED: y: ok
// CHECKED-NEXT: worst element {{.*}} error 0,

// HALF: error: kernel @half_stick_parts, core (0, 0): ktdp.load: tile [8, 64] at [0, 0] meets a part of its distributed view at column 32, 64 B into a stick of its LX rows
