// RMS normalisation y = x * rsqrt(mean(x^2) + 1e-6) * w of a 16x256 f16 tensor, f32 inside,
// sharded two ways.
#x_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#w_set = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>
#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row_of = affine_map<(d0, d1) -> (d0)>
#col_of = affine_map<(d0, d1) -> (d1)>

// Rows sharded: on a [4, 1] grid tile %id owns rows 4 * %id .. + 3 and the whole hidden dim,
// so each row's reduction stays on one tile.
#rows4 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 255 >= 0)>

// CHECK-LABEL: func.func @rmsnorm_rows
func.func @rmsnorm_rows(%x: index, %w: index, %y: index) attributes {grid = [4, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vx = ktdp.construct_memory_view %x, sizes: [16, 256], strides: [256, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<16x256xf16>
  %vw = ktdp.construct_memory_view %w, sizes: [256], strides: [1] {coordinate_set = #w_set, memory_space = #ktdp.memory_space<global>} : memref<256xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [16, 256], strides: [256, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<16x256xf16>
  %tx = ktdp.construct_access_tile %vx[%id * 4, 0] {access_tile_set = #rows4, access_tile_order = #id2} : memref<16x256xf16> -> !ktdp.access_tile<4x256xindex>
  %tw = ktdp.construct_access_tile %vw[0] {access_tile_set = #w_set, access_tile_order = #id1} : memref<256xf16> -> !ktdp.access_tile<256xindex>
  %x16 = ktdp.load %tx : !ktdp.access_tile<4x256xindex> -> tensor<4x256xf16>
  %w16 = ktdp.load %tw : !ktdp.access_tile<256xindex> -> tensor<256xf16>
  %xf = arith.extf %x16 : tensor<4x256xf16> to tensor<4x256xf32>
  %wf = arith.extf %w16 : tensor<256xf16> to tensor<256xf32>
  %sq = arith.mulf %xf, %xf : tensor<4x256xf32>
  %zero = arith.constant 0.0 : f32
  %z4 = tensor.splat %zero : tensor<4xf32>
  %ssq = linalg.reduce { arith.addf } ins(%sq : tensor<4x256xf32>) outs(%z4 : tensor<4xf32>) dimensions = [1]
  %inv_n = arith.constant 3.906250e-03 : f32
  %eps = arith.constant 1.0e-06 : f32
  %inv_n4 = tensor.splat %inv_n : tensor<4xf32>
  %eps4 = tensor.splat %eps : tensor<4xf32>
  %ms = arith.mulf %ssq, %inv_n4 : tensor<4xf32>
  %ms_eps = arith.addf %ms, %eps4 : tensor<4xf32>
  %r = math.rsqrt %ms_eps : tensor<4xf32>
  %e16 = tensor.empty() : tensor<4x256xf16>
  %out = linalg.generic {indexing_maps = [#id2, #row_of, #col_of, #id2], iterator_types = ["parallel", "parallel"]} ins(%xf, %r, %wf : tensor<4x256xf32>, tensor<4xf32>, tensor<256xf32>) outs(%e16 : tensor<4x256xf16>) {
  ^bb0(%v: f32, %rs: f32, %g: f32, %o: f16):
    %n = arith.mulf %v, %rs : f32
    %s = arith.mulf %n, %g : f32
    %s16 = arith.truncf %s : f32 to f16
    linalg.yield %s16 : f16
  } -> tensor<4x256xf16>
  %ty = ktdp.construct_access_tile %vy[%id * 4, 0] {access_tile_set = #rows4, access_tile_order = #id2} : memref<16x256xf16> -> !ktdp.access_tile<4x256xindex>
  ktdp.store %out, %ty : tensor<4x256xf16>, !ktdp.access_tile<4x256xindex>
  func.return
}

// Hidden dim sharded: on a [4, 2] grid tile (x, y) owns rows 8y .. 8y+7 and columns
// 64x .. 64x+63. A row's sum of squares is spread over the four tiles of one y, so those
// four (linear ids 4y .. 4y+3, since x varies fastest) form group g = y and all-reduce
// their 8 partial sums; two groups run side by side, each on its own rows.
#shard = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#w_shard = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>
#group_of_4 = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#two_groups = affine_set<(g) : (g >= 0, -g + 1 >= 0)>

// CHECK-LABEL: func.func @rmsnorm_hidden_sharded
func.func @rmsnorm_hidden_sharded(%x: index, %w: index, %y: index) attributes {grid = [4, 2]} {
  %col, %row = ktdp.get_compute_tile_id : index, index
  %vx = ktdp.construct_memory_view %x, sizes: [16, 256], strides: [256, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<16x256xf16>
  %vw = ktdp.construct_memory_view %w, sizes: [256], strides: [1] {coordinate_set = #w_set, memory_space = #ktdp.memory_space<global>} : memref<256xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [16, 256], strides: [256, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<16x256xf16>
  %tx = ktdp.construct_access_tile %vx[%row * 8, %col * 64] {access_tile_set = #shard, access_tile_order = #id2} : memref<16x256xf16> -> !ktdp.access_tile<8x64xindex>
  %tw = ktdp.construct_access_tile %vw[%col * 64] {access_tile_set = #w_shard, access_tile_order = #id1} : memref<256xf16> -> !ktdp.access_tile<64xindex>
  %x16 = ktdp.load %tx : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
  %w16 = ktdp.load %tw : !ktdp.access_tile<64xindex> -> tensor<64xf16>
  %xf = arith.extf %x16 : tensor<8x64xf16> to tensor<8x64xf32>
  %wf = arith.extf %w16 : tensor<64xf16> to tensor<64xf32>
  %sq = arith.mulf %xf, %xf : tensor<8x64xf32>
  %zero = arith.constant 0.0 : f32
  %z8 = tensor.splat %zero : tensor<8xf32>
  %partial = linalg.reduce { arith.addf } ins(%sq : tensor<8x64xf32>) outs(%z8 : tensor<8xf32>) dimensions = [1]
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #group_of_4 -> !ktdp.tile_future<(tensor<8xf32>), groups = #two_groups> {
  ^bb0(%gid: index):
    ktdp.yield_partial %partial : tensor<8xf32>
  }
  %ssq = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #group_of_4, identity(%z8 : tensor<8xf32>) : !ktdp.tile_future<(tensor<8xf32>), groups = #two_groups> -> tensor<8xf32> {
  ^bb0(%lhs: tensor<8xf32>, %rhs: tensor<8xf32>):
    %s = arith.addf %lhs, %rhs : tensor<8xf32>
    ktdp.yield_reduced %s : tensor<8xf32>
  }
  %inv_n = arith.constant 3.906250e-03 : f32
  %eps = arith.constant 1.0e-06 : f32
  %inv_n8 = tensor.splat %inv_n : tensor<8xf32>
  %eps8 = tensor.splat %eps : tensor<8xf32>
  %ms = arith.mulf %ssq, %inv_n8 : tensor<8xf32>
  %ms_eps = arith.addf %ms, %eps8 : tensor<8xf32>
  %r = math.rsqrt %ms_eps : tensor<8xf32>
  %e16 = tensor.empty() : tensor<8x64xf16>
  %out = linalg.generic {indexing_maps = [#id2, #row_of, #col_of, #id2], iterator_types = ["parallel", "parallel"]} ins(%xf, %r, %wf : tensor<8x64xf32>, tensor<8xf32>, tensor<64xf32>) outs(%e16 : tensor<8x64xf16>) {
  ^bb0(%v: f32, %rs: f32, %g: f32, %o: f16):
    %n = arith.mulf %v, %rs : f32
    %s = arith.mulf %n, %g : f32
    %s16 = arith.truncf %s : f32 to f16
    linalg.yield %s16 : f16
  } -> tensor<8x64xf16>
  %ty = ktdp.construct_access_tile %vy[%row * 8, %col * 64] {access_tile_set = #shard, access_tile_order = #id2} : memref<16x256xf16> -> !ktdp.access_tile<8x64xindex>
  ktdp.store %out, %ty : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
  func.return
}
