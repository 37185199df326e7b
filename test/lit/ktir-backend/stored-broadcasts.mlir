// Written-out max reductions and stored broadcasts through the back end (design note 94;
// kernels: test/python/ktir/kernels/stored_broadcasts.mlir; numerics and injected bugs:
// test_ktir_stored_broadcasts.py; the CHECKED lines run the emulator against the interpreter):
// - a linalg.reduce combiner `arith.cmpf ogt` + `arith.select` is a max that skips NaN
//   elements: their NaN elements become the identity (KEEP), then the SFU's row max;
// - a broadcast stored as it is becomes an SFU copy through the broadcast map, written whole
//   in LX: a column is added to a -0.0 fill of the tile (sfu.scalar KEEP 0, sfu.colwise ADD),
//   one element likewise with source pitch 0, a row is copied with source pitch 0.
// RUN: spyrec compile %S/../../python/ktir/kernels/stored_broadcasts.mlir --function row_max_select --emit=ktir 2>/dev/null | FileCheck --check-prefix=MAX %s
// RUN: spyrec compile %S/../../python/ktir/kernels/stored_broadcasts.mlir --function scalar_fill --emit=ktir 2>/dev/null | FileCheck --check-prefix=SCALAR %s
// RUN: spyrec compile %S/../../python/ktir/kernels/stored_broadcasts.mlir --function scalar_fill --emit=spyrecode 2>/dev/null | FileCheck --check-prefix=FILL %s
// RUN: spyrec compile %S/../../python/ktir/kernels/stored_broadcasts.mlir --function row_fill --emit=spyrecode 2>/dev/null | FileCheck --check-prefix=ROW %s
// RUN: spyrec compile %S/../../python/ktir/kernels/stored_broadcasts.mlir --function row_max_select -o %t.max.spyre 2>/dev/null
// RUN: spyrec run %t.max.spyre --check %S/../../python/ktir/kernels/stored_broadcasts.mlir --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED %s
// RUN: spyrec compile %S/../../python/ktir/kernels/stored_broadcasts.mlir --function scalar_fill -o %t.fill.spyre 2>/dev/null
// RUN: spyrec run %t.fill.spyre --check %S/../../python/ktir/kernels/stored_broadcasts.mlir --numerics ieee 2>&1 | FileCheck --check-prefix=EXACT %s

// MAX-LABEL: func.func @row_max_select
// MAX-NOT:   arith.select %gt
// MAX:       spyre.fn = "keep"
// MAX:       spyre.fn = "reduce_max"
// MAX:       %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], {{.*}} {spyre.fn = "copy"
// MAX-NEXT:  ^bb0
// MAX:       ktdp.store %y, %yt

// SCALAR-LABEL: func.func @scalar_fill
// SCALAR-NOT:   tensor.collapse_shape
// SCALAR:       %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], {{.*}} ins(%x : tensor<1x1xf16>) {{.*}} {spyre.fn = "copy"
// SCALAR:       ktdp.store %y, %yt

// FILL:      spyrecode.dma_load
// FILL-NEXT: spyrecode.sfu_scalar {fn = 6 : i64, src = [[DST:[0-9]+]] : i64, dst = [[DST]] : i64, rows = 16 : i64, cols = 64 : i64, {{.*}} imm = 0 : i64
// FILL-NEXT: spyrecode.sfu_colwise {fn = 0 : i64, src0 = [[DST]] : i64, src1 = 0 : i64, dst = [[DST]] : i64, rows = 16 : i64, cols = 64 : i64, src0_pitch = 128 : i64, src1_pitch = 0 : i64
// FILL:      spyrecode.dma_store {{.*}} rows = 32 : i64

// ROW:      spyrecode.sfu_unary {fn = 0 : i64, src = 0 : i64, {{.*}} rows = 8 : i64, cols = 64 : i64, src_pitch = 0 : i64
// ROW-NEXT: spyrecode.sfu_unary {fn = 0 : i64, src = 0 : i64, {{.*}} rows = 8 : i64, cols = 64 : i64, src_pitch = 0 : i64

// CHECKED: y_ptr: ok
// EXACT: y_ptr: ok
// EXACT-NEXT: worst element {{.*}} error 0,
