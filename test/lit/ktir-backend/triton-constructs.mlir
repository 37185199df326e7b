// Constructs of Triton-generated KTIR through spyre-legalize-ktir (kernels:
// test/python/ktir/kernels/triton_style.mlir; numerics against the interpreter:
// test_ktir_scalars.py, and the last RUN line end to end):
// - a linalg.reduce into an f16 accumulator is the SFU's f32 row reduction rounded once to
//   f16 (a copy), as the interpreter folds 16-bit sums;
// - tensor.extract of a row statistic and tensor.splat of it over the row read the column
//   through the map (d0, d1) -> (d0): no scalar leaves LX;
// - a dense splat constant is an immediate;
// - a matmul into an f16 tensor.empty sums from an f32 zero fill and is rounded once.
// RUN: spyre-opt %S/../../python/ktir/kernels/triton_style.mlir -p spyre-legalize-ktir | FileCheck %s
// RUN: spyrec compile %S/../../python/ktir/kernels/triton_style.mlir --function row_softmax --arg n_rows=32 -o %t.spyre 2>/dev/null
// RUN: spyrec run %t.spyre --check %S/../../python/ktir/kernels/triton_style.mlir 2>&1 | FileCheck --check-prefix=CHECKED %s

// CHECK-LABEL: func.func @row_softmax
// CHECK:       %[[MAX32:.*]] = linalg.generic {{.*}} ins(%x : tensor<1x64xf16>) outs(%{{.*}} : tensor<1xf32>) attrs =  {spyre.fn = "reduce_max"
// CHECK:       %m = linalg.generic {{.*}} ins(%[[MAX32]] : tensor<1xf32>) outs(%{{.*}} : tensor<1xf16>) attrs =  {spyre.fn = "copy"}
// CHECK:       %d = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>]{{.*}} ins(%x, %m : tensor<1x64xf16>, tensor<1xf16>) {{.*}} {spyre.fn = "sub"}
// CHECK:       %[[SUM32:.*]] = linalg.generic {{.*}} ins(%e : tensor<1x64xf16>) outs(%{{.*}} : tensor<1xf32>) attrs =  {spyre.fn = "reduce_sum"
// CHECK:       %s = linalg.generic {{.*}} ins(%[[SUM32]] : tensor<1xf32>) outs(%{{.*}} : tensor<1xf16>) attrs =  {spyre.fn = "copy"}
// CHECK:       %p = linalg.generic {{.*}} ins(%e, %s : tensor<1x64xf16>, tensor<1xf16>) {{.*}} {spyre.fn = "div"}
// CHECK:       %y = linalg.generic {{.*}} ins(%p : tensor<1x64xf16>) {{.*}} {spyre.fn = "mul", spyre.scalar = 2.000000e+00 : f32}
// CHECK-NOT:   tensor.extract
// CHECK-NOT:   tensor.splat
// CHECK-NOT:   linalg.reduce
// CHECK-LABEL: func.func @matmul_f16_init
// CHECK:       %[[ZERO:.*]] = linalg.fill {spyre.tile = array<i64: 32, 64>} ins(%{{.*}} : f32) outs(%{{.*}} : tensor<32x64xf32>)
// CHECK:       %[[MM:.*]] = linalg.generic {{.*}} ins(%a, %b : tensor<32x64xf16>, tensor<64x64xf16>) outs(%[[ZERO]] : tensor<32x64xf32>) attrs =  {spyre.fn = "matmul"}
// CHECK:       %c = linalg.generic {{.*}} ins(%[[MM]] : tensor<32x64xf32>) outs(%{{.*}} : tensor<32x64xf16>) attrs =  {spyre.fn = "copy"}

// CHECKED: y_ptr: ok
