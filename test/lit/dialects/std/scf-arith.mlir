// RUN: spyre-opt %s | spyre-opt | filecheck %s
// RUN: spyre-opt %s --print-op-generic | spyre-opt | filecheck %s
// RUN: spyre-opt %s > %t.custom.mlir && spyre-opt %t.custom.mlir | diff %t.custom.mlir -

// scf and arith spellings from real KTIR kernels that stock xDSL 0.74 rejects or mistypes.

// A single loop-carried value may be typed without parentheses (`-> tensor<..>`); it prints
// with them. The optional `: index` after the bounds parses too.
// CHECK-LABEL: func.func @for_bare_result
func.func @for_bare_result(%init: tensor<1x64xf16>, %step: tensor<1x64xf16>) -> tensor<1x64xf16> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  // CHECK: %{{.*}} = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<1x64xf16>) {
  // CHECK-NEXT: %[[N:.*]] = arith.addf %[[ACC]], %{{.*}} : tensor<1x64xf16>
  // CHECK-NEXT: scf.yield %[[N]] : tensor<1x64xf16>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %init) -> tensor<1x64xf16> {
    %n = arith.addf %acc, %step : tensor<1x64xf16>
    scf.yield %n : tensor<1x64xf16>
  }
  // CHECK: scf.for
  %r2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %r) -> (tensor<1x64xf16>) : index {
    scf.yield %acc : tensor<1x64xf16>
  }
  func.return %r2 : tensor<1x64xf16>
}

// Comparisons of tensors give tensors of i1, and select takes such a mask (upstream syntax
// `: mask-type, value-type`). xDSL alone types the compare as a scalar i1.
// CHECK-LABEL: func.func @masked_max
func.func @masked_max(%a: tensor<4x64xf16>, %b: tensor<4x64xf16>, %i: tensor<4x64xi32>, %j: tensor<4x64xi32>) -> tensor<4x64xf16> {
  // CHECK-NEXT: %[[M:.*]] = arith.cmpf ogt, %{{.*}}, %{{.*}} : tensor<4x64xf16>
  %m = arith.cmpf ogt, %a, %b : tensor<4x64xf16>
  // CHECK-NEXT: %[[K:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : tensor<4x64xi32>
  %k = arith.cmpi slt, %i, %j : tensor<4x64xi32>
  // CHECK-NEXT: %[[S:.*]] = arith.select %[[M]], %{{.*}}, %{{.*}} : tensor<4x64xi1>, tensor<4x64xf16>
  %s = arith.select %m, %a, %b : tensor<4x64xi1>, tensor<4x64xf16>
  // CHECK-NEXT: arith.select %[[K]], %[[S]], %{{.*}} : tensor<4x64xi1>, tensor<4x64xf16>
  %t = arith.select %k, %s, %a : tensor<4x64xi1>, tensor<4x64xf16>
  func.return %t : tensor<4x64xf16>
}

// CHECK-LABEL: func.func @tensor_casts
func.func @tensor_casts(%i: tensor<8xi32>, %f: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xi32>, tensor<8xindex>, tensor<8xf32>) {
  // CHECK-NEXT: arith.sitofp %{{.*}} : tensor<8xi32> to tensor<8xf32>
  %a = arith.sitofp %i : tensor<8xi32> to tensor<8xf32>
  // CHECK-NEXT: arith.fptosi %{{.*}} : tensor<8xf32> to tensor<8xi32>
  %b = arith.fptosi %f : tensor<8xf32> to tensor<8xi32>
  // CHECK-NEXT: arith.index_cast %{{.*}} : tensor<8xi32> to tensor<8xindex>
  %c = arith.index_cast %i : tensor<8xi32> to tensor<8xindex>
  // CHECK-NEXT: arith.uitofp %{{.*}} : tensor<8xi32> to tensor<8xf32>
  %d = arith.uitofp %i : tensor<8xi32> to tensor<8xf32>
  func.return %a, %b, %c, %d : tensor<8xf32>, tensor<8xi32>, tensor<8xindex>, tensor<8xf32>
}

// Scalar forms keep working.
// CHECK-LABEL: func.func @scalars
func.func @scalars(%x: f32, %y: f32, %n: i32) -> (f32, index) {
  // CHECK-NEXT: %[[C:.*]] = arith.cmpf olt, %{{.*}}, %{{.*}} : f32
  %c = arith.cmpf olt, %x, %y : f32
  // CHECK-NEXT: arith.select %[[C]], %{{.*}}, %{{.*}} : f32
  %s = arith.select %c, %x, %y : f32
  // CHECK-NEXT: arith.index_cast %{{.*}} : i32 to index
  %i = arith.index_cast %n : i32 to index
  func.return %s, %i : f32, index
}
