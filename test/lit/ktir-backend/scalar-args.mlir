// Scalar arguments bound at compile time (`--arg NAME=VALUE`, as Triton's constexprs): the
// kernel loses them from its signature, holds them as constants, and the loop bound and
// the splat immediate they determine are folded; unbound, misnamed or pointer arguments are
// refused by name (pointers and values: test_ktir_scalars.py); the binary records the values and `run --check` passes them again.
// RUN: spyrec compile %s --arg ROWS=16 --arg alpha=0.5 --emit=ktir 2>/dev/null | FileCheck %s
// RUN: not spyrec compile %s --arg alpha=0.5 --emit=ktir 2>&1 | FileCheck --check-prefix=UNBOUND %s
// RUN: not spyrec compile %s --arg ROWS=16 --arg alpha=0.5 --arg BLOCK=4 --emit=ktir 2>&1 | FileCheck --check-prefix=NAME %s
// RUN: spyrec compile %s --arg ROWS=8 --arg alpha=0.25 -o %t.spyre 2>/dev/null
// RUN: spyrec run %t.spyre --check %s --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED %s

// CHECK:      func.func @scale_add(%a: index, %b: index, %c: index)
// CHECK-NEXT:   %ROWS = arith.constant 16 : index
// CHECK-NEXT:   %alpha = arith.constant 5.000000e-01 : f32
// CHECK:        arith.constant 5.000000e-01 : f16
// CHECK:        scf.for %i = %c0 to %ROWS step %c1 {
// CHECK:          spyre.fn = "mul", spyre.scalar = 5.000000e-01 : f32

// UNBOUND: error: {{.*}}@scale_add: argument %ROWS is a scalar (it is not the offset of a memory view); give its value at compile time: spyrec compile ... --arg ROWS=VALUE
// NAME: error: {{.*}}@scale_add: --arg BLOCK: the kernel has no argument %BLOCK; its arguments are %a, %b, %c, %ROWS, %alpha
// CHECKED: kernel constants: ROWS=8, alpha=0.25
// CHECKED: c: ok

#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @scale_add(%a: index, %b: index, %c: index, %ROWS: index, %alpha: f32)
      attributes {grid = [4, 1]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pid = ktdp.get_compute_tile_id : index
    %first = arith.muli %pid, %ROWS : index
    %va = ktdp.construct_memory_view %a, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %vb = ktdp.construct_memory_view %b, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %vc = ktdp.construct_memory_view %c, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %scale = arith.truncf %alpha : f32 to f16
    %splat = tensor.splat %scale : tensor<1x64xf16>
    scf.for %i = %c0 to %ROWS step %c1 {
      %r = arith.addi %first, %i : index
      %ta = ktdp.construct_access_tile %va[%r, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
      %tb = ktdp.construct_access_tile %vb[%r, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
      %tc = ktdp.construct_access_tile %vc[%r, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
      %x = ktdp.load %ta : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
      %y = ktdp.load %tb : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
      %m = arith.mulf %x, %splat : tensor<1x64xf16>
      %s = arith.addf %m, %y : tensor<1x64xf16>
      ktdp.store %s, %tc : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
