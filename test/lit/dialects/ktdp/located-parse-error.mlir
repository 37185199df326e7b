// RUN: not spyre-opt %s 2>&1 | filecheck %s

// Malformed KTIR stops spyre-opt with exit status 1 and an MLIR-style located message:
// `file:line:col: error: ...`, the source line, a caret under the offending token, and no
// Python traceback. Here an indirect access tile uses RFC 0682's errata subscript syntax,
// `/` where the dialect wants `floordiv`: the error points at the `/`, column 97 of its line.
func.func @rfc_subscript(%x: index, %idx: index) {
  %vx = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %vi = ktdp.construct_memory_view %idx, sizes: [4], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<4xi32>
  // CHECK: located-parse-error.mlir:[[# @LINE + 1]]:97: error: '/' is not an affine operator; KTIR spells integer division 'floordiv'
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i, %j) %vx[ind(%vi[%i]), (%j / 2)] {variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x64xf16>, memref<4xi32> -> !ktdp.access_tile<4x64xindex>
  func.return
}
// CHECK-NEXT: %t = ktdp.construct_indirect_access_tile
// CHECK-NEXT: {{^ +}}^
// CHECK-NOT: Traceback
