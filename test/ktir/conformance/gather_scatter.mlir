// Indirect access tiles: subscripts read from index views in memory.
#table_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#idx_set = affine_set<(d0) : (d0 >= 0, -d0 + 31 >= 0)>
#half = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

// Embedding lookup, out[r, :] = table[idx[r], :], for 32 i32 indices into a 128x64 f16
// table on a [2, 1] grid: tile %id handles r = 16 * %id + i for i in 0..15. Its first row
// %base is an outer SSA value used in a subscript (a captured variable).
// CHECK-LABEL: func.func @gather
func.func @gather(%table: index, %idx: index, %out: index) attributes {grid = [2, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %c16 = arith.constant 16 : index
  %base = arith.muli %id, %c16 : index
  %vt = ktdp.construct_memory_view %table, sizes: [128, 64], strides: [64, 1] {coordinate_set = #table_set, memory_space = #ktdp.memory_space<global>} : memref<128x64xf16>
  %vi = ktdp.construct_memory_view %idx, sizes: [32], strides: [1] {coordinate_set = #idx_set, memory_space = #ktdp.memory_space<global>} : memref<32xi32>
  %vo = ktdp.construct_memory_view %out, sizes: [32, 64], strides: [64, 1] {coordinate_set = #rows_set, memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
  %rows = ktdp.construct_indirect_access_tile intermediate_variables(%i, %j) %vt[ind(%vi[%base + %i]), (%j)] {variables_space_set = #half, variables_space_order = #id2} : memref<128x64xf16>, memref<32xi32> -> !ktdp.access_tile<16x64xindex>
  %data = ktdp.load %rows : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
  %to = ktdp.construct_access_tile %vo[%base, 0] {access_tile_set = #half, access_tile_order = #id2} : memref<32x64xf16> -> !ktdp.access_tile<16x64xindex>
  ktdp.store %data, %to : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
  func.return
}

// The inverse: table[idx[r], :] = src[r, :] for 32 distinct i64 indices, the store going
// through the indirect tile; rows of %table no index names keep their contents.
#idx64_set = affine_set<(d0) : (d0 >= 0, -d0 + 31 >= 0)>
// CHECK-LABEL: func.func @scatter
func.func @scatter(%src: index, %idx: index, %table: index) attributes {grid = [2, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %c16 = arith.constant 16 : index
  %base = arith.muli %id, %c16 : index
  %vs = ktdp.construct_memory_view %src, sizes: [32, 64], strides: [64, 1] {coordinate_set = #rows_set, memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
  %vi = ktdp.construct_memory_view %idx, sizes: [32], strides: [1] {coordinate_set = #idx64_set, memory_space = #ktdp.memory_space<global>} : memref<32xi64>
  %vt = ktdp.construct_memory_view %table, sizes: [128, 64], strides: [64, 1] {coordinate_set = #table_set, memory_space = #ktdp.memory_space<global>} : memref<128x64xf16>
  %from = ktdp.construct_access_tile %vs[%base, 0] {access_tile_set = #half, access_tile_order = #id2} : memref<32x64xf16> -> !ktdp.access_tile<16x64xindex>
  %data = ktdp.load %from : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
  %rows = ktdp.construct_indirect_access_tile intermediate_variables(%i, %j) %vt[ind(%vi[%base + %i]), (%j)] {variables_space_set = #half, variables_space_order = #id2} : memref<128x64xf16>, memref<32xi64> -> !ktdp.access_tile<16x64xindex>
  ktdp.store %data, %rows : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
  func.return
}

// A paged KV cache: a pool of 16 pages, each 2 heads x 16 token slots x 64 dims f16
// (memref<16x2x16x64>, page-major as in RFC 0682's paged attention), and a block table
// (2 sequences x 4 logical pages, i32) mapping a sequence's logical page to a physical one.
// Token t of sequence b, head h, dim d lives at pool[bt[b, t floordiv 16], h, t mod 16, d].
#pool_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 15 >= 0, d3 >= 0, -d3 + 63 >= 0)>
#bt_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 3 >= 0)>
#kv_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 63 >= 0, d3 >= 0, -d3 + 63 >= 0)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// Read the 64 cached tokens of both sequences into out[b, h, t, d], one sequence per tile of
// a [2, 1] grid. The intermediate variables (b, h, t, d) range over a set whose b is pinned to
// the tile id by the symbol s0 (bound through symbols(%id)), so each tile's tile is
// 1x2x64x64; the page subscript is the loaded block-table entry, the slot is t mod 16.
#one_seq = affine_set<(d0, d1, d2, d3)[s0] : (d0 - s0 == 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 63 >= 0, d3 >= 0, -d3 + 63 >= 0)>
#seq_block = affine_set<(d0, d1, d2, d3) : (d0 == 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 63 >= 0, d3 >= 0, -d3 + 63 >= 0)>
// CHECK-LABEL: func.func @paged_kv_read
func.func @paged_kv_read(%pool: index, %block_table: index, %out: index) attributes {grid = [2, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vp = ktdp.construct_memory_view %pool, sizes: [16, 2, 16, 64], strides: [2048, 1024, 64, 1] {coordinate_set = #pool_set, memory_space = #ktdp.memory_space<global>} : memref<16x2x16x64xf16>
  %vb = ktdp.construct_memory_view %block_table, sizes: [2, 4], strides: [4, 1] {coordinate_set = #bt_set, memory_space = #ktdp.memory_space<global>} : memref<2x4xi32>
  %vo = ktdp.construct_memory_view %out, sizes: [2, 2, 64, 64], strides: [8192, 4096, 64, 1] {coordinate_set = #kv_set, memory_space = #ktdp.memory_space<global>} : memref<2x2x64x64xf16>
  %kv = ktdp.construct_indirect_access_tile intermediate_variables(%b, %h, %t, %d) %vp[ind(%vb[%b, %t floordiv 16]), (%h), (%t mod 16), (%d)] symbols(%id) {variables_space_set = #one_seq, variables_space_order = #id4} : memref<16x2x16x64xf16>, memref<2x4xi32> -> !ktdp.access_tile<1x2x64x64xindex>
  %data = ktdp.load %kv : !ktdp.access_tile<1x2x64x64xindex> -> tensor<1x2x64x64xf16>
  %to = ktdp.construct_access_tile %vo[%id, 0, 0, 0] {access_tile_set = #seq_block, access_tile_order = #id4} : memref<2x2x64x64xf16> -> !ktdp.access_tile<1x2x64x64xindex>
  ktdp.store %data, %to : tensor<1x2x64x64xf16>, !ktdp.access_tile<1x2x64x64xindex>
  func.return
}

// Append one decoded token per sequence at position %pos (a kernel scalar): tile b writes
// new[b] (2 heads x 64) to pool[bt[b, %pos floordiv 16], h, %pos mod 16, d]. Here the tile
// id and %pos are captured variables inside floordiv/mod and the indirect subscript.
#new_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 63 >= 0)>
#new_block = affine_set<(d0, d1, d2) : (d0 == 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 63 >= 0)>
#heads_dims = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @paged_kv_append
func.func @paged_kv_append(%new: index, %pos: index, %block_table: index, %pool: index) attributes {grid = [2, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vn = ktdp.construct_memory_view %new, sizes: [2, 2, 64], strides: [128, 64, 1] {coordinate_set = #new_set, memory_space = #ktdp.memory_space<global>} : memref<2x2x64xf16>
  %vb = ktdp.construct_memory_view %block_table, sizes: [2, 4], strides: [4, 1] {coordinate_set = #bt_set, memory_space = #ktdp.memory_space<global>} : memref<2x4xi32>
  %vp = ktdp.construct_memory_view %pool, sizes: [16, 2, 16, 64], strides: [2048, 1024, 64, 1] {coordinate_set = #pool_set, memory_space = #ktdp.memory_space<global>} : memref<16x2x16x64xf16>
  %tn = ktdp.construct_access_tile %vn[%id, 0, 0] {access_tile_set = #new_block, access_tile_order = #id3} : memref<2x2x64xf16> -> !ktdp.access_tile<1x2x64xindex>
  %row = ktdp.load %tn : !ktdp.access_tile<1x2x64xindex> -> tensor<1x2x64xf16>
  %token = tensor.collapse_shape %row [[0, 1], [2]] : tensor<1x2x64xf16> into tensor<2x64xf16>
  %slot = ktdp.construct_indirect_access_tile intermediate_variables(%h, %d) %vp[ind(%vb[%id, %pos floordiv 16]), (%h), (%pos mod 16), (%d)] {variables_space_set = #heads_dims, variables_space_order = #id2} : memref<16x2x16x64xf16>, memref<2x4xi32> -> !ktdp.access_tile<2x64xindex>
  ktdp.store %token, %slot : tensor<2x64xf16>, !ktdp.access_tile<2x64xindex>
  func.return
}
