// C = A @ W^T: A is 64x256 f16, W is 128x256 f16 stored row-major like a torch Linear
// weight, C is 64x128 f32. On a [2, 4] grid tile (x, y) computes the 32x32 block
// (32x, 32y) of C, looping over K in 4 steps of 64 with the f32 accumulator carried by
// scf.for's iter_args (result type written without parentheses).
// The W tile covers rows 32y .. 32y+31 and columns k .. k+63 of W; the order (d1, d0) walks
// it column by column, so the loaded tile is the 64x32 block of W^T the product needs.
#a_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#w_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#c_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#a_tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#c_tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#transposed = affine_map<(d0, d1) -> (d1, d0)>

// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: index, %w: index, %c: index) attributes {grid = [2, 4]} {
  %x, %y = ktdp.get_compute_tile_id : index, index
  %va = ktdp.construct_memory_view %a, sizes: [64, 256], strides: [256, 1] {coordinate_set = #a_set, memory_space = #ktdp.memory_space<global>} : memref<64x256xf16>
  %vw = ktdp.construct_memory_view %w, sizes: [128, 256], strides: [256, 1] {coordinate_set = #w_set, memory_space = #ktdp.memory_space<global>} : memref<128x256xf16>
  %vc = ktdp.construct_memory_view %c, sizes: [64, 128], strides: [128, 1] {coordinate_set = #c_set, memory_space = #ktdp.memory_space<global>} : memref<64x128xf32>
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<32x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<32x32xf32>) -> tensor<32x32xf32>
  %acc = scf.for %k = %c0 to %c256 step %c64 iter_args(%part = %init) -> tensor<32x32xf32> {
    %ta = ktdp.construct_access_tile %va[%x * 32, %k] {access_tile_set = #a_tile, access_tile_order = #id2} : memref<64x256xf16> -> !ktdp.access_tile<32x64xindex>
    %tw = ktdp.construct_access_tile %vw[%y * 32, %k] {access_tile_set = #a_tile, access_tile_order = #transposed} : memref<128x256xf16> -> !ktdp.access_tile<64x32xindex>
    %ablk = ktdp.load %ta : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
    %wblk = ktdp.load %tw : !ktdp.access_tile<64x32xindex> -> tensor<64x32xf16>
    %next = linalg.matmul ins(%ablk, %wblk : tensor<32x64xf16>, tensor<64x32xf16>) outs(%part : tensor<32x32xf32>) -> tensor<32x32xf32>
    scf.yield %next : tensor<32x32xf32>
  }
  %tc = ktdp.construct_access_tile %vc[%x * 32, %y * 32] {access_tile_set = #c_tile, access_tile_order = #id2} : memref<64x128xf32> -> !ktdp.access_tile<32x32xindex>
  ktdp.store %acc, %tc : tensor<32x32xf32>, !ktdp.access_tile<32x32xindex>
  func.return
}
