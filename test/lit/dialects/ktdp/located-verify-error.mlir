// RUN: not spyre-opt %s 2>&1 | filecheck %s

// A module that parses but does not verify stops spyre-opt with exit status 1 and the
// location of the op whose verifier failed. xDSL 0.74 keeps no source locations on parsed
// ops: on its own it prints a traceback and the whole module in generic form with the op
// underlined. spyre-opt remembers where each op started and prints, MLIR style,
// `file:line:col: error: 'op' op <message>` and the source line with a caret.

// The load sits inside an scf.for body; its tensor has 32 rows, its tile 16.
func.func @nested_shape_mismatch(%a: index) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %v = ktdp.construct_memory_view %a, sizes: [32, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
  scf.for %i = %c0 to %c2 step %c1 {
    %t = ktdp.construct_access_tile %v[%i * 16, 0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<32x64xf16> -> !ktdp.access_tile<16x64xindex>
    // CHECK: located-verify-error.mlir:[[# @LINE + 3]]:5: error: 'ktdp.load' op load tensor shape 32x64 does not match access tile shape 16x64
    // CHECK-NEXT: {{^    }}%x = ktdp.load %t
    // CHECK-NEXT: {{^    \^}}
    %x = ktdp.load %t : !ktdp.access_tile<16x64xindex> -> tensor<32x64xf16>
  }
  func.return
}
// CHECK-NOT: Traceback
// CHECK-NOT: "builtin.module"
