// Causal scaled dot-product attention, one head per tile: q, k, v and out are 4 heads x 64
// tokens x 64 dims f16 and tile %id (of a [4, 1] grid) computes head %id:
//   out = softmax(q k^T / 8 + causal mask) v,
// with the scores and the softmax in f32 and the probabilities rounded to f16 for the
// second product (as flash-attention kernels do).
// k^T comes straight from memory: the k tile's order (d0, d2, d1) walks the head's 64x64
// block column by column, giving a 1x64x64 tile that holds k^T.
#qkv_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0, d2 >= 0, -d2 + 63 >= 0)>
#head = affine_set<(d0, d1, d2) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0, d2 >= 0, -d2 + 63 >= 0)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#dims_major = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row_of = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @sdpa
func.func @sdpa(%q: index, %k: index, %v: index, %out: index) attributes {grid = [4, 1]} {
  %h = ktdp.get_compute_tile_id : index
  %vq = ktdp.construct_memory_view %q, sizes: [4, 64, 64], strides: [4096, 64, 1] {coordinate_set = #qkv_set, memory_space = #ktdp.memory_space<global>} : memref<4x64x64xf16>
  %vk = ktdp.construct_memory_view %k, sizes: [4, 64, 64], strides: [4096, 64, 1] {coordinate_set = #qkv_set, memory_space = #ktdp.memory_space<global>} : memref<4x64x64xf16>
  %vv = ktdp.construct_memory_view %v, sizes: [4, 64, 64], strides: [4096, 64, 1] {coordinate_set = #qkv_set, memory_space = #ktdp.memory_space<global>} : memref<4x64x64xf16>
  %vo = ktdp.construct_memory_view %out, sizes: [4, 64, 64], strides: [4096, 64, 1] {coordinate_set = #qkv_set, memory_space = #ktdp.memory_space<global>} : memref<4x64x64xf16>
  %tq = ktdp.construct_access_tile %vq[%h, 0, 0] {access_tile_set = #head, access_tile_order = #id3} : memref<4x64x64xf16> -> !ktdp.access_tile<1x64x64xindex>
  %tk = ktdp.construct_access_tile %vk[%h, 0, 0] {access_tile_set = #head, access_tile_order = #dims_major} : memref<4x64x64xf16> -> !ktdp.access_tile<1x64x64xindex>
  %tv = ktdp.construct_access_tile %vv[%h, 0, 0] {access_tile_set = #head, access_tile_order = #id3} : memref<4x64x64xf16> -> !ktdp.access_tile<1x64x64xindex>
  %q3 = ktdp.load %tq : !ktdp.access_tile<1x64x64xindex> -> tensor<1x64x64xf16>
  %kt3 = ktdp.load %tk : !ktdp.access_tile<1x64x64xindex> -> tensor<1x64x64xf16>
  %v3 = ktdp.load %tv : !ktdp.access_tile<1x64x64xindex> -> tensor<1x64x64xf16>
  %qm = tensor.collapse_shape %q3 [[0, 1], [2]] : tensor<1x64x64xf16> into tensor<64x64xf16>
  %ktm = tensor.collapse_shape %kt3 [[0, 1], [2]] : tensor<1x64x64xf16> into tensor<64x64xf16>
  %vm = tensor.collapse_shape %v3 [[0, 1], [2]] : tensor<1x64x64xf16> into tensor<64x64xf16>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %scores = linalg.matmul ins(%qm, %ktm : tensor<64x64xf16>, tensor<64x64xf16>) outs(%z : tensor<64x64xf32>) -> tensor<64x64xf32>
  // Scale, and -inf where the key comes after the query (column > row).
  %masked = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%scores : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%s: f32, %o: f32):
    %row = linalg.index 0 : index
    %col = linalg.index 1 : index
    %scale = arith.constant 1.250000e-01 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %scaled = arith.mulf %s, %scale : f32
    %future = arith.cmpi ugt, %col, %row : index
    %m = arith.select %future, %ninf, %scaled : f32
    linalg.yield %m : f32
  } -> tensor<64x64xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %m0 = tensor.splat %ninf : tensor<64xf32>
  %max = linalg.reduce { arith.maxnumf } ins(%masked : tensor<64x64xf32>) outs(%m0 : tensor<64xf32>) dimensions = [1]
  %p = linalg.generic {indexing_maps = [#id2, #row_of, #id2], iterator_types = ["parallel", "parallel"]} ins(%masked, %max : tensor<64x64xf32>, tensor<64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%s: f32, %mx: f32, %o: f32):
    %d = arith.subf %s, %mx : f32
    %x = math.exp %d : f32
    linalg.yield %x : f32
  } -> tensor<64x64xf32>
  %z64 = tensor.splat %zero : tensor<64xf32>
  %sum = linalg.reduce { arith.addf } ins(%p : tensor<64x64xf32>) outs(%z64 : tensor<64xf32>) dimensions = [1]
  %sumb = linalg.broadcast ins(%sum : tensor<64xf32>) outs(%e : tensor<64x64xf32>) dimensions = [1]
  %probs = arith.divf %p, %sumb : tensor<64x64xf32>
  %probs16 = arith.truncf %probs : tensor<64x64xf32> to tensor<64x64xf16>
  %o32 = linalg.matmul ins(%probs16, %vm : tensor<64x64xf16>, tensor<64x64xf16>) outs(%z : tensor<64x64xf32>) -> tensor<64x64xf32>
  %o16 = arith.truncf %o32 : tensor<64x64xf32> to tensor<64x64xf16>
  %o3 = tensor.expand_shape %o16 [[0, 1], [2]] output_shape [1, 64, 64] : tensor<64x64xf16> into tensor<1x64x64xf16>
  %to = ktdp.construct_access_tile %vo[%h, 0, 0] {access_tile_set = #head, access_tile_order = #id3} : memref<4x64x64xf16> -> !ktdp.access_tile<1x64x64xindex>
  ktdp.store %o3, %to : tensor<1x64x64xf16>, !ktdp.access_tile<1x64x64xindex>
  func.return
}
