// RUN: spyre-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Verifier rules of spyrec's extended standard ops. (xDSL 0.74's --verify-diagnostics prints
// the first error of each chunk instead of matching `expected-error`, so CHECK lines match
// that output; see test/lit/dialects/ktdp/invalid.mlir.)

// Reducing dim 1 of 4x64 leaves 4, not 8.
func.func @reduce_init_shape(%x: tensor<4x64xf32>, %init: tensor<8xf32>) {
  %r = linalg.reduce { arith.addf } ins(%x : tensor<4x64xf32>) outs(%init : tensor<8xf32>) dimensions = [1]
  func.return
}
// CHECK: {{^}}init 0 has shape (8,); reducing dims [1] of (4, 64) leaves (4,)

// -----

// The short form stands for one binary op, so it takes one input and one init.
func.func @reduce_short_two_inputs(%x: tensor<4x64xf32>, %y: tensor<4x64xf32>, %a: tensor<4xf32>, %b: tensor<4xf32>) {
  %r:2 = linalg.reduce { arith.addf } ins(%x, %y : tensor<4x64xf32>, tensor<4x64xf32>) outs(%a, %b : tensor<4xf32>, tensor<4xf32>) dimensions = [1]
  func.return
}
// CHECK: {{^ *}}the short form { op } takes exactly one input and one init

// -----

// A mask must have the operands' shape.
func.func @select_mask_shape(%m: tensor<4xi1>, %a: tensor<8xf32>) {
  %s = arith.select %m, %a, %a : tensor<4xi1>, tensor<8xf32>
  func.return
}
// CHECK: {{^}}arith.select condition tensor<4xi1> must be i1 or i1 shaped like tensor<8xf32>

// -----

func.func @cast_shape(%i: tensor<8xi32>) {
  %f = arith.sitofp %i : tensor<8xi32> to tensor<4xf32>
  func.return
}
// CHECK: {{^}}arith.sitofp cannot change the shape: tensor<8xi32> to tensor<4xf32>
