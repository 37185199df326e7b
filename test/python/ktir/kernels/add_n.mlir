// c = a + b over n f32 elements, the views sized by the scalar %n (test_ktir_runtime_args).
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
