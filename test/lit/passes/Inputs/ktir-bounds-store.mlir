// Each of 4 tiles writes a 16-row block at row 16 * id + 8 of a 64-row output: tile 3's
// rows 56..71 pass the last row, 63. The loads are in bounds.
#v = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#blk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @shifted_store(%x: index, %y: index) attributes {grid = [4, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vx = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [64, 1] {coordinate_set = #v, memory_space = #ktdp.memory_space<global>} : memref<64x64xf32>
  %vy = ktdp.construct_memory_view %y, sizes: [64, 64], strides: [64, 1] {coordinate_set = #v, memory_space = #ktdp.memory_space<global>} : memref<64x64xf32>
  %tx = ktdp.construct_access_tile %vx[%id * 16, 0] {access_tile_set = #blk, access_tile_order = #id2} : memref<64x64xf32> -> !ktdp.access_tile<16x64xindex>
  %ty = ktdp.construct_access_tile %vy[%id * 16 + 8, 0] {access_tile_set = #blk, access_tile_order = #id2} : memref<64x64xf32> -> !ktdp.access_tile<16x64xindex>
  %t = ktdp.load %tx : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf32>
  %e = math.exp %t : tensor<16x64xf32>
  ktdp.store %e, %ty : tensor<16x64xf32>, !ktdp.access_tile<16x64xindex>
  func.return
}
