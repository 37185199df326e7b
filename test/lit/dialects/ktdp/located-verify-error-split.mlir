// RUN: not spyre-opt %s --split-input-file 2>&1 | filecheck %s

// Under --split-input-file each chunk is parsed on its own; a verifier error in a later
// chunk still reports its line in the whole file.
func.func @fine(%a: index) -> memref<64xf16> {
  %v = ktdp.construct_memory_view %a, sizes: [64], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<64xf16>
  func.return %v : memref<64xf16>
}

// -----

// spyrec's own check (the reference dialect lacks it): a static memref extent must equal the
// static size, and 32 is not 64.
func.func @memref_extent_mismatch(%a: index) -> memref<32xf16> {
  // CHECK: located-verify-error-split.mlir:[[# @LINE + 1]]:3: error: 'ktdp.construct_memory_view' op
  %v = ktdp.construct_memory_view %a, sizes: [64], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<32xf16>
  func.return %v : memref<32xf16>
}
// CHECK-NOT: Traceback
