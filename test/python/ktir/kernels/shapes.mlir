// A transposing copy: the tile walks a 16x32 block of %in in (d1, d0) order, so its shape
// is 32x16 and it holds the block's transpose.
#in_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#out_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 15 >= 0)>
func.func @transpose(%in: index, %out: index) {
  %vi = ktdp.construct_memory_view %in, sizes: [16, 32], strides: [32, 1] {coordinate_set = #in_set, memory_space = #ktdp.memory_space<global>} : memref<16x32xf32>
  %vo = ktdp.construct_memory_view %out, sizes: [32, 16], strides: [16, 1] {coordinate_set = #out_set, memory_space = #ktdp.memory_space<global>} : memref<32x16xf32>
  %ti = ktdp.construct_access_tile %vi[0, 0] {access_tile_set = #in_set, access_tile_order = affine_map<(d0, d1) -> (d1, d0)>} : memref<16x32xf32> -> !ktdp.access_tile<32x16xindex>
  %to = ktdp.construct_access_tile %vo[0, 0] {access_tile_set = #out_set, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<32x16xf32> -> !ktdp.access_tile<32x16xindex>
  %t = ktdp.load %ti : !ktdp.access_tile<32x16xindex> -> tensor<32x16xf32>
  ktdp.store %t, %to : tensor<32x16xf32>, !ktdp.access_tile<32x16xindex>
  func.return
}

// A row count known only at launch (a multiple of 32, at most 96) sizes the views (binding
// their coordinate sets' s0) and the tile (through symbols(...)); the tile type is ?x64.
#rows = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>
func.func @copy_rows(%n: !ktdp.runtime_arg<index, granularity = 32, upperbound = 96>, %src: index, %dst: index) {
  %m = ktdp.runtime_arg_extract value from %n : !ktdp.runtime_arg<index, granularity = 32, upperbound = 96> -> index
  %vs = ktdp.construct_memory_view %src, sizes: [%m, 64], strides: [64, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<?x64xf16>
  %vd = ktdp.construct_memory_view %dst, sizes: [%m, 64], strides: [64, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<?x64xf16>
  %ts = ktdp.construct_access_tile %vs[0, 0] symbols(%m) {access_tile_set = #rows, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<?x64xf16> -> !ktdp.access_tile<?x64xindex>
  %td = ktdp.construct_access_tile %vd[0, 0] symbols(%m) {access_tile_set = #rows, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<?x64xf16> -> !ktdp.access_tile<?x64xindex>
  %x = ktdp.load %ts : !ktdp.access_tile<?x64xindex> -> tensor<?x64xf16>
  ktdp.store %x, %td : tensor<?x64xf16>, !ktdp.access_tile<?x64xindex>
  func.return
}
