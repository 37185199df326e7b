// Reshapes of a tile's leading dims, a cast of a transposed tile and float constants spelled
// as bits, through the back end (design note 108; kernels:
// test/python/ktir/kernels/regrouped_rows.mlir; numerics, injected bugs and refusals:
// test_ktir_regrouped_rows.py; the CHECKED lines run the emulator against the interpreter):
// - a tensor.collapse_shape / expand_shape that only merges or splits the leading dims keeps
//   its op, tagged with the tile's 2-D LX shape: the same rows in the same slot, no
//   instruction (one 8-row DMA in, one out);
// - an arith.extf of a linalg.transpose read as a matmul's B is the transpose of the cast:
//   the cast runs on the block as stored and the PT reads it as B^T (pt.matmul_nt);
// - arith.bitcast of an i32 constant to f32 is the immediate it spells (-inf: 0xFF800000);
// - a block loaded through an order that swaps its last two dims (the others 1) is its
//   transpose as stored, and its collapse to 2-D a matmul's B^T (note 109).
// RUN: spyrec compile %S/../../python/ktir/kernels/regrouped_rows.mlir --function heads_rows --emit=ktir 2>/dev/null | FileCheck --check-prefix=HEADS %s
// RUN: spyrec compile %S/../../python/ktir/kernels/regrouped_rows.mlir --function heads_rows --emit=spyrecode 2>/dev/null | FileCheck --check-prefix=ROWS %s
// RUN: spyrec compile %S/../../python/ktir/kernels/regrouped_rows.mlir --function keys_transposed --emit=spyrecode 2>/dev/null | FileCheck --check-prefix=KEYS %s
// RUN: spyrec compile %S/../../python/ktir/kernels/regrouped_rows.mlir --function bitcast_bound --emit=spyrecode 2>/dev/null | FileCheck --check-prefix=BITS %s
// RUN: spyrec compile %S/../../python/ktir/kernels/regrouped_rows.mlir --function keys_order_transposed --emit=spyrecode 2>/dev/null | FileCheck --check-prefix=ORDER %s
// RUN: spyrec compile %S/../../python/ktir/kernels/regrouped_rows.mlir --function keys_transposed -o %t.keys.spyre 2>/dev/null
// RUN: spyrec run %t.keys.spyre --check %S/../../python/ktir/kernels/regrouped_rows.mlir --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED %s

// HEADS-LABEL: func.func @heads_rows
// HEADS:       tensor.collapse_shape %x3 {{.*}}{spyre.tile = array<i64: 8, 128>} : tensor<2x4x128xf16> into tensor<8x128xf16>
// HEADS:       spyre.fn = "exp"
// HEADS:       tensor.expand_shape %y {{.*}}{spyre.tile = array<i64: 8, 128>} : tensor<8x128xf16> into tensor<2x4x128xf16>
// HEADS:       ktdp.store %y3

// ROWS:     spyrecode.dma_load {ddr = 0 : i64, lx = 0 : i64, rows = 8 : i64, row_bytes = 256 : i64
// ROWS-NOT: spyrecode.dma_load
// ROWS:     spyrecode.dma_store {{{.*}}rows = 8 : i64, row_bytes = 256 : i64

// KEYS:     spyrecode.pt_matmul_nt {{{.*}}m = 8 : i64, k = 128 : i64, n = 16 : i64
// KEYS-NOT: spyrecode.pt_matmul {

// a [1, 16, 128] block loaded through (d0, d2, d1) is the block as stored, read as B^T
// ORDER:     spyrecode.dma_load {ddr = 2048 : i64, lx = 2048 : i64, rows = 16 : i64, row_bytes = 256 : i64
// ORDER:     spyrecode.pt_matmul_nt {{{.*}}m = 8 : i64, k = 128 : i64, n = 16 : i64

// BITS:     spyrecode.sfu_scalar {fn = 4 : i64{{.*}}imm = 4286578688 : i64

// CHECKED: s_ptr: ok
