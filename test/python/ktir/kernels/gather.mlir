// Embedding lookup: out[r, :] = table[idx[r], :] for 16 rows of a 64x64 f16 table, on 2
// tiles of 8 rows each. The tile's row base (%base, an outer value) is a captured variable.
#table = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#idx = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>
#out = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#vars = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @gather(%table: index, %idx: index, %out: index) attributes {grid = [2, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %c8 = arith.constant 8 : index
  %base = arith.muli %id, %c8 : index
  %vt = ktdp.construct_memory_view %table, sizes: [64, 64], strides: [64, 1] {coordinate_set = #table, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %vi = ktdp.construct_memory_view %idx, sizes: [16], strides: [1] {coordinate_set = #idx, memory_space = #ktdp.memory_space<global>} : memref<16xi32>
  %vo = ktdp.construct_memory_view %out, sizes: [16, 64], strides: [64, 1] {coordinate_set = #out, memory_space = #ktdp.memory_space<global>} : memref<16x64xf16>
  %rows = ktdp.construct_indirect_access_tile intermediate_variables(%r, %c) %vt[ind(%vi[%base + %r]), (%c)] {variables_space_set = #vars, variables_space_order = #id2} : memref<64x64xf16>, memref<16xi32> -> !ktdp.access_tile<8x64xindex>
  %data = ktdp.load %rows : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
  %to = ktdp.construct_access_tile %vo[%base, 0] {access_tile_set = #vars, access_tile_order = #id2} : memref<16x64xf16> -> !ktdp.access_tile<8x64xindex>
  ktdp.store %data, %to : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
  func.return
}

// Paged read: 256 logical tokens of 32 dims live in 64-token pages of a pool of 8 pages;
// %pages maps logical page -> physical page. Token t is at pool[pages[t floordiv 64],
// t mod 64, :]. The order (d1, d0) makes the tile dims-major: 32x256.
#pool = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0, d2 >= 0, -d2 + 31 >= 0)>
#ptab = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>
#tokens = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#outt = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#swap = affine_map<(d0, d1) -> (d1, d0)>
func.func @paged(%pool: index, %pages: index, %out: index) {
  %vp = ktdp.construct_memory_view %pool, sizes: [8, 64, 32], strides: [2048, 32, 1] {coordinate_set = #pool, memory_space = #ktdp.memory_space<global>} : memref<8x64x32xf16>
  %vt = ktdp.construct_memory_view %pages, sizes: [4], strides: [1] {coordinate_set = #ptab, memory_space = #ktdp.memory_space<global>} : memref<4xi64>
  %vo = ktdp.construct_memory_view %out, sizes: [32, 256], strides: [256, 1] {coordinate_set = #outt, memory_space = #ktdp.memory_space<global>} : memref<32x256xf16>
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%tok, %d) %vp[ind(%vt[%tok floordiv 64]), (%tok mod 64), (%d)] {variables_space_set = #tokens, variables_space_order = #swap} : memref<8x64x32xf16>, memref<4xi64> -> !ktdp.access_tile<32x256xindex>
  %kv = ktdp.load %t : !ktdp.access_tile<32x256xindex> -> tensor<32x256xf16>
  %to = ktdp.construct_access_tile %vo[0, 0] {access_tile_set = #outt, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<32x256xf16> -> !ktdp.access_tile<32x256xindex>
  ktdp.store %kv, %to : tensor<32x256xf16>, !ktdp.access_tile<32x256xindex>
  func.return
}
