// Row softmax of a 16x128 f16 tensor on 4 tiles: tile %id owns rows 4*%id .. 4*%id + 3.
// Computes in f32: max and sum reductions use the linalg.reduce short form.
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#block = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @softmax(%in: index, %out: index) attributes {grid = [4, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vi = ktdp.construct_memory_view %in, sizes: [16, 128], strides: [128, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<16x128xf16>
  %vo = ktdp.construct_memory_view %out, sizes: [16, 128], strides: [128, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<16x128xf16>
  %ti = ktdp.construct_access_tile %vi[%id * 4, 0] {access_tile_set = #block, access_tile_order = #id2} : memref<16x128xf16> -> !ktdp.access_tile<4x128xindex>
  %x16 = ktdp.load %ti : !ktdp.access_tile<4x128xindex> -> tensor<4x128xf16>
  %x = arith.extf %x16 : tensor<4x128xf16> to tensor<4x128xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %minit = tensor.splat %ninf : tensor<4xf32>
  %max = linalg.reduce { arith.maxnumf } ins(%x : tensor<4x128xf32>) outs(%minit : tensor<4xf32>) dimensions = [1]
  %e = tensor.empty() : tensor<4x128xf32>
  %maxb = linalg.broadcast ins(%max : tensor<4xf32>) outs(%e : tensor<4x128xf32>) dimensions = [1]
  %shifted = arith.subf %x, %maxb : tensor<4x128xf32>
  %ex = math.exp %shifted : tensor<4x128xf32>
  %zero = arith.constant 0.0 : f32
  %sinit = tensor.splat %zero : tensor<4xf32>
  %sum = linalg.reduce { arith.addf } ins(%ex : tensor<4x128xf32>) outs(%sinit : tensor<4xf32>) dimensions = [1]
  %sumb = linalg.broadcast ins(%sum : tensor<4xf32>) outs(%e : tensor<4x128xf32>) dimensions = [1]
  %p = arith.divf %ex, %sumb : tensor<4x128xf32>
  %p16 = arith.truncf %p : tensor<4x128xf32> to tensor<4x128xf16>
  %to = ktdp.construct_access_tile %vo[%id * 4, 0] {access_tile_set = #block, access_tile_order = #id2} : memref<16x128xf16> -> !ktdp.access_tile<4x128xindex>
  ktdp.store %p16, %to : tensor<4x128xf16>, !ktdp.access_tile<4x128xindex>
  func.return
}
