// Row tiles too wide for LX streamed through it in chunks (design note 113; kernel:
// test/python/ktir/kernels/wide_rows.mlir; numerics and injected bugs:
// test_ktir_wide_rows.py): a 1 x 131072 f16 row (512 KB in f32) is three passes over
// 8192-column chunks, each reloading its chunk: the max (an f16 maxnumf per chunk combined
// with the carried max), the sum (an f32 sum carried from 0, the init added once after
// the loop), and exp(x - max) stored chunk by chunk.
// RUN: spyrec compile %S/../../python/ktir/kernels/wide_rows.mlir --emit=ktir 2>/dev/null | FileCheck %s
// RUN: spyrec compile %S/../../python/ktir/kernels/wide_rows.mlir -o %t.spyre 2>/dev/null
// RUN: spyrec run %t.spyre --check %S/../../python/ktir/kernels/wide_rows.mlir 2>&1 | FileCheck --check-prefix=CHECKED %s

// CHECK: %m = scf.for %chunk_col = {{.*}} iter_args({{.*}} = %m0) -> (tensor<1xf16>)
// CHECK: ktdp.construct_access_tile %xv[%row, %chunk_col]
// CHECK-SAME: -> !ktdp.access_tile<1x8192xindex>
// CHECK: ktdp.load %xt
// CHECK-SAME: -> tensor<1x8192xf16>
// CHECK: scf.for %chunk_col{{.*}} -> (tensor<1xf32>)
// CHECK: ktdp.load
// CHECK-SAME: -> tensor<1x8192xf16>
// CHECK: scf.for %chunk_col
// CHECK: ktdp.store %e, %yt : tensor<1x8192xf16>, !ktdp.access_tile<1x8192xindex>
// CHECK-NOT: tensor<1x131072x

// CHECKED: mx: ok
// CHECKED: sm: ok
// CHECKED: y: ok
