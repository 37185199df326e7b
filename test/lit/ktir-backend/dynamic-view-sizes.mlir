// Dynamic view sizes (`sizes: [%rows]`, as Triton's dynamic kernels write them; design note 83):
// bound at compile time (`--arg n=1024`) the views become static memref<1024xf32>, their
// coordinate sets' symbols bound to the size as the interpreter binds them, and the binary
// matches the interpreter; the check fails against a kernel that computes otherwise. Left
// to run time, a size of views whose tiles are not masked is refused by name, saying to mask
// or bind it (masked: masked-tails.mlir).
// RUN: spyrec compile %s --arg n=1024 --emit=ktir 2>/dev/null | FileCheck --check-prefix=IR %s
// RUN: spyrec compile %s --arg n=1024 -o %t.spyre 2>/dev/null
// RUN: spyrec run %t.spyre --check %s 2>&1 | FileCheck --check-prefix=CHECKED %s
// RUN: sed 's/arith.addf %%x, %%y/arith.subf %%x, %%y/' %s > %t.bug.mlir
// RUN: not spyrec run %t.spyre --check %t.bug.mlir 2>&1 | FileCheck --check-prefix=BUG %s
// RUN: not spyrec compile %s --arg n=? -o %t.rt.spyre 2>&1 | FileCheck --check-prefix=RUNTIME %s

// IR: ktdp.construct_memory_view %a, sizes: [1024], strides: [1]
// IR-SAME: memref<1024xf32>
// CHECKED: kernel constants: n=1024
// CHECKED: c: ok
// BUG: c: FAILED
// RUNTIME: error: {{.*}}@add_n: --arg n: it sizes the view of %a and ktdp.construct_access_tile (%ta) accesses it unmasked, where the lanes past the run-time value would be the host's zero padding rather than the error the kernel makes; mask the kernel's tiles (compile with --masked-tails, docs/ktir.md §7); bind it at compile time instead (spyrec compile ... --arg n=VALUE)

#upto = affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0)>
#tile = affine_set<(d0) : (d0 >= 0, -d0 + 1023 >= 0)>
#id = affine_map<(d0) -> (d0)>
module {
  func.func @add_n(%a: index, %b: index, %c: index, %n: i32) attributes {grid = [1, 1]} {
    %c0 = arith.constant 0 : index
    %rows = arith.index_cast %n : i32 to index
    %va = ktdp.construct_memory_view %a, sizes: [%rows], strides: [1] {
      coordinate_set = #upto, memory_space = #ktdp.memory_space<global>} : memref<?xf32>
    %vb = ktdp.construct_memory_view %b, sizes: [%rows], strides: [1] {
      coordinate_set = #upto, memory_space = #ktdp.memory_space<global>} : memref<?xf32>
    %vc = ktdp.construct_memory_view %c, sizes: [%rows], strides: [1] {
      coordinate_set = #upto, memory_space = #ktdp.memory_space<global>} : memref<?xf32>
    %ta = ktdp.construct_access_tile %va[%c0] {access_tile_set = #tile, access_tile_order = #id}
        : memref<?xf32> -> !ktdp.access_tile<1024xindex>
    %tb = ktdp.construct_access_tile %vb[%c0] {access_tile_set = #tile, access_tile_order = #id}
        : memref<?xf32> -> !ktdp.access_tile<1024xindex>
    %tc = ktdp.construct_access_tile %vc[%c0] {access_tile_set = #tile, access_tile_order = #id}
        : memref<?xf32> -> !ktdp.access_tile<1024xindex>
    %x = ktdp.load %ta : !ktdp.access_tile<1024xindex> -> tensor<1024xf32>
    %y = ktdp.load %tb : !ktdp.access_tile<1024xindex> -> tensor<1024xf32>
    %s = arith.addf %x, %y : tensor<1024xf32>
    ktdp.store %s, %tc : tensor<1024xf32>, !ktdp.access_tile<1024xindex>
    return
  }
}
