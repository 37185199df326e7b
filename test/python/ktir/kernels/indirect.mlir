// Indirect access tiles through the back end (design note 95): gathers and scatters by
// index as dma.gather / dma.scatter. Written for spyrec's tests.
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#t64x64 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#t32x64 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#t16x64 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#t8x64 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#i2x16 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#i16 = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>
#i4 = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>

// Embedding rows by int64 ids, 2-D: out[16 x + r, :] = table[ids[x, r], :] on a [2, 1] grid.
func.func @embed_i64(%table: index, %ids: index, %out: index) attributes {grid = [2, 1]} {
  %x = ktdp.get_compute_tile_id : index
  %c16 = arith.constant 16 : index
  %row = arith.muli %x, %c16 : index
  %vt = ktdp.construct_memory_view %table, sizes: [64, 64], strides: [64, 1] {coordinate_set = #t64x64, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %vi = ktdp.construct_memory_view %ids, sizes: [2, 16], strides: [16, 1] {coordinate_set = #i2x16, memory_space = #ktdp.memory_space<global>} : memref<2x16xi64>
  %vo = ktdp.construct_memory_view %out, sizes: [32, 64], strides: [64, 1] {coordinate_set = #t32x64, memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
  %rows = ktdp.construct_indirect_access_tile intermediate_variables(%r, %c) %vt[ind(%vi[%x, %r]), (%c)] {variables_space_set = #t16x64, variables_space_order = #id2} : memref<64x64xf16>, memref<2x16xi64> -> !ktdp.access_tile<16x64xindex>
  %data = ktdp.load %rows : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
  %to = ktdp.construct_access_tile %vo[%row, 0] {access_tile_set = #t16x64, access_tile_order = #id2} : memref<32x64xf16> -> !ktdp.access_tile<16x64xindex>
  ktdp.store %data, %to : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
  func.return
}

// Scatter by int32 index into a table updated in place: table[idx[8 x + r], :] = vals[8 x + r, :]
// on a [2, 1] grid; rows no index names keep the caller's values.
func.func @scatter_rows(%vals: index, %idx: index, %table: index) attributes {grid = [2, 1]} {
  %x = ktdp.get_compute_tile_id : index
  %c8 = arith.constant 8 : index
  %row = arith.muli %x, %c8 : index
  %vt = ktdp.construct_memory_view %table, sizes: [64, 64], strides: [64, 1] {coordinate_set = #t64x64, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %vi = ktdp.construct_memory_view %idx, sizes: [16], strides: [1] {coordinate_set = #i16, memory_space = #ktdp.memory_space<global>} : memref<16xi32>
  %vv = ktdp.construct_memory_view %vals, sizes: [16, 64], strides: [64, 1] {coordinate_set = #t16x64, memory_space = #ktdp.memory_space<global>} : memref<16x64xf16>
  %from = ktdp.construct_access_tile %vv[%row, 0] {access_tile_set = #t8x64, access_tile_order = #id2} : memref<16x64xf16> -> !ktdp.access_tile<8x64xindex>
  %data = ktdp.load %from : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
  %slots = ktdp.construct_indirect_access_tile intermediate_variables(%r, %c) %vt[ind(%vi[%row + %r]), (%c)] {variables_space_set = #t8x64, variables_space_order = #id2} : memref<64x64xf16>, memref<16xi32> -> !ktdp.access_tile<8x64xindex>
  ktdp.store %data, %slots : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
  func.return
}

// A strided block per index, computed on: core g reads x[idx[g], 0..7, 1, :] (8 rows of 64
// f32, 4 x 64 elements apart), doubles it and stores it to out[g].
#x_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 3 >= 0, d3 >= 0, -d3 + 63 >= 0)>
#o_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 == 0, d3 >= 0, -d3 + 63 >= 0)>
#blk = affine_set<(d0, d1, d2, d3) : (d0 == 0, d1 >= 0, -d1 + 7 >= 0, d2 == 0, d3 >= 0, -d3 + 63 >= 0)>
func.func @block_per_index(%x_ptr: index, %idx: index, %out: index) attributes {grid = [4, 1]} {
  %g = ktdp.get_compute_tile_id : index
  %c0 = arith.constant 0 : index
  %h = arith.constant 1 : index
  %vx = ktdp.construct_memory_view %x_ptr, sizes: [16, 8, 4, 64], strides: [2048, 256, 64, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<16x8x4x64xf32>
  %vi = ktdp.construct_memory_view %idx, sizes: [4], strides: [1] {coordinate_set = #i4, memory_space = #ktdp.memory_space<global>} : memref<4xi32>
  %vo = ktdp.construct_memory_view %out, sizes: [4, 8, 1, 64], strides: [512, 64, 64, 1] {coordinate_set = #o_set, memory_space = #ktdp.memory_space<global>} : memref<4x8x1x64xf32>
  %blk = ktdp.construct_indirect_access_tile intermediate_variables(%a, %b, %c, %d) %vx[ind(%vi[%g + %a]), (%b), (%h + %c), (%d)] {variables_space_set = #blk, variables_space_order = #id4} : memref<16x8x4x64xf32>, memref<4xi32> -> !ktdp.access_tile<1x8x1x64xindex>
  %v = ktdp.load %blk : !ktdp.access_tile<1x8x1x64xindex> -> tensor<1x8x1x64xf32>
  %twice = arith.addf %v, %v : tensor<1x8x1x64xf32>
  %to = ktdp.construct_access_tile %vo[%g, %c0, %c0, %c0] {access_tile_set = #blk, access_tile_order = #id4} : memref<4x8x1x64xf32> -> !ktdp.access_tile<1x8x1x64xindex>
  ktdp.store %twice, %to : tensor<1x8x1x64xf32>, !ktdp.access_tile<1x8x1x64xindex>
  func.return
}

// Paged rows: token t of 64 lives at pool[pages[t floordiv 16], t mod 16, :] (8 pages of 16
// rows); one core reads the 64 tokens in order: 16 dma.gathers, one per row of a page,
// each of the 4 pages (consecutive indices, LX rows 16 apart).
#pool_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 15 >= 0, d2 >= 0, -d2 + 63 >= 0)>
func.func @paged_rows(%pool: index, %pages: index, %out: index) {
  %vp = ktdp.construct_memory_view %pool, sizes: [8, 16, 64], strides: [1024, 64, 1] {coordinate_set = #pool_set, memory_space = #ktdp.memory_space<global>} : memref<8x16x64xf16>
  %vb = ktdp.construct_memory_view %pages, sizes: [4], strides: [1] {coordinate_set = #i4, memory_space = #ktdp.memory_space<global>} : memref<4xi32>
  %vo = ktdp.construct_memory_view %out, sizes: [64, 64], strides: [64, 1] {coordinate_set = #t64x64, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %kv = ktdp.construct_indirect_access_tile intermediate_variables(%t, %d) %vp[ind(%vb[%t floordiv 16]), (%t mod 16), (%d)] {variables_space_set = #t64x64, variables_space_order = #id2} : memref<8x16x64xf16>, memref<4xi32> -> !ktdp.access_tile<64x64xindex>
  %data = ktdp.load %kv : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
  %to = ktdp.construct_access_tile %vo[0, 0] {access_tile_set = #t64x64, access_tile_order = #id2} : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>
  ktdp.store %data, %to : tensor<64x64xf16>, !ktdp.access_tile<64x64xindex>
  func.return
}
