// Rotary position embedding, rotate-half convention, on q of shape 32 tokens x 4 heads x 64
// f16: with x1 = q[..., :32], x2 = q[..., 32:] and per-token tables cos, sin (32x32 f32),
//   out[..., :32] = x1 * cos - x2 * sin,   out[..., 32:] = x2 * cos + x1 * sin.
// On a [4, 1] grid tile %id owns tokens 8 * %id .. + 7. The two halves are two access tiles
// over the same view whose bases differ in the last coordinate; cos and sin are loaded once
// per token and broadcast over the heads.
#q_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 63 >= 0)>
#half = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 31 >= 0)>
#table_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#table_block = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// CHECK-LABEL: func.func @rope
func.func @rope(%q: index, %cos: index, %sin: index, %out: index) attributes {grid = [4, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vq = ktdp.construct_memory_view %q, sizes: [32, 4, 64], strides: [256, 64, 1] {coordinate_set = #q_set, memory_space = #ktdp.memory_space<global>} : memref<32x4x64xf16>
  %vo = ktdp.construct_memory_view %out, sizes: [32, 4, 64], strides: [256, 64, 1] {coordinate_set = #q_set, memory_space = #ktdp.memory_space<global>} : memref<32x4x64xf16>
  %vc = ktdp.construct_memory_view %cos, sizes: [32, 32], strides: [32, 1] {coordinate_set = #table_set, memory_space = #ktdp.memory_space<global>} : memref<32x32xf32>
  %vs = ktdp.construct_memory_view %sin, sizes: [32, 32], strides: [32, 1] {coordinate_set = #table_set, memory_space = #ktdp.memory_space<global>} : memref<32x32xf32>
  %t1 = ktdp.construct_access_tile %vq[%id * 8, 0, 0] {access_tile_set = #half, access_tile_order = #id3} : memref<32x4x64xf16> -> !ktdp.access_tile<8x4x32xindex>
  %t2 = ktdp.construct_access_tile %vq[%id * 8, 0, 32] {access_tile_set = #half, access_tile_order = #id3} : memref<32x4x64xf16> -> !ktdp.access_tile<8x4x32xindex>
  %tc = ktdp.construct_access_tile %vc[%id * 8, 0] {access_tile_set = #table_block, access_tile_order = #id2} : memref<32x32xf32> -> !ktdp.access_tile<8x32xindex>
  %ts = ktdp.construct_access_tile %vs[%id * 8, 0] {access_tile_set = #table_block, access_tile_order = #id2} : memref<32x32xf32> -> !ktdp.access_tile<8x32xindex>
  %x1h = ktdp.load %t1 : !ktdp.access_tile<8x4x32xindex> -> tensor<8x4x32xf16>
  %x2h = ktdp.load %t2 : !ktdp.access_tile<8x4x32xindex> -> tensor<8x4x32xf16>
  %c8 = ktdp.load %tc : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf32>
  %s8 = ktdp.load %ts : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf32>
  %x1 = arith.extf %x1h : tensor<8x4x32xf16> to tensor<8x4x32xf32>
  %x2 = arith.extf %x2h : tensor<8x4x32xf16> to tensor<8x4x32xf32>
  %e = tensor.empty() : tensor<8x4x32xf32>
  %cb = linalg.broadcast ins(%c8 : tensor<8x32xf32>) outs(%e : tensor<8x4x32xf32>) dimensions = [1]
  %sb = linalg.broadcast ins(%s8 : tensor<8x32xf32>) outs(%e : tensor<8x4x32xf32>) dimensions = [1]
  %x1c = arith.mulf %x1, %cb : tensor<8x4x32xf32>
  %x2s = arith.mulf %x2, %sb : tensor<8x4x32xf32>
  %lo = arith.subf %x1c, %x2s : tensor<8x4x32xf32>
  %x2c = arith.mulf %x2, %cb : tensor<8x4x32xf32>
  %x1s = arith.mulf %x1, %sb : tensor<8x4x32xf32>
  %hi = arith.addf %x2c, %x1s : tensor<8x4x32xf32>
  %lo16 = arith.truncf %lo : tensor<8x4x32xf32> to tensor<8x4x32xf16>
  %hi16 = arith.truncf %hi : tensor<8x4x32xf32> to tensor<8x4x32xf16>
  %o1 = ktdp.construct_access_tile %vo[%id * 8, 0, 0] {access_tile_set = #half, access_tile_order = #id3} : memref<32x4x64xf16> -> !ktdp.access_tile<8x4x32xindex>
  %o2 = ktdp.construct_access_tile %vo[%id * 8, 0, 32] {access_tile_set = #half, access_tile_order = #id3} : memref<32x4x64xf16> -> !ktdp.access_tile<8x4x32xindex>
  ktdp.store %lo16, %o1 : tensor<8x4x32xf16>, !ktdp.access_tile<8x4x32xindex>
  ktdp.store %hi16, %o2 : tensor<8x4x32xf16>, !ktdp.access_tile<8x4x32xindex>
  func.return
}
