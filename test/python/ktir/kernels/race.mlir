// Both tiles store their id to the same element, then load it back and record what they saw
// in out[id]. Nothing orders the two stores, so this is a race: with the cores running in
// lock-step, both stores land before either load and both tiles see the last writer's id.
#cell = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 31 >= 0)>
#outs = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#one = affine_set<(d0, d1) : (d0 == 0, d1 == 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @race(%shared: index, %out: index) attributes {grid = [2, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vs = ktdp.construct_memory_view %shared, sizes: [1, 32], strides: [32, 1] {coordinate_set = #cell, memory_space = #ktdp.memory_space<global>} : memref<1x32xi32>
  %vo = ktdp.construct_memory_view %out, sizes: [2, 32], strides: [32, 1] {coordinate_set = #outs, memory_space = #ktdp.memory_space<global>} : memref<2x32xi32>
  %ts = ktdp.construct_access_tile %vs[0, 0] {access_tile_set = #one, access_tile_order = #id2} : memref<1x32xi32> -> !ktdp.access_tile<1x1xindex>
  %mine = arith.index_cast %id : index to i32
  %value = tensor.splat %mine : tensor<1x1xi32>
  ktdp.store %value, %ts : tensor<1x1xi32>, !ktdp.access_tile<1x1xindex>
  %seen = ktdp.load %ts : !ktdp.access_tile<1x1xindex> -> tensor<1x1xi32>
  %to = ktdp.construct_access_tile %vo[%id, 0] {access_tile_set = #one, access_tile_order = #id2} : memref<2x32xi32> -> !ktdp.access_tile<1x1xindex>
  ktdp.store %seen, %to : tensor<1x1xi32>, !ktdp.access_tile<1x1xindex>
  func.return
}

// The same hand-off done right: tile 0 stores, then produces a token; tile 1 consumes the
// token before it loads. The delivery orders the store before the load: no race.
#solo = affine_set<(g) : (g == 0)>
func.func @ordered_handoff(%shared: index, %out: index) attributes {grid = [2, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %c0 = arith.constant 0 : index
  %vs = ktdp.construct_memory_view %shared, sizes: [1, 32], strides: [32, 1] {coordinate_set = #cell, memory_space = #ktdp.memory_space<global>} : memref<1x32xi32>
  %vo = ktdp.construct_memory_view %out, sizes: [2, 32], strides: [32, 1] {coordinate_set = #outs, memory_space = #ktdp.memory_space<global>} : memref<2x32xi32>
  %ts = ktdp.construct_access_tile %vs[0, 0] {access_tile_set = #one, access_tile_order = #id2} : memref<1x32xi32> -> !ktdp.access_tile<1x1xindex>
  %is_writer = arith.cmpi eq, %id, %c0 : index
  scf.if %is_writer {
    %c42 = arith.constant 42 : i32
    %value = tensor.splat %c42 : tensor<1x1xi32>
    ktdp.store %value, %ts : tensor<1x1xi32>, !ktdp.access_tile<1x1xindex>
  }
  %token = tensor.empty() : tensor<1xi32>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == 0)> -> <(tensor<1xi32>), groups = #solo> {
  ^bb0(%gid: index):
    ktdp.yield_partial %token : tensor<1xi32>
  }
  %got = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 1)> : <(tensor<1xi32>), groups = #solo> -> tensor<1xi32>
  %is_reader = arith.cmpi ne, %id, %c0 : index
  scf.if %is_reader {
    %seen = ktdp.load %ts : !ktdp.access_tile<1x1xindex> -> tensor<1x1xi32>
    %to = ktdp.construct_access_tile %vo[%id, 0] {access_tile_set = #one, access_tile_order = #id2} : memref<2x32xi32> -> !ktdp.access_tile<1x1xindex>
    ktdp.store %seen, %to : tensor<1x1xi32>, !ktdp.access_tile<1x1xindex>
  }
  func.return
}
