// A 128x64 f16 tensor kept in three places: rows 0..95 in LPDDR (%hbm), rows 96..111 in the
// LX of tile 0 (row-major) and rows 112..127 in the LX of tile 1 (column-major: strides
// [1, 16]). Coordinate sets are global; a part's local coordinate is global - its first row.
// Each of 2 tiles copies its share of %src into the distributed view (48 LPDDR rows and its
// own 16 LX rows), then reads the same rows back through the view and writes them to %dst.
#global = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#hbm_rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 95 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#lx0_rows = affine_set<(d0, d1) : (d0 - 96 >= 0, -d0 + 111 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#lx1_rows = affine_set<(d0, d1) : (d0 - 112 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows48 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 47 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows16 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @distributed_copy(%src: index, %hbm: index, %dst: index) attributes {grid = [2, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %c0 = arith.constant 0 : index
  %vs = ktdp.construct_memory_view %src, sizes: [128, 64], strides: [64, 1] {coordinate_set = #global, memory_space = #ktdp.memory_space<global>} : memref<128x64xf16>
  %vd = ktdp.construct_memory_view %dst, sizes: [128, 64], strides: [64, 1] {coordinate_set = #global, memory_space = #ktdp.memory_space<global>} : memref<128x64xf16>
  %p0 = ktdp.construct_memory_view %hbm, sizes: [96, 64], strides: [64, 1] {coordinate_set = #hbm_rows, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  %p1 = ktdp.construct_memory_view %c0, sizes: [16, 64], strides: [64, 1] {coordinate_set = #lx0_rows, memory_space = #ktdp.memory_space<ct_local, ct_id = 0>} : memref<16x64xf16>
  %p2 = ktdp.construct_memory_view %c0, sizes: [16, 64], strides: [1, 16] {coordinate_set = #lx1_rows, memory_space = #ktdp.memory_space<ct_local, ct_id = 1>} : memref<16x64xf16>
  %dv = ktdp.construct_distributed_memory_view(%p0, %p1, %p2 : memref<96x64xf16>, memref<16x64xf16>, memref<16x64xf16>) : memref<128x64xf16>
  %s48 = ktdp.construct_access_tile %vs[%id * 48, 0] {access_tile_set = #rows48, access_tile_order = #id2} : memref<128x64xf16> -> !ktdp.access_tile<48x64xindex>
  %w48 = ktdp.construct_access_tile %dv[%id * 48, 0] {access_tile_set = #rows48, access_tile_order = #id2} : memref<128x64xf16> -> !ktdp.access_tile<48x64xindex>
  %d48 = ktdp.construct_access_tile %vd[%id * 48, 0] {access_tile_set = #rows48, access_tile_order = #id2} : memref<128x64xf16> -> !ktdp.access_tile<48x64xindex>
  %s16 = ktdp.construct_access_tile %vs[%id * 16 + 96, 0] {access_tile_set = #rows16, access_tile_order = #id2} : memref<128x64xf16> -> !ktdp.access_tile<16x64xindex>
  %w16 = ktdp.construct_access_tile %dv[%id * 16 + 96, 0] {access_tile_set = #rows16, access_tile_order = #id2} : memref<128x64xf16> -> !ktdp.access_tile<16x64xindex>
  %d16 = ktdp.construct_access_tile %vd[%id * 16 + 96, 0] {access_tile_set = #rows16, access_tile_order = #id2} : memref<128x64xf16> -> !ktdp.access_tile<16x64xindex>
  %a = ktdp.load %s48 : !ktdp.access_tile<48x64xindex> -> tensor<48x64xf16>
  ktdp.store %a, %w48 : tensor<48x64xf16>, !ktdp.access_tile<48x64xindex>
  %b = ktdp.load %s16 : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
  ktdp.store %b, %w16 : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
  %a2 = ktdp.load %w48 : !ktdp.access_tile<48x64xindex> -> tensor<48x64xf16>
  ktdp.store %a2, %d48 : tensor<48x64xf16>, !ktdp.access_tile<48x64xindex>
  %b2 = ktdp.load %w16 : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
  ktdp.store %b2, %d16 : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
  func.return
}
