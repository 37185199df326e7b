// The FFN block of a Llama-style decoder, y = (silu(x W1) * (x W3)) W2, for 16 tokens,
// model dim 64 and hidden dim 256, all f16 in memory: x is 16x64, the gate and up weights
// W1, W3 are 64x256, the down weight W2 is 256x64. Products accumulate in f32; the gated
// hidden activation h is rounded to f16 before the down projection, y once at the end.
#x_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#up_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#down_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

// On one tile, looping over the hidden dim in two chunks of 128: chunk j needs columns
// 128j .. of W1 and W3 and rows 128j .. of W2, and adds its share of y to the accumulator.
#up_chunk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#down_chunk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>

// CHECK-LABEL: func.func @ffn_swiglu_1core
func.func @ffn_swiglu_1core(%x: index, %w1: index, %w3: index, %w2: index, %y: index) {
  %vx = ktdp.construct_memory_view %x, sizes: [16, 64], strides: [64, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<16x64xf16>
  %vw1 = ktdp.construct_memory_view %w1, sizes: [64, 256], strides: [256, 1] {coordinate_set = #up_set, memory_space = #ktdp.memory_space<global>} : memref<64x256xf16>
  %vw3 = ktdp.construct_memory_view %w3, sizes: [64, 256], strides: [256, 1] {coordinate_set = #up_set, memory_space = #ktdp.memory_space<global>} : memref<64x256xf16>
  %vw2 = ktdp.construct_memory_view %w2, sizes: [256, 64], strides: [64, 1] {coordinate_set = #down_set, memory_space = #ktdp.memory_space<global>} : memref<256x64xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [16, 64], strides: [64, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<16x64xf16>
  %tx = ktdp.construct_access_tile %vx[0, 0] {access_tile_set = #x_set, access_tile_order = #id2} : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
  %xt = ktdp.load %tx : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %ey = tensor.empty() : tensor<16x64xf32>
  %y0 = linalg.fill ins(%zero : f32) outs(%ey : tensor<16x64xf32>) -> tensor<16x64xf32>
  %eh = tensor.empty() : tensor<16x128xf32>
  %zh = linalg.fill ins(%zero : f32) outs(%eh : tensor<16x128xf32>) -> tensor<16x128xf32>
  %eh16 = tensor.empty() : tensor<16x128xf16>
  %acc = scf.for %j = %c0 to %c256 step %c128 iter_args(%part = %y0) -> tensor<16x64xf32> {
    %t1 = ktdp.construct_access_tile %vw1[0, %j] {access_tile_set = #up_chunk, access_tile_order = #id2} : memref<64x256xf16> -> !ktdp.access_tile<64x128xindex>
    %t3 = ktdp.construct_access_tile %vw3[0, %j] {access_tile_set = #up_chunk, access_tile_order = #id2} : memref<64x256xf16> -> !ktdp.access_tile<64x128xindex>
    %t2 = ktdp.construct_access_tile %vw2[%j, 0] {access_tile_set = #down_chunk, access_tile_order = #id2} : memref<256x64xf16> -> !ktdp.access_tile<128x64xindex>
    %b1 = ktdp.load %t1 : !ktdp.access_tile<64x128xindex> -> tensor<64x128xf16>
    %b3 = ktdp.load %t3 : !ktdp.access_tile<64x128xindex> -> tensor<64x128xf16>
    %b2 = ktdp.load %t2 : !ktdp.access_tile<128x64xindex> -> tensor<128x64xf16>
    %gate = linalg.matmul ins(%xt, %b1 : tensor<16x64xf16>, tensor<64x128xf16>) outs(%zh : tensor<16x128xf32>) -> tensor<16x128xf32>
    %up = linalg.matmul ins(%xt, %b3 : tensor<16x64xf16>, tensor<64x128xf16>) outs(%zh : tensor<16x128xf32>) -> tensor<16x128xf32>
    %h = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%gate, %up : tensor<16x128xf32>, tensor<16x128xf32>) outs(%eh16 : tensor<16x128xf16>) {
    ^bb0(%g: f32, %u: f32, %o: f16):
      %ng = arith.negf %g : f32
      %e = math.exp %ng : f32
      %den = arith.addf %e, %one : f32
      %silu = arith.divf %g, %den : f32
      %hv = arith.mulf %silu, %u : f32
      %h16 = arith.truncf %hv : f32 to f16
      linalg.yield %h16 : f16
    } -> tensor<16x128xf16>
    %next = linalg.matmul ins(%h, %b2 : tensor<16x128xf16>, tensor<128x64xf16>) outs(%part : tensor<16x64xf32>) -> tensor<16x64xf32>
    scf.yield %next : tensor<16x64xf32>
  }
  %y16 = arith.truncf %acc : tensor<16x64xf32> to tensor<16x64xf16>
  %ty = ktdp.construct_access_tile %vy[0, 0] {access_tile_set = #x_set, access_tile_order = #id2} : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
  ktdp.store %y16, %ty : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
  func.return
}

// On a [4, 1] grid, tensor-parallel over the hidden dim: tile c owns hidden columns
// 64c .. 64c+63. The weights are stored shard-major (shard c of W1 and W3 is the contiguous
// 64x64 block W[:, 64c : 64c+64], at element 4096c), and a distributed view per weight puts
// the four shards back together under the global 64x256 (or 256x64) coordinates, each part's
// coordinate_set naming the columns (rows for W2) it holds. Each tile reads its own shard
// through the global view, computes a partial y over its 64 hidden units, the four tiles
// all-reduce the partials, and tile c writes rows 4c .. 4c+3 of y.
#col_shard0 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#col_shard1 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 - 64 >= 0, -d1 + 127 >= 0)>
#col_shard2 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 - 128 >= 0, -d1 + 191 >= 0)>
#col_shard3 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 - 192 >= 0, -d1 + 255 >= 0)>
#row_shard0 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row_shard1 = affine_set<(d0, d1) : (d0 - 64 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row_shard2 = affine_set<(d0, d1) : (d0 - 128 >= 0, -d0 + 191 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row_shard3 = affine_set<(d0, d1) : (d0 - 192 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#block64 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows4 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#all4 = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
#one_group = affine_set<(g) : (g == 0)>

// CHECK-LABEL: func.func @ffn_swiglu_4core
func.func @ffn_swiglu_4core(%x: index, %w1: index, %w3: index, %w2: index, %y: index) attributes {grid = [4, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %c4096 = arith.constant 4096 : index
  %c8192 = arith.constant 8192 : index
  %c12288 = arith.constant 12288 : index
  %vx = ktdp.construct_memory_view %x, sizes: [16, 64], strides: [64, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<16x64xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [16, 64], strides: [64, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<16x64xf16>
  %w1_part0 = ktdp.construct_memory_view %w1, sizes: [64, 64], strides: [64, 1] {coordinate_set = #col_shard0, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %w1_at1 = arith.addi %w1, %c4096 : index
  %w1_part1 = ktdp.construct_memory_view %w1_at1, sizes: [64, 64], strides: [64, 1] {coordinate_set = #col_shard1, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %w1_at2 = arith.addi %w1, %c8192 : index
  %w1_part2 = ktdp.construct_memory_view %w1_at2, sizes: [64, 64], strides: [64, 1] {coordinate_set = #col_shard2, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %w1_at3 = arith.addi %w1, %c12288 : index
  %w1_part3 = ktdp.construct_memory_view %w1_at3, sizes: [64, 64], strides: [64, 1] {coordinate_set = #col_shard3, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %vw1 = ktdp.construct_distributed_memory_view(%w1_part0, %w1_part1, %w1_part2, %w1_part3 : memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf16>) : memref<64x256xf16>
  %w3_part0 = ktdp.construct_memory_view %w3, sizes: [64, 64], strides: [64, 1] {coordinate_set = #col_shard0, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %w3_at1 = arith.addi %w3, %c4096 : index
  %w3_part1 = ktdp.construct_memory_view %w3_at1, sizes: [64, 64], strides: [64, 1] {coordinate_set = #col_shard1, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %w3_at2 = arith.addi %w3, %c8192 : index
  %w3_part2 = ktdp.construct_memory_view %w3_at2, sizes: [64, 64], strides: [64, 1] {coordinate_set = #col_shard2, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %w3_at3 = arith.addi %w3, %c12288 : index
  %w3_part3 = ktdp.construct_memory_view %w3_at3, sizes: [64, 64], strides: [64, 1] {coordinate_set = #col_shard3, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %vw3 = ktdp.construct_distributed_memory_view(%w3_part0, %w3_part1, %w3_part2, %w3_part3 : memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf16>) : memref<64x256xf16>
  %w2_part0 = ktdp.construct_memory_view %w2, sizes: [64, 64], strides: [64, 1] {coordinate_set = #row_shard0, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %w2_at1 = arith.addi %w2, %c4096 : index
  %w2_part1 = ktdp.construct_memory_view %w2_at1, sizes: [64, 64], strides: [64, 1] {coordinate_set = #row_shard1, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %w2_at2 = arith.addi %w2, %c8192 : index
  %w2_part2 = ktdp.construct_memory_view %w2_at2, sizes: [64, 64], strides: [64, 1] {coordinate_set = #row_shard2, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %w2_at3 = arith.addi %w2, %c12288 : index
  %w2_part3 = ktdp.construct_memory_view %w2_at3, sizes: [64, 64], strides: [64, 1] {coordinate_set = #row_shard3, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %vw2 = ktdp.construct_distributed_memory_view(%w2_part0, %w2_part1, %w2_part2, %w2_part3 : memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf16>) : memref<256x64xf16>
  %tx = ktdp.construct_access_tile %vx[0, 0] {access_tile_set = #x_set, access_tile_order = #id2} : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
  %t1 = ktdp.construct_access_tile %vw1[0, %id * 64] {access_tile_set = #block64, access_tile_order = #id2} : memref<64x256xf16> -> !ktdp.access_tile<64x64xindex>
  %t3 = ktdp.construct_access_tile %vw3[0, %id * 64] {access_tile_set = #block64, access_tile_order = #id2} : memref<64x256xf16> -> !ktdp.access_tile<64x64xindex>
  %t2 = ktdp.construct_access_tile %vw2[%id * 64, 0] {access_tile_set = #block64, access_tile_order = #id2} : memref<256x64xf16> -> !ktdp.access_tile<64x64xindex>
  %xt = ktdp.load %tx : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
  %b1 = ktdp.load %t1 : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
  %b3 = ktdp.load %t3 : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
  %b2 = ktdp.load %t2 : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %eh16 = tensor.empty() : tensor<16x64xf16>
  %gate = linalg.matmul ins(%xt, %b1 : tensor<16x64xf16>, tensor<64x64xf16>) outs(%z : tensor<16x64xf32>) -> tensor<16x64xf32>
  %up = linalg.matmul ins(%xt, %b3 : tensor<16x64xf16>, tensor<64x64xf16>) outs(%z : tensor<16x64xf32>) -> tensor<16x64xf32>
  %h = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%gate, %up : tensor<16x64xf32>, tensor<16x64xf32>) outs(%eh16 : tensor<16x64xf16>) {
  ^bb0(%g: f32, %u: f32, %o: f16):
    %ng = arith.negf %g : f32
    %ex = math.exp %ng : f32
    %den = arith.addf %ex, %one : f32
    %silu = arith.divf %g, %den : f32
    %hv = arith.mulf %silu, %u : f32
    %h16 = arith.truncf %hv : f32 to f16
    linalg.yield %h16 : f16
  } -> tensor<16x64xf16>
  %partial = linalg.matmul ins(%h, %b2 : tensor<16x64xf16>, tensor<64x64xf16>) outs(%z : tensor<16x64xf32>) -> tensor<16x64xf32>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #all4 -> !ktdp.tile_future<(tensor<16x64xf32>), groups = #one_group> {
  ^bb0(%gid: index):
    ktdp.yield_partial %partial : tensor<16x64xf32>
  }
  %sum = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #all4, identity(%z : tensor<16x64xf32>) : !ktdp.tile_future<(tensor<16x64xf32>), groups = #one_group> -> tensor<16x64xf32> {
  ^bb0(%lhs: tensor<16x64xf32>, %rhs: tensor<16x64xf32>):
    %s = arith.addf %lhs, %rhs : tensor<16x64xf32>
    ktdp.yield_reduced %s : tensor<16x64xf32>
  }
  %first = affine.apply affine_map<(d0) -> (d0 * 4)>(%id)
  %mine = tensor.extract_slice %sum[%first, 0] [4, 64] [1, 1] : tensor<16x64xf32> to tensor<4x64xf32>
  %mine16 = arith.truncf %mine : tensor<4x64xf32> to tensor<4x64xf16>
  %ty = ktdp.construct_access_tile %vy[%first, 0] {access_tile_set = #rows4, access_tile_order = #id2} : memref<16x64xf16> -> !ktdp.access_tile<4x64xindex>
  ktdp.store %mine16, %ty : tensor<4x64xf16>, !ktdp.access_tile<4x64xindex>
  func.return
}
