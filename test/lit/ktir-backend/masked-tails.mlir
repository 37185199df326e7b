// Masked tails through the back end (docs/ktir.md §7, design note 88): two cores, one
// 1024-lane f32 tile each, over n elements, every tile `ktdp.masked`. A tile running past
// the view moves the view's sticks only (n = 1000: 31.25 sticks, the last one the device
// copy's zero padding) and zero-fills the rest of its LX tile; a tile wholly outside moves
// nothing. The binary matches the interpreter for n = 1000, 1500 and 2048 (no tail), and
// with n left to run time (`--arg n=1..2048`, padded and cropped per call) for n = 300;
// the check fails against a kernel that computes otherwise; unmasked, the tail is refused
// with the mask as the fix.
// RUN: spyrec compile %s --arg n=1000 -o %t.1000.spyre 2>/dev/null
// RUN: spyrec run %t.1000.spyre --check %s --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED %s
// RUN: spyrec inspect %t.1000.spyre --programs | FileCheck --check-prefix=MOVES %s
// RUN: spyrec compile %s --arg n=1500 -o %t.1500.spyre 2>/dev/null
// RUN: spyrec run %t.1500.spyre --check %s --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED %s
// RUN: spyrec compile %s --arg n=2048 -o %t.2048.spyre 2>/dev/null
// RUN: spyrec run %t.2048.spyre --check %s --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED %s
// RUN: spyrec compile %s --arg n=1..2048 -o %t.rt.spyre 2>/dev/null
// RUN: spyrec run %t.rt.spyre --arg n=300 --check %s --numerics ieee 2>&1 | FileCheck --check-prefix=RUNTIME %s
// RUN: sed 's/arith.addf %%x, %%y/arith.subf %%x, %%y/' %s > %t.bug.mlir
// RUN: not spyrec run %t.1000.spyre --check %t.bug.mlir 2>&1 | FileCheck --check-prefix=BUG %s
// RUN: sed 's/, ktdp.masked}/}/' %s > %t.unmasked.mlir
// RUN: not spyrec compile %t.unmasked.mlir --arg n=1000 -o %t.bad.spyre 2>&1 | FileCheck --check-prefix=UNMASKED %s

// CHECKED: c: ok
// core 0 moves 1000 f32 of each input (4000 B, 32 whole sticks), fills lanes 1024.. (none:
// the padding stick reads zeros); core 1's tiles lie wholly outside: no DMA, a zero fill
// of the whole tile, and no store
// MOVES: core 0:
// MOVES: dma.load {{.*}} rows=1 row_bytes=4096 ddr_pitch=4096 lx_pitch=4096
// MOVES: dma.store {{.*}} rows=1 row_bytes=4096
// MOVES: core 1:
// MOVES-NOT: dma.load
// MOVES: sfu.scalar u0 fn=6 {{.*}} rows=1 cols=1024
// MOVES-NOT: dma.store
// RUNTIME: run-time arguments: n=300
// RUNTIME: c: ok
// BUG: c: FAILED
// UNMASKED: error: kernel @add_n, core 0 (x=0, y=0): ktdp.load (%x) loads tile %ta at coordinates [0..1023], outside view %va (memref<1000xf32>), whose extent is [0..999] (dim 0 reaches 1023): {{.*}}; if the lanes past the view's end are a tail meant to be dropped (Triton's masked tail), mask the tile (ktdp.masked, or compile with --masked-tails: docs/ktir.md §7)

#upto = affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0)>
#tile = affine_set<(d0) : (d0 >= 0, -d0 + 1023 >= 0)>
#id = affine_map<(d0) -> (d0)>
module {
  func.func @add_n(%a: index, %b: index, %c: index, %n: i32) attributes {grid = [2, 1]} {
    %c1024 = arith.constant 1024 : index
    %pid = ktdp.get_compute_tile_id : index
    %off = arith.muli %pid, %c1024 : index
    %size = arith.index_cast %n : i32 to index
    %va = ktdp.construct_memory_view %a, sizes: [%size], strides: [1] {
      coordinate_set = #upto, memory_space = #ktdp.memory_space<global>} : memref<?xf32>
    %vb = ktdp.construct_memory_view %b, sizes: [%size], strides: [1] {
      coordinate_set = #upto, memory_space = #ktdp.memory_space<global>} : memref<?xf32>
    %vc = ktdp.construct_memory_view %c, sizes: [%size], strides: [1] {
      coordinate_set = #upto, memory_space = #ktdp.memory_space<global>} : memref<?xf32>
    %ta = ktdp.construct_access_tile %va[%off] {access_tile_set = #tile, access_tile_order = #id, ktdp.masked}
        : memref<?xf32> -> !ktdp.access_tile<1024xindex>
    %tb = ktdp.construct_access_tile %vb[%off] {access_tile_set = #tile, access_tile_order = #id, ktdp.masked}
        : memref<?xf32> -> !ktdp.access_tile<1024xindex>
    %tc = ktdp.construct_access_tile %vc[%off] {access_tile_set = #tile, access_tile_order = #id, ktdp.masked}
        : memref<?xf32> -> !ktdp.access_tile<1024xindex>
    %x = ktdp.load %ta : !ktdp.access_tile<1024xindex> -> tensor<1024xf32>
    %y = ktdp.load %tb : !ktdp.access_tile<1024xindex> -> tensor<1024xf32>
    %s = arith.addf %x, %y : tensor<1024xf32>
    ktdp.store %s, %tc : tensor<1024xf32>, !ktdp.access_tile<1024xindex>
    return
  }
}
