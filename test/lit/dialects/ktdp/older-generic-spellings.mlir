// RUN: spyre-opt %s --print-op-generic | filecheck %s
// RUN: spyre-opt %s --print-op-generic | spyre-opt --print-op-generic | filecheck %s

// Generic spellings spyrec printed before it matched upstream MLIR and the reference dialect
// (docs/ktir.md §1, design note 78): they still parse, and print in the current spelling.

// linalg.reduce had operandSegmentSizes; upstream's has none (as many inputs as inits).
// CHECK-LABEL: "func.func"() <{sym_name = "reduce_rows"
// CHECK: "linalg.reduce"(%{{.*}}, %{{.*}}) <{dimensions = array<i64: 1>}> ({
func.func @reduce_rows(%x: tensor<4x64xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = "linalg.reduce"(%x, %init) <{dimensions = array<i64: 1>, operandSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }) : (tensor<4x64xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// runtime_arg_extract's choice was the string property `field`; it is the i32 enum `kind`.
// CHECK-LABEL: "func.func"() <{sym_name = "extract"
// CHECK: "ktdp.runtime_arg_extract"(%{{.*}}) <{kind = 0 : i32}>
// CHECK: "ktdp.runtime_arg_extract"(%{{.*}}) <{kind = 1 : i32}>
// CHECK: "ktdp.runtime_arg_extract"(%{{.*}}) <{kind = 2 : i32}> {note}
func.func @extract(%a: !ktdp.runtime_arg<index, granularity = 32, upperbound = 96>) -> (index, index, index) {
  %v = "ktdp.runtime_arg_extract"(%a) <{field = "value"}> : (!ktdp.runtime_arg<index, granularity = 32, upperbound = 96>) -> index
  %g = "ktdp.runtime_arg_extract"(%a) <{field = "granularity"}> : (!ktdp.runtime_arg<index, granularity = 32, upperbound = 96>) -> index
  %u = "ktdp.runtime_arg_extract"(%a) <{field = "upperbound"}> {note} : (!ktdp.runtime_arg<index, granularity = 32, upperbound = 96>) -> index
  func.return %v, %g, %u : index, index, index
}
