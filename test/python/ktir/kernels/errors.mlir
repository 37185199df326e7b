// Kernels that must fail cleanly.
#view = affine_set<(d0, d1) : (d0 >= 0, -d0 + 95 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

// Tile %id reads row 3 * %id + 3: tile 31 reaches row 96 of a 96-row view.
func.func @out_of_bounds(%a: index) attributes {grid = [32, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %va = ktdp.construct_memory_view %a, sizes: [96, 64], strides: [64, 1] {coordinate_set = #view, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  %ta = ktdp.construct_access_tile %va[%id * 3 + 3, 0] {access_tile_set = #row, access_tile_order = #id2} : memref<96x64xf16> -> !ktdp.access_tile<1x64xindex>
  %x = ktdp.load %ta : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
  func.return
}

// The view holds 96 rows of memory but owns only rows 0..63 of the global tensor.
func.func @outside_coordinate_set(%a: index) {
  %c70 = arith.constant 70 : index
  %va = ktdp.construct_memory_view %a, sizes: [96, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  %ta = ktdp.construct_access_tile %va[%c70, 0] {access_tile_set = #row, access_tile_order = #id2} : memref<96x64xf16> -> !ktdp.access_tile<1x64xindex>
  %x = ktdp.load %ta : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
  func.return
}

// A 1024x1024 f32 scratch buffer is 4 MB; an LX holds 2 MB.
func.func @lx_overflow() {
  %c0 = arith.constant 0 : index
  %scratch = ktdp.construct_memory_view %c0, sizes: [1024, 1024], strides: [1024, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1023 >= 0, d1 >= 0, -d1 + 1023 >= 0)>, memory_space = #ktdp.memory_space<ct_local, ct_id = 0>} : memref<1024x1024xf32>
  func.return
}

// Loading a 4 MB tile: every loaded tile lives in the 2 MB LX.
func.func @tile_overflow(%a: index) {
  %va = ktdp.construct_memory_view %a, sizes: [1024, 1024], strides: [1024, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1023 >= 0, d1 >= 0, -d1 + 1023 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<1024x1024xf32>
  %t = ktdp.construct_access_tile %va[0, 0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1023 >= 0, d1 >= 0, -d1 + 1023 >= 0)>, access_tile_order = #id2} : memref<1024x1024xf32> -> !ktdp.access_tile<1024x1024xindex>
  %x = ktdp.load %t : !ktdp.access_tile<1024x1024xindex> -> tensor<1024x1024xf32>
  func.return
}

// Tile %id views its own row at %a + 64 * %id (an offset from the tile id: only a run
// knows it). Given a 2-row array for a 4-tile grid, tile 2's view starts past the array,
// where the next argument's bytes are.
func.func @row_per_tile(%a: index, %b: index) attributes {grid = [4, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %c64 = arith.constant 64 : index
  %skip = arith.muli %id, %c64 : index
  %row = arith.addi %a, %skip : index
  %va = ktdp.construct_memory_view %row, sizes: [1, 64], strides: [64, 1] {coordinate_set = #row, memory_space = #ktdp.memory_space<global>} : memref<1x64xf16>
  %ta = ktdp.construct_access_tile %va[0, 0] {access_tile_set = #row, access_tile_order = #id2} : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
  %x = ktdp.load %ta : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
  %vb = ktdp.construct_memory_view %b, sizes: [4, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<4x64xf16>
  %tb = ktdp.construct_access_tile %vb[%id, 0] {access_tile_set = #row, access_tile_order = #id2} : memref<4x64xf16> -> !ktdp.access_tile<1x64xindex>
  ktdp.store %x, %tb : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
  func.return
}
