// Contractions and sums whose inputs, init and result are all 16-bit floats. KTIR
// accumulates them in f32 and rounds once to the result type (docs/ktir.md §4): a long K
// summed in f16 would lose several units of the result's last place.
#x_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 2047 >= 0)>
#w_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 2047 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#y_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#s_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>
#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>

// y = x @ w (linalg.matmul, f16 init) and g = x @ w again as a contraction generic; s = the
// row sums of x (linalg.reduce).
func.func @f16_products(%x: index, %w: index, %y: index, %g: index, %s: index) {
  %vx = ktdp.construct_memory_view %x, sizes: [16, 2048], strides: [2048, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<16x2048xf16>
  %vw = ktdp.construct_memory_view %w, sizes: [2048, 16], strides: [16, 1] {coordinate_set = #w_set, memory_space = #ktdp.memory_space<global>} : memref<2048x16xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [16, 16], strides: [16, 1] {coordinate_set = #y_set, memory_space = #ktdp.memory_space<global>} : memref<16x16xf16>
  %vg = ktdp.construct_memory_view %g, sizes: [16, 16], strides: [16, 1] {coordinate_set = #y_set, memory_space = #ktdp.memory_space<global>} : memref<16x16xf16>
  %vs = ktdp.construct_memory_view %s, sizes: [16], strides: [1] {coordinate_set = #s_set, memory_space = #ktdp.memory_space<global>} : memref<16xf16>
  %tx = ktdp.construct_access_tile %vx[0, 0] {access_tile_set = #x_set, access_tile_order = #id2} : memref<16x2048xf16> -> !ktdp.access_tile<16x2048xindex>
  %tw = ktdp.construct_access_tile %vw[0, 0] {access_tile_set = #w_set, access_tile_order = #id2} : memref<2048x16xf16> -> !ktdp.access_tile<2048x16xindex>
  %ty = ktdp.construct_access_tile %vy[0, 0] {access_tile_set = #y_set, access_tile_order = #id2} : memref<16x16xf16> -> !ktdp.access_tile<16x16xindex>
  %tg = ktdp.construct_access_tile %vg[0, 0] {access_tile_set = #y_set, access_tile_order = #id2} : memref<16x16xf16> -> !ktdp.access_tile<16x16xindex>
  %ts = ktdp.construct_access_tile %vs[0] {access_tile_set = #s_set, access_tile_order = #id1} : memref<16xf16> -> !ktdp.access_tile<16xindex>
  %xt = ktdp.load %tx : !ktdp.access_tile<16x2048xindex> -> tensor<16x2048xf16>
  %wt = ktdp.load %tw : !ktdp.access_tile<2048x16xindex> -> tensor<2048x16xf16>
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<16x16xf16>
  %z = linalg.fill ins(%zero : f16) outs(%e : tensor<16x16xf16>) -> tensor<16x16xf16>
  %yt = linalg.matmul ins(%xt, %wt : tensor<16x2048xf16>, tensor<2048x16xf16>) outs(%z : tensor<16x16xf16>) -> tensor<16x16xf16>
  %gt = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%xt, %wt : tensor<16x2048xf16>, tensor<2048x16xf16>) outs(%z : tensor<16x16xf16>) {
  ^bb0(%a: f16, %b: f16, %acc: f16):
    %p = arith.mulf %a, %b : f16
    %q = arith.addf %acc, %p : f16
    linalg.yield %q : f16
  } -> tensor<16x16xf16>
  %e1 = tensor.empty() : tensor<16xf16>
  %z1 = linalg.fill ins(%zero : f16) outs(%e1 : tensor<16xf16>) -> tensor<16xf16>
  %st = linalg.reduce { arith.addf } ins(%xt : tensor<16x2048xf16>) outs(%z1 : tensor<16xf16>) dimensions = [1]
  ktdp.store %yt, %ty : tensor<16x16xf16>, !ktdp.access_tile<16x16xindex>
  ktdp.store %gt, %tg : tensor<16x16xf16>, !ktdp.access_tile<16x16xindex>
  ktdp.store %st, %ts : tensor<16xf16>, !ktdp.access_tile<16xindex>
  func.return
}

// The same matmul in bf16.
func.func @bf16_matmul(%x: index, %w: index, %y: index) {
  %vx = ktdp.construct_memory_view %x, sizes: [16, 2048], strides: [2048, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<16x2048xbf16>
  %vw = ktdp.construct_memory_view %w, sizes: [2048, 16], strides: [16, 1] {coordinate_set = #w_set, memory_space = #ktdp.memory_space<global>} : memref<2048x16xbf16>
  %vy = ktdp.construct_memory_view %y, sizes: [16, 16], strides: [16, 1] {coordinate_set = #y_set, memory_space = #ktdp.memory_space<global>} : memref<16x16xbf16>
  %tx = ktdp.construct_access_tile %vx[0, 0] {access_tile_set = #x_set, access_tile_order = #id2} : memref<16x2048xbf16> -> !ktdp.access_tile<16x2048xindex>
  %tw = ktdp.construct_access_tile %vw[0, 0] {access_tile_set = #w_set, access_tile_order = #id2} : memref<2048x16xbf16> -> !ktdp.access_tile<2048x16xindex>
  %ty = ktdp.construct_access_tile %vy[0, 0] {access_tile_set = #y_set, access_tile_order = #id2} : memref<16x16xbf16> -> !ktdp.access_tile<16x16xindex>
  %xt = ktdp.load %tx : !ktdp.access_tile<16x2048xindex> -> tensor<16x2048xbf16>
  %wt = ktdp.load %tw : !ktdp.access_tile<2048x16xindex> -> tensor<2048x16xbf16>
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<16x16xbf16>
  %z = linalg.fill ins(%zero : bf16) outs(%e : tensor<16x16xbf16>) -> tensor<16x16xbf16>
  %yt = linalg.matmul ins(%xt, %wt : tensor<16x2048xbf16>, tensor<2048x16xbf16>) outs(%z : tensor<16x16xbf16>) -> tensor<16x16xbf16>
  ktdp.store %yt, %ty : tensor<16x16xbf16>, !ktdp.access_tile<16x16xindex>
  func.return
}
