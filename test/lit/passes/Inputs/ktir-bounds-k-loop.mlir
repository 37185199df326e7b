// C = A B on a 2x2 grid with a K loop that runs one step too far: the view of A has 128
// columns, the loop reads 64-column tiles at k = 0, 64 and 128.
#a_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#b_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 191 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#c_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#a_tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#b_tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#c_tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @k_loop(%a: index, %b: index, %c: index) attributes {grid = [2, 2]} {
  %x, %y = ktdp.get_compute_tile_id : index, index
  %va = ktdp.construct_memory_view %a, sizes: [64, 128], strides: [128, 1] {coordinate_set = #a_set, memory_space = #ktdp.memory_space<global>} : memref<64x128xf16>
  %vb = ktdp.construct_memory_view %b, sizes: [192, 64], strides: [64, 1] {coordinate_set = #b_set, memory_space = #ktdp.memory_space<global>} : memref<192x64xf16>
  %vc = ktdp.construct_memory_view %c, sizes: [64, 64], strides: [64, 1] {coordinate_set = #c_set, memory_space = #ktdp.memory_space<global>} : memref<64x64xf32>
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c192 = arith.constant 192 : index
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<32x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<32x32xf32>) -> tensor<32x32xf32>
  %acc = scf.for %k = %c0 to %c192 step %c64 iter_args(%part = %init) -> (tensor<32x32xf32>) {
    %ta = ktdp.construct_access_tile %va[%x * 32, %k] {access_tile_set = #a_tile, access_tile_order = #id2} : memref<64x128xf16> -> !ktdp.access_tile<32x64xindex>
    %tb = ktdp.construct_access_tile %vb[%k, %y * 32] {access_tile_set = #b_tile, access_tile_order = #id2} : memref<192x64xf16> -> !ktdp.access_tile<64x32xindex>
    %ablk = ktdp.load %ta : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
    %bblk = ktdp.load %tb : !ktdp.access_tile<64x32xindex> -> tensor<64x32xf16>
    %next = linalg.matmul ins(%ablk, %bblk : tensor<32x64xf16>, tensor<64x32xf16>) outs(%part : tensor<32x32xf32>) -> tensor<32x32xf32>
    scf.yield %next : tensor<32x32xf32>
  }
  %tc = ktdp.construct_access_tile %vc[%x * 32, %y * 32] {access_tile_set = #c_tile, access_tile_order = #id2} : memref<64x64xf32> -> !ktdp.access_tile<32x32xindex>
  ktdp.store %acc, %tc : tensor<32x32xf32>, !ktdp.access_tile<32x32xindex>
  func.return
}
