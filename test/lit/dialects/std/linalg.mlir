// RUN: spyre-opt %s | spyre-opt | filecheck %s
// RUN: spyre-opt %s --print-op-generic | spyre-opt | filecheck %s
// RUN: spyre-opt %s > %t.custom.mlir && spyre-opt %t.custom.mlir | diff %t.custom.mlir -
// RUN: spyre-opt %s --print-op-generic > %t.generic.mlir && spyre-opt %t.generic.mlir --print-op-generic | diff %t.generic.mlir -

// linalg forms from real KTIR kernels that stock xDSL 0.74 rejects; spyrec's linalg dialect
// (dialects/std_ext_linalg.py) parses them and prints them back the upstream way.

// The short form names the combiner op; it stands for `yield op(acc, in)` and prints back
// short. Attributes of the payload op go inside the braces.
// CHECK-LABEL: func.func @reduce_short_form
func.func @reduce_short_form(%x: tensor<4x64xf32>, %init: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK-NEXT: %{{.*}} = linalg.reduce { arith.maxnumf } ins(%{{.*}} : tensor<4x64xf32>) outs(%{{.*}} : tensor<4xf32>) dimensions = [1]
  %max = linalg.reduce { arith.maxnumf } ins(%x : tensor<4x64xf32>) outs(%init : tensor<4xf32>) dimensions = [1]
  // CHECK-NEXT: %{{.*}} = linalg.reduce { arith.addf {fastmath = #arith.fastmath<fast>} } ins(%{{.*}} : tensor<4x64xf32>) outs(%{{.*}} : tensor<4xf32>) dimensions = [1]
  %sum = linalg.reduce { arith.addf {fastmath = #arith.fastmath<fast>} } ins(%x:tensor<4x64xf32>) outs(%init:tensor<4xf32>) dimensions = [1]
  func.return %max, %sum : tensor<4xf32>, tensor<4xf32>
}

// A combiner that is not a single `op(acc, in)` keeps the region form, and a region that is
// one prints short.
// CHECK-LABEL: func.func @reduce_region_form
func.func @reduce_region_form(%x: tensor<4x64xf32>, %init: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK-NEXT: %{{.*}} = linalg.reduce ins(%{{.*}} : tensor<4x64xf32>) outs(%{{.*}} : tensor<4xf32>) dimensions = [1] (%[[IN:.*]]: f32, %[[ACC:.*]]: f32) {
  // CHECK-NEXT:   %[[SQ:.*]] = arith.mulf %[[IN]], %[[IN]] : f32
  // CHECK-NEXT:   %[[NEW:.*]] = arith.addf %[[ACC]], %[[SQ]] : f32
  // CHECK-NEXT:   linalg.yield %[[NEW]] : f32
  // CHECK-NEXT: }
  %squares = linalg.reduce ins(%x : tensor<4x64xf32>) outs(%init : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %sq = arith.mulf %in, %in : f32
      %new = arith.addf %acc, %sq : f32
      linalg.yield %new : f32
    }
  // CHECK-NEXT: linalg.reduce { arith.minnumf } ins
  %min = linalg.reduce ins(%x : tensor<4x64xf32>) outs(%init : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %m = arith.minnumf %acc, %in : f32
      linalg.yield %m : f32
    }
  func.return %squares, %min : tensor<4xf32>, tensor<4xf32>
}

// Several inputs and inits: an argmax carrying (value, index) pairs over dim 1.
// CHECK-LABEL: func.func @reduce_two_inputs
func.func @reduce_two_inputs(%v: tensor<8x16xf32>, %i: tensor<8x16xi64>, %v0: tensor<8xf32>, %i0: tensor<8xi64>) -> (tensor<8xf32>, tensor<8xi64>) {
  // CHECK-NEXT: %{{.*}}, %{{.*}} = linalg.reduce ins(%{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<8x16xi64>) outs(%{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8xi64>) dimensions = [1] (%{{.*}}: f32, %{{.*}}: i64, %{{.*}}: f32, %{{.*}}: i64) {
  %r:2 = linalg.reduce ins(%v, %i : tensor<8x16xf32>, tensor<8x16xi64>) outs(%v0, %i0 : tensor<8xf32>, tensor<8xi64>) dimensions = [1]
    (%in: f32, %idx: i64, %acc: f32, %acc_idx: i64) {
      %better = arith.cmpf ogt, %in, %acc : f32
      %nv = arith.select %better, %in, %acc : f32
      %ni = arith.select %better, %idx, %acc_idx : i64
      linalg.yield %nv, %ni : f32, i64
    }
  func.return %r#0, %r#1 : tensor<8xf32>, tensor<8xi64>
}

// Two results of one generic, written in parentheses after the region.
// CHECK-LABEL: func.func @generic_two_results
func.func @generic_two_results(%x: tensor<8xf32>, %o1: tensor<8xf32>, %o2: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK: } -> (tensor<8xf32>, tensor<8xf32>)
  %a, %b = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%o1, %o2 : tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%in: f32, %out1: f32, %out2: f32):
    %e = math.exp %in : f32
    %n = arith.negf %in : f32
    linalg.yield %e, %n : f32, f32
  } -> (tensor<8xf32>, tensor<8xf32>)
  func.return %a, %b : tensor<8xf32>, tensor<8xf32>
}

// Mixed precision: f16 operands, f32 accumulator (the hidden body extends the operands).
// CHECK-LABEL: func.func @matmuls
func.func @matmuls(%a: tensor<32x64xf16>, %b: tensor<64x16xf16>, %acc: tensor<32x16xf32>, %ba: tensor<4x32x64xf16>, %bb: tensor<4x64x16xf16>, %bacc: tensor<4x32x16xf32>) -> (tensor<32x16xf32>, tensor<4x32x16xf32>) {
  // CHECK-NEXT: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x64xf16>, tensor<64x16xf16>) outs(%{{.*}} : tensor<32x16xf32>) -> tensor<32x16xf32>
  %c = linalg.matmul ins(%a, %b : tensor<32x64xf16>, tensor<64x16xf16>) outs(%acc : tensor<32x16xf32>) -> tensor<32x16xf32>
  // CHECK-NEXT: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<4x32x64xf16>, tensor<4x64x16xf16>) outs(%{{.*}} : tensor<4x32x16xf32>) -> tensor<4x32x16xf32>
  %bc = linalg.batch_matmul ins(%ba, %bb : tensor<4x32x64xf16>, tensor<4x64x16xf16>) outs(%bacc : tensor<4x32x16xf32>) -> tensor<4x32x16xf32>
  func.return %c, %bc : tensor<32x16xf32>, tensor<4x32x16xf32>
}

// CHECK-LABEL: func.func @div
func.func @div(%a: tensor<8xf32>, %b: tensor<8xf32>, %o: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK-NEXT: linalg.div ins(%{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8xf32>) outs(%{{.*}} : tensor<8xf32>) -> tensor<8xf32>
  %q = linalg.div ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%o : tensor<8xf32>) -> tensor<8xf32>
  func.return %q : tensor<8xf32>
}
