// RUN: spyre-opt %s -p spyre-legalize-ktir | filecheck %s
// RUN: not spyre-opt %S/Inputs/ktir-bounds-last-core.mlir -p spyre-legalize-ktir 2>&1 | filecheck %s --check-prefix=LAST
// RUN: not spyre-opt %S/Inputs/ktir-bounds-k-loop.mlir -p spyre-legalize-ktir 2>&1 | filecheck %s --check-prefix=LOOP
// RUN: not spyre-opt %S/Inputs/ktir-bounds-store.mlir -p spyre-legalize-ktir 2>&1 | filecheck %s --check-prefix=STORE

// spyre-legalize-ktir checks every core's loads and stores against their views, for every
// iteration of static loops (passes/ktir/ktir_bounds.py): a tile past its view would become a
// DMA that reads or writes another tensor's bytes.

// The last of 32 tiles reads rows 93..96 of a 96-row view.
// LAST: error: kernel @last_core, core 31 (x=31, y=0): ktdp.load (%t) loads tile %tx at coordinates [93..96, 0..63], outside view %vx (memref<96x64xf16>), whose extent is [0..95, 0..63] (dim 0 reaches 96): its DMA would read past the tensor, another tensor's bytes; keep every core's tiles within their view

// A K loop one step too long: the first core and iteration to leave A's view is named.
// LOOP: error: kernel @k_loop, core 0 (x=0, y=0) at %k = 128: ktdp.load (%ablk) loads tile %ta at coordinates [0..31, 128..191], outside view %va (memref<64x128xf16>), whose extent is [0..63, 0..127] (dim 1 reaches 191)

// A store past the end of the output.
// STORE: error: kernel @shifted_store, core 3 (x=3, y=0): ktdp.store of %e stores tile %ty at coordinates [56..71, 0..63], outside view %vy (memref<64x64xf32>), whose extent is [0..63, 0..63] (dim 0 reaches 71): its DMA would write past the tensor

// In bounds: the tile of the last core that would leave the view is guarded by scf.if on
// the tile id, and a view whose coordinate set is a global block (rows 64..159 of a
// distributed tensor) is addressed in global coordinates, as KTIR defines them (the
// compiler's frontend takes only views whose sets start at 0, but the check follows KTIR).
// The same kernel with y's set from 0 compiles and matches the interpreter
// (test_compile_ktir.py).
// CHECK-LABEL: func.func @guarded
// CHECK:       scf.if
// CHECK:         ktdp.load
#v = affine_set<(d0, d1) : (d0 >= 0, -d0 + 95 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#upper = affine_set<(d0, d1) : (d0 >= 64, -d0 + 159 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @guarded(%x: index, %y: index) attributes {grid = [32, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %c24 = arith.constant 24 : index
  %vx = ktdp.construct_memory_view %x, sizes: [96, 64], strides: [64, 1] {coordinate_set = #v, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [96, 64], strides: [64, 1] {coordinate_set = #upper, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  %inside = arith.cmpi ult, %id, %c24 : index
  scf.if %inside {
    %tx = ktdp.construct_access_tile %vx[%id * 4, 0] {access_tile_set = #rows, access_tile_order = #id2} : memref<96x64xf16> -> !ktdp.access_tile<4x64xindex>
    %t = ktdp.load %tx : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf16>
    %ty = ktdp.construct_access_tile %vy[%id * 4 + 64, 0] {access_tile_set = #rows, access_tile_order = #id2} : memref<96x64xf16> -> !ktdp.access_tile<4x64xindex>
    ktdp.store %t, %ty : tensor<4x64xf16>, !ktdp.access_tile<4x64xindex>
  }
  func.return
}
