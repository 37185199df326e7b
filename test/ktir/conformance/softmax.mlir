// Row softmax of a 64x256 f16 tensor on an [8, 1] grid; tile %id owns rows 8 * %id .. + 7.
// The arithmetic runs in f32 and rounds to f16 once, at the end. It uses both spellings of
// linalg.reduce (the region form for the max, the short form for the sum) and a
// linalg.generic whose indexing map broadcasts the row max along the row.
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#block = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row_of = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @softmax
func.func @softmax(%x: index, %y: index) attributes {grid = [8, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vx = ktdp.construct_memory_view %x, sizes: [64, 256], strides: [256, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<64x256xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [64, 256], strides: [256, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<64x256xf16>
  %tx = ktdp.construct_access_tile %vx[%id * 8, 0] {access_tile_set = #block, access_tile_order = #id2} : memref<64x256xf16> -> !ktdp.access_tile<8x256xindex>
  %x16 = ktdp.load %tx : !ktdp.access_tile<8x256xindex> -> tensor<8x256xf16>
  %xf = arith.extf %x16 : tensor<8x256xf16> to tensor<8x256xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %m0 = tensor.splat %ninf : tensor<8xf32>
  %max = linalg.reduce ins(%xf : tensor<8x256xf32>) outs(%m0 : tensor<8xf32>) dimensions = [1] (%in: f32, %acc: f32) {
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  }
  %e0 = tensor.empty() : tensor<8x256xf32>
  %ex = linalg.generic {indexing_maps = [#id2, #row_of, #id2], iterator_types = ["parallel", "parallel"]} ins(%xf, %max : tensor<8x256xf32>, tensor<8xf32>) outs(%e0 : tensor<8x256xf32>) {
  ^bb0(%v: f32, %mx: f32, %out: f32):
    %d = arith.subf %v, %mx : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  } -> tensor<8x256xf32>
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.splat %zero : tensor<8xf32>
  %sum = linalg.reduce { arith.addf } ins(%ex : tensor<8x256xf32>) outs(%s0 : tensor<8xf32>) dimensions = [1]
  %sumb = linalg.broadcast ins(%sum : tensor<8xf32>) outs(%e0 : tensor<8x256xf32>) dimensions = [1]
  %p = arith.divf %ex, %sumb : tensor<8x256xf32>
  %p16 = arith.truncf %p : tensor<8x256xf32> to tensor<8x256xf16>
  %ty = ktdp.construct_access_tile %vy[%id * 8, 0] {access_tile_set = #block, access_tile_order = #id2} : memref<64x256xf16> -> !ktdp.access_tile<8x256xindex>
  ktdp.store %p16, %ty : tensor<8x256xf16>, !ktdp.access_tile<8x256xindex>
  func.return
}
