// Indirect access tiles through the back end (design note 95; kernels:
// test/python/ktir/kernels/indirect.mlir; inputs chosen, faults, races and injected bugs:
// test_ktir_indirect.py). A tile's rows with one table address but for the indexed dim,
// consecutive indices and evenly spaced LX rows are one dma.gather: a strided block per
// index is one gather per row of the block (one index each), paged rows one gather per row
// of a page over the 4 pages (LX rows a page apart); the index sticks are loaded first.
// The CHECKED lines run the emulator against the interpreter (random ids in [0, 16)).
// RUN: spyrec compile %S/../../python/ktir/kernels/indirect.mlir --function block_per_index --emit=spyrecode 2>/dev/null | FileCheck --check-prefix=BLOCK %s
// RUN: spyrec compile %S/../../python/ktir/kernels/indirect.mlir --function paged_rows --emit=spyrecode 2>/dev/null | FileCheck --check-prefix=PAGED %s
// RUN: spyrec compile %S/../../python/ktir/kernels/indirect.mlir --function block_per_index -o %t.block.spyre 2>/dev/null
// RUN: spyrec run %t.block.spyre --check %S/../../python/ktir/kernels/indirect.mlir --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED %s
// RUN: spyrec compile %S/../../python/ktir/kernels/indirect.mlir --function embed_i64 -o %t.embed.spyre 2>/dev/null
// RUN: spyrec run %t.embed.spyre --check %S/../../python/ktir/kernels/indirect.mlir --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED %s
// An element gather (the index on the contiguous dim) is refused, naming the op:
// RUN: sed -e 's/%%vp\[ind(%%vb\[%%t floordiv 16\]), (%%t mod 16), (%%d)\]/%%vp[(%%t floordiv 16), (%%t mod 16), ind(%%vb[%%d floordiv 16])]/' %S/../../python/ktir/kernels/indirect.mlir > %t.element.mlir
// RUN: not spyrec compile %t.element.mlir --function paged_rows -o %t.element.spyre 2>&1 | FileCheck --check-prefix=ELEMENT %s

// BLOCK-LABEL: spyrecode.core attributes {id = 0 : i64}
// BLOCK:       spyrecode.dma_load {ddr = [[IDX:[0-9]+]] : i64, lx = [[SLOT:[0-9]+]] : i64, rows = 1 : i64, row_bytes = 128
// BLOCK-NEXT:  spyrecode.dma_gather {ddr = 256 : i64, lx = 0 : i64, rows = 1 : i64, row_bytes = 256 : i64, ddr_pitch = 8192 : i64, lx_pitch = 256 : i64, idx = [[SLOT]] : i64, limit = 16
// BLOCK-NEXT:  spyrecode.dma_gather {ddr = 1280 : i64, lx = 256 : i64, rows = 1 : i64
// BLOCK-COUNT-6: spyrecode.dma_gather
// BLOCK-NOT:   spyrecode.dma_gather
// BLOCK:       spyrecode.core attributes {id = 1 : i64}

// PAGED:       spyrecode.dma_load
// PAGED-NEXT:  spyrecode.dma_gather {ddr = 0 : i64, lx = 0 : i64, rows = 4 : i64, row_bytes = 128 : i64, ddr_pitch = 2048 : i64, lx_pitch = 2048 : i64, {{.*}} limit = 8
// PAGED-NEXT:  spyrecode.dma_gather {ddr = 128 : i64, lx = 128 : i64, rows = 4 : i64
// PAGED-COUNT-14: spyrecode.dma_gather
// PAGED-NEXT:  spyrecode.dma_store

// CHECKED: : ok
// CHECKED-NEXT: worst element {{.*}} error 0,

// ELEMENT: ktdp.construct_indirect_access_tile: the indirect subscript is on the last (contiguous) dim: that is an element gather
