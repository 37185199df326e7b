// c = a + b over 8192 f32 elements on a [32, 1] grid. Tile %id owns elements
// 256 * %id .. 256 * %id + 255 and walks them in two 128-element chunks (one 512-byte DMA of
// four 128-byte sticks each), so the kernel is a 1-D view, a loop and a one-dim tile set.
#all = affine_set<(d0) : (d0 >= 0, -d0 + 8191 >= 0)>
#chunk = affine_set<(d0) : (d0 >= 0, -d0 + 127 >= 0)>
#id1 = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @vector_add
func.func @vector_add(%a: index, %b: index, %c: index) attributes {grid = [32, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %va = ktdp.construct_memory_view %a, sizes: [8192], strides: [1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<8192xf32>
  %vb = ktdp.construct_memory_view %b, sizes: [8192], strides: [1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<8192xf32>
  %vc = ktdp.construct_memory_view %c, sizes: [8192], strides: [1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<8192xf32>
  scf.for %off = %c0 to %c256 step %c128 {
    %ta = ktdp.construct_access_tile %va[%id * 256 + %off] {access_tile_set = #chunk, access_tile_order = #id1} : memref<8192xf32> -> !ktdp.access_tile<128xindex>
    %tb = ktdp.construct_access_tile %vb[%id * 256 + %off] {access_tile_set = #chunk, access_tile_order = #id1} : memref<8192xf32> -> !ktdp.access_tile<128xindex>
    %tc = ktdp.construct_access_tile %vc[%id * 256 + %off] {access_tile_set = #chunk, access_tile_order = #id1} : memref<8192xf32> -> !ktdp.access_tile<128xindex>
    %xa = ktdp.load %ta : !ktdp.access_tile<128xindex> -> tensor<128xf32>
    %xb = ktdp.load %tb : !ktdp.access_tile<128xindex> -> tensor<128xf32>
    %sum = arith.addf %xa, %xb : tensor<128xf32>
    ktdp.store %sum, %tc : tensor<128xf32>, !ktdp.access_tile<128xindex>
  }
  func.return
}
