// 32 tiles each copy 4 rows starting at row 3 * id: tile 31's rows 93..96 pass the view's
// last row, 95 (the rows overlap too, but every other tile stays inside the view).
#v = affine_set<(d0, d1) : (d0 >= 0, -d0 + 95 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @last_core(%x: index, %y: index) attributes {grid = [32, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vx = ktdp.construct_memory_view %x, sizes: [96, 64], strides: [64, 1] {coordinate_set = #v, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [128, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<128x64xf16>
  %tx = ktdp.construct_access_tile %vx[%id * 3, 0] {access_tile_set = #rows, access_tile_order = #id2} : memref<96x64xf16> -> !ktdp.access_tile<4x64xindex>
  %ty = ktdp.construct_access_tile %vy[%id * 4, 0] {access_tile_set = #rows, access_tile_order = #id2} : memref<128x64xf16> -> !ktdp.access_tile<4x64xindex>
  %t = ktdp.load %tx : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf16>
  ktdp.store %t, %ty : tensor<4x64xf16>, !ktdp.access_tile<4x64xindex>
  func.return
}
