// Layer normalisation of a 32x256 f16 tensor over its last dim, on a [4, 1] grid (8 rows
// per tile), writing y = (x - mean) * rstd * gamma + beta as f16 and, like a training
// forward pass, the per-row mean and rstd = 1 / sqrt(var + 1e-5) as f32 vectors.
// Two passes in f32: the mean first, then the variance of the centred rows (one
// linalg.generic with two results gives the centred rows and their squares).
#x_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#x_block = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#w_set = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>
#stat_set = affine_set<(d0) : (d0 >= 0, -d0 + 31 >= 0)>
#stat_block = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>
#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row_of = affine_map<(d0, d1) -> (d0)>
#col_of = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @layernorm
func.func @layernorm(%x: index, %gamma: index, %beta: index, %y: index, %mean: index, %rstd: index) attributes {grid = [4, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vx = ktdp.construct_memory_view %x, sizes: [32, 256], strides: [256, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<32x256xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [32, 256], strides: [256, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<32x256xf16>
  %vg = ktdp.construct_memory_view %gamma, sizes: [256], strides: [1] {coordinate_set = #w_set, memory_space = #ktdp.memory_space<global>} : memref<256xf16>
  %vb = ktdp.construct_memory_view %beta, sizes: [256], strides: [1] {coordinate_set = #w_set, memory_space = #ktdp.memory_space<global>} : memref<256xf16>
  %vm = ktdp.construct_memory_view %mean, sizes: [32], strides: [1] {coordinate_set = #stat_set, memory_space = #ktdp.memory_space<global>} : memref<32xf32>
  %vr = ktdp.construct_memory_view %rstd, sizes: [32], strides: [1] {coordinate_set = #stat_set, memory_space = #ktdp.memory_space<global>} : memref<32xf32>
  %tx = ktdp.construct_access_tile %vx[%id * 8, 0] {access_tile_set = #x_block, access_tile_order = #id2} : memref<32x256xf16> -> !ktdp.access_tile<8x256xindex>
  %tg = ktdp.construct_access_tile %vg[0] {access_tile_set = #w_set, access_tile_order = #id1} : memref<256xf16> -> !ktdp.access_tile<256xindex>
  %tb = ktdp.construct_access_tile %vb[0] {access_tile_set = #w_set, access_tile_order = #id1} : memref<256xf16> -> !ktdp.access_tile<256xindex>
  %x16 = ktdp.load %tx : !ktdp.access_tile<8x256xindex> -> tensor<8x256xf16>
  %g16 = ktdp.load %tg : !ktdp.access_tile<256xindex> -> tensor<256xf16>
  %b16 = ktdp.load %tb : !ktdp.access_tile<256xindex> -> tensor<256xf16>
  %xf = arith.extf %x16 : tensor<8x256xf16> to tensor<8x256xf32>
  %zero = arith.constant 0.0 : f32
  %inv_n = arith.constant 3.906250e-03 : f32
  %eps = arith.constant 1.0e-05 : f32
  %z8 = tensor.splat %zero : tensor<8xf32>
  %sum = linalg.reduce { arith.addf } ins(%xf : tensor<8x256xf32>) outs(%z8 : tensor<8xf32>) dimensions = [1]
  %inv_n8 = tensor.splat %inv_n : tensor<8xf32>
  %mu = arith.mulf %sum, %inv_n8 : tensor<8xf32>
  %e = tensor.empty() : tensor<8x256xf32>
  %centred, %squares = linalg.generic {indexing_maps = [#id2, #row_of, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%xf, %mu : tensor<8x256xf32>, tensor<8xf32>) outs(%e, %e : tensor<8x256xf32>, tensor<8x256xf32>) {
  ^bb0(%v: f32, %m: f32, %o1: f32, %o2: f32):
    %d = arith.subf %v, %m : f32
    %d2 = arith.mulf %d, %d : f32
    linalg.yield %d, %d2 : f32, f32
  } -> (tensor<8x256xf32>, tensor<8x256xf32>)
  %ssq = linalg.reduce { arith.addf } ins(%squares : tensor<8x256xf32>) outs(%z8 : tensor<8xf32>) dimensions = [1]
  %var = arith.mulf %ssq, %inv_n8 : tensor<8xf32>
  %eps8 = tensor.splat %eps : tensor<8xf32>
  %var_eps = arith.addf %var, %eps8 : tensor<8xf32>
  %r = math.rsqrt %var_eps : tensor<8xf32>
  %gf = arith.extf %g16 : tensor<256xf16> to tensor<256xf32>
  %bf = arith.extf %b16 : tensor<256xf16> to tensor<256xf32>
  %e16 = tensor.empty() : tensor<8x256xf16>
  %out = linalg.generic {indexing_maps = [#id2, #row_of, #col_of, #col_of, #id2], iterator_types = ["parallel", "parallel"]} ins(%centred, %r, %gf, %bf : tensor<8x256xf32>, tensor<8xf32>, tensor<256xf32>, tensor<256xf32>) outs(%e16 : tensor<8x256xf16>) {
  ^bb0(%c: f32, %rs: f32, %g: f32, %b: f32, %o: f16):
    %n = arith.mulf %c, %rs : f32
    %s = arith.mulf %n, %g : f32
    %t = arith.addf %s, %b : f32
    %t16 = arith.truncf %t : f32 to f16
    linalg.yield %t16 : f16
  } -> tensor<8x256xf16>
  %ty = ktdp.construct_access_tile %vy[%id * 8, 0] {access_tile_set = #x_block, access_tile_order = #id2} : memref<32x256xf16> -> !ktdp.access_tile<8x256xindex>
  ktdp.store %out, %ty : tensor<8x256xf16>, !ktdp.access_tile<8x256xindex>
  %tm = ktdp.construct_access_tile %vm[%id * 8] {access_tile_set = #stat_block, access_tile_order = #id1} : memref<32xf32> -> !ktdp.access_tile<8xindex>
  ktdp.store %mu, %tm : tensor<8xf32>, !ktdp.access_tile<8xindex>
  %tr = ktdp.construct_access_tile %vr[%id * 8] {access_tile_set = #stat_block, access_tile_order = #id1} : memref<32xf32> -> !ktdp.access_tile<8xindex>
  ktdp.store %r, %tr : tensor<8xf32>, !ktdp.access_tile<8xindex>
  func.return
}
