// Index-dependent masks, tiles in several DMAs and loop-carried row statistics through the
// back end (design note 109; kernels: test/python/ktir/kernels/online_softmax.mlir;
// numerics, injected bugs and refusals: test_ktir_online_softmax.py; the CHECKED lines run
// the emulator against the interpreter):
// - a [2, 4, 128] tile of a [4, 8, 128] view is two runs of four evenly spaced rows: one
//   dma.load and one dma.store per run, each into its own rows of the LX tile;
// - a generic that selects by a condition on linalg.index is an `index_mask`: its index
//   values become operands, and the walk emits one sfu.mask per run of rows whose limit
//   steps by one (rows 3 and 4 of the `row / 4` mask share one; a tile masked whole is one);
// - splat inits of rank-1 tensors a loop carries are fills laid out as columns, written
//   (keep 0, then add the value) before the first read.
// RUN: spyrec compile %S/../../python/ktir/kernels/online_softmax.mlir --function head_runs --emit=spyrecode 2>/dev/null | FileCheck --check-prefix=RUNS %s
// RUN: spyrec compile %S/../../python/ktir/kernels/online_softmax.mlir --function row_group_mask --arg ctx=9 --emit=ktir 2>/dev/null | FileCheck --check-prefix=LEGAL %s
// RUN: spyrec compile %S/../../python/ktir/kernels/online_softmax.mlir --function row_group_mask --arg ctx=9 --emit=spyrecode 2>/dev/null | FileCheck --check-prefix=MASK %s
// RUN: spyrec compile %S/../../python/ktir/kernels/online_softmax.mlir --function online_softmax --emit=ktir 2>/dev/null | FileCheck --check-prefix=STATS %s
// RUN: spyrec compile %S/../../python/ktir/kernels/online_softmax.mlir --function online_softmax -o %t.os.spyre 2>/dev/null
// RUN: spyrec run %t.os.spyre --check %S/../../python/ktir/kernels/online_softmax.mlir --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED %s
// RUN: not spyrec compile %S/../../python/ktir/kernels/online_softmax.mlir --function suffix_mask --arg ctx=9 -o %t.suffix.spyre 2>&1 | FileCheck --check-prefix=SUFFIX %s

// RUNS:      spyrecode.core attributes {id = 0 : i64}
// RUNS-NEXT: spyrecode.dma_load {ddr = 1024 : i64, lx = 0 : i64, rows = 4 : i64, row_bytes = 256 : i64
// RUNS-NEXT: spyrecode.dma_load {ddr = 3072 : i64, lx = 1024 : i64, rows = 4 : i64, row_bytes = 256 : i64
// RUNS:      spyrecode.dma_store {lx = 0 : i64, ddr = 9216 : i64, rows = 4 : i64
// RUNS-NEXT: spyrecode.dma_store {lx = 1024 : i64, ddr = 11264 : i64, rows = 4 : i64

// LEGAL:     linalg.generic {{.*}}ins(%s, {{.*}} : tensor<8x32xf32>, index, index, index, index){{.*}}spyre.fn = "index_mask", spyre.scalar = 0xff800000 : f32, spyre.keep_true
// LEGAL:       linalg.index 0
// LEGAL:       arith.cmpi ule

// MASK:      spyrecode.core attributes {id = 0 : i64}
// MASK:      spyrecode.sfu_mask {src = 0 : i64, dst = 0 : i64, rows = 1 : i64, cols = 32 : i64{{.*}}diag = 9 : i64, imm = 4286578688 : i64
// MASK:      spyrecode.sfu_mask {src = 384 : i64, dst = 384 : i64, rows = 2 : i64{{.*}}diag = 9 : i64
// MASK:      spyrecode.sfu_mask {src = 1024 : i64, dst = 1024 : i64, rows = 8 : i64{{.*}}diag = -9 : i64

// STATS:     %M0 = linalg.fill {{.*}}spyre.tile = array<i64: 8, 1>{{.*}} -> tensor<8xf32>
// STATS:     %L0 = linalg.fill {{.*}}spyre.tile = array<i64: 8, 1>{{.*}} -> tensor<8xf32>
// STATS:     scf.for

// CHECKED: o_ptr: ok

// SUFFIX: kernel @suffix_mask, core (0, 0): linalg.generic: its mask keeps columns 9..31 of row 0, not a prefix of the row
