// Compute constructs of public KTIR kernels through the back end (design note 82; kernels:
// test/python/ktir/kernels/constructs.mlir; numerics and injected bugs:
// test_ktir_constructs.py; the CHECKED lines run the emulator against the interpreter):
// - `acc + dot` over a loop-carried f16 zero constant: the zero is a fill kept in LX that
//   the loop carries, the add an SFU op (its first iteration adds the immediate 0);
// - rows of 40 f16 (80 B) are the device's padded sticks: the views get the padded pitch
//   (64 elements), sizes unchanged; the 1-D grid [2] is [2, 1];
// - linalg.transpose of K as a matmul's B is no instruction: a matmul_nt reading K as stored;
// - a combiner written `linalg.add` of its two arguments is the arith.addf ring.reduce sums.
// RUN: spyrec compile %S/../../python/ktir/kernels/constructs.mlir --function matmul_acc16 --arg K=256 --arg BM=8 --arg BN=64 --arg BK=64 --emit=ktir 2>/dev/null | FileCheck --check-prefix=ACC %s
// RUN: spyrec compile %S/../../python/ktir/kernels/constructs.mlir --function narrow_rows --emit=ktir 2>/dev/null | FileCheck --check-prefix=NARROW %s
// RUN: spyrec compile %S/../../python/ktir/kernels/constructs.mlir --function scores_kt --emit=ktir 2>/dev/null | FileCheck --check-prefix=KT %s
// RUN: spyrec compile %S/../../python/ktir/kernels/constructs.mlir --function sum_named_add --emit=ktir 2>/dev/null | FileCheck --check-prefix=SUM %s
// RUN: spyrec compile %S/../../python/ktir/kernels/constructs.mlir --function matmul_acc16 --arg K=256 --arg BM=8 --arg BN=64 --arg BK=64 -o %t.acc.spyre 2>/dev/null
// RUN: spyrec run %t.acc.spyre --check %S/../../python/ktir/kernels/constructs.mlir 2>&1 | FileCheck --check-prefix=CHECKED-ACC %s
// RUN: spyrec compile %S/../../python/ktir/kernels/constructs.mlir --function narrow_rows -o %t.narrow.spyre 2>/dev/null
// RUN: spyrec run %t.narrow.spyre --check %S/../../python/ktir/kernels/constructs.mlir --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED-NARROW %s

// ACC-LABEL: func.func @matmul_acc16
// ACC:       %zero = linalg.fill {{.*}}ins(%{{.*}} : f16) outs(%{{.*}} : tensor<8x64xf16>)
// ACC:       scf.for {{.*}} iter_args(%acc = %zero)
// ACC:         linalg.generic {{.*}} outs(%{{.*}} : tensor<8x64xf32>) attrs =  {spyre.fn = "matmul"
// ACC:         %dot = linalg.generic {{.*}} outs(%{{.*}} : tensor<8x64xf16>) attrs =  {spyre.fn = "copy"
// ACC:         %next = linalg.generic {{.*}} ins(%acc, %dot : tensor<8x64xf16>, tensor<8x64xf16>) {{.*}} {spyre.fn = "add"

// NARROW-LABEL: func.func @narrow_rows
// NARROW-SAME:  grid = [2 : i64, 1 : i64]
// NARROW:       ktdp.construct_memory_view %x_ptr, sizes: [16, 40], strides: [64, 1]
// NARROW:       ktdp.construct_memory_view %y_ptr, sizes: [16, 40], strides: [64, 1]
// NARROW:       ktdp.construct_memory_view %z_ptr, sizes: [16, 40], strides: [64, 1]

// KT-LABEL: func.func @scores_kt
// KT-NOT:   linalg.transpose
// KT:       linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]{{.*}} ins(%q, %k : tensor<16x64xf16>, tensor<64x64xf16>) {{.*}} {spyre.fn = "matmul_nt"
// KT-NOT:   linalg.transpose

// SUM-LABEL: func.func @sum_named_add
// SUM:       ktdp.inter_tile_reduce
// SUM:         %r = arith.addf %lhs, %rhs : tensor<1x64xf16>
// SUM-NEXT:    ktdp.yield_reduced %r
// SUM-NOT:   linalg.add

// CHECKED-ACC: c_ptr: ok
// CHECKED-NARROW: z_ptr: ok
// CHECKED-NARROW-NEXT: worst element {{.*}} error 0,
