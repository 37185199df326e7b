// All-reduce across 4 tiles: tile i loads row i of a 4x64 f32 tensor, the group of all 4
// tiles sums the rows, and every tile writes the total to its row of %out.
#rows4 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#quad = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#one_group = affine_set<(g) : (g == 0)>
func.func @all_reduce(%in: index, %out: index) attributes {grid = [4, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vi = ktdp.construct_memory_view %in, sizes: [4, 64], strides: [64, 1] {coordinate_set = #rows4, memory_space = #ktdp.memory_space<global>} : memref<4x64xf32>
  %vo = ktdp.construct_memory_view %out, sizes: [4, 64], strides: [64, 1] {coordinate_set = #rows4, memory_space = #ktdp.memory_space<global>} : memref<4x64xf32>
  %ti = ktdp.construct_access_tile %vi[%id, 0] {access_tile_set = #row, access_tile_order = #id2} : memref<4x64xf32> -> !ktdp.access_tile<1x64xindex>
  %mine = ktdp.load %ti : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf32>
  %zero = arith.constant 0.0 : f32
  %identity = tensor.splat %zero : tensor<1x64xf32>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #quad -> <(tensor<1x64xf32>), groups = #one_group> {
  ^bb0(%gid: index):
    ktdp.yield_partial %mine : tensor<1x64xf32>
  }
  %total = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #quad, identity(%identity : tensor<1x64xf32>) : <(tensor<1x64xf32>), groups = #one_group> -> tensor<1x64xf32> {
  ^bb0(%lhs: tensor<1x64xf32>, %rhs: tensor<1x64xf32>):
    %s = arith.addf %lhs, %rhs : tensor<1x64xf32>
    ktdp.yield_reduced %s : tensor<1x64xf32>
  }
  %to = ktdp.construct_access_tile %vo[%id, 0] {access_tile_set = #row, access_tile_order = #id2} : memref<4x64xf32> -> !ktdp.access_tile<1x64xindex>
  ktdp.store %total, %to : tensor<1x64xf32>, !ktdp.access_tile<1x64xindex>
  func.return
}

// Two groups of two tiles each reduce to their first tile (max), and tile 2g broadcasts the
// group's maximum back with inter_tile_consume; every tile then writes it to its row.
#pair = affine_set<(i)[g] : (i - 2 * g >= 0, -i + 2 * g + 1 >= 0)>
#first = affine_set<(i)[g] : (i - 2 * g == 0)>
#two_groups = affine_set<(g) : (g >= 0, -g + 1 >= 0)>
func.func @reduce_then_broadcast(%in: index, %out: index) attributes {grid = [4, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vi = ktdp.construct_memory_view %in, sizes: [4, 64], strides: [64, 1] {coordinate_set = #rows4, memory_space = #ktdp.memory_space<global>} : memref<4x64xf32>
  %vo = ktdp.construct_memory_view %out, sizes: [4, 64], strides: [64, 1] {coordinate_set = #rows4, memory_space = #ktdp.memory_space<global>} : memref<4x64xf32>
  %ti = ktdp.construct_access_tile %vi[%id, 0] {access_tile_set = #row, access_tile_order = #id2} : memref<4x64xf32> -> !ktdp.access_tile<1x64xindex>
  %mine = ktdp.load %ti : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %identity = tensor.splat %ninf : tensor<1x64xf32>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #pair -> <(tensor<1x64xf32>), groups = #two_groups> {
  ^bb0(%gid: index):
    ktdp.yield_partial %mine : tensor<1x64xf32>
  }
  %max = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #first, identity(%identity : tensor<1x64xf32>) : <(tensor<1x64xf32>), groups = #two_groups> -> tensor<1x64xf32> {
  ^bb0(%lhs: tensor<1x64xf32>, %rhs: tensor<1x64xf32>):
    %m = arith.maxnumf %lhs, %rhs : tensor<1x64xf32>
    ktdp.yield_reduced %m : tensor<1x64xf32>
  }
  // Only tiles 0 and 2 hold %max; they alone produce the broadcast.
  %g = ktdp.inter_tile_produce producer_tiles_per_group = #first -> <(tensor<1x64xf32>), groups = #two_groups> {
  ^bb0(%gid: index):
    ktdp.yield_partial %max : tensor<1x64xf32>
  }
  %all = ktdp.inter_tile_consume(%g) consumer_tiles_per_group = #pair : <(tensor<1x64xf32>), groups = #two_groups> -> tensor<1x64xf32>
  %to = ktdp.construct_access_tile %vo[%id, 0] {access_tile_set = #row, access_tile_order = #id2} : memref<4x64xf32> -> !ktdp.access_tile<1x64xindex>
  ktdp.store %all, %to : tensor<1x64xf32>, !ktdp.access_tile<1x64xindex>
  func.return
}

// Tile 0 is the only producer but skips the produce op; the consumers wait forever.
func.func @deadlock(%in: index) attributes {grid = [2, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %v = tensor.splat %zero : tensor<1x64xf32>
  %busy = arith.cmpi ne, %id, %c0 : index
  scf.if %busy {
    %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == 0)> -> <(tensor<1x64xf32>), groups = #one_group> {
    ^bb0(%gid: index):
      ktdp.yield_partial %v : tensor<1x64xf32>
    }
    %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 1)> : <(tensor<1x64xf32>), groups = #one_group> -> tensor<1x64xf32>
  }
  func.return
}
