// maxnumf / minnumf elementwise and as row reductions, on inputs with NaN (IEEE maxNum:
// a NaN operand is dropped). The sum of a row's maxnum and minnum, minus each other, is
// broadcast back over the row; columns are combined before they are broadcast.
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#block = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#col = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 >= 0)>
#colblock = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @maxnum(%a: index, %b: index, %out: index, %rmax: index) attributes {grid = [4, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %va = ktdp.construct_memory_view %a, sizes: [16, 128], strides: [128, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<16x128xf32>
  %vb = ktdp.construct_memory_view %b, sizes: [16, 128], strides: [128, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<16x128xf32>
  %vo = ktdp.construct_memory_view %out, sizes: [16, 128], strides: [128, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<16x128xf32>
  %ta = ktdp.construct_access_tile %va[%id * 4, 0] {access_tile_set = #block, access_tile_order = #id2} : memref<16x128xf32> -> !ktdp.access_tile<4x128xindex>
  %tb = ktdp.construct_access_tile %vb[%id * 4, 0] {access_tile_set = #block, access_tile_order = #id2} : memref<16x128xf32> -> !ktdp.access_tile<4x128xindex>
  %x = ktdp.load %ta : !ktdp.access_tile<4x128xindex> -> tensor<4x128xf32>
  %y = ktdp.load %tb : !ktdp.access_tile<4x128xindex> -> tensor<4x128xf32>
  %m = arith.maxnumf %x, %y : tensor<4x128xf32>
  %n = arith.minnumf %m, %y : tensor<4x128xf32>
  %to = ktdp.construct_access_tile %vo[%id * 4, 0] {access_tile_set = #block, access_tile_order = #id2} : memref<16x128xf32> -> !ktdp.access_tile<4x128xindex>
  ktdp.store %n, %to : tensor<4x128xf32>, !ktdp.access_tile<4x128xindex>
  %ninf = arith.constant 0xFF800000 : f32
  %minit = tensor.splat %ninf : tensor<4xf32>
  %rm = linalg.reduce { arith.maxnumf } ins(%x : tensor<4x128xf32>) outs(%minit : tensor<4xf32>) dimensions = [1]
  %pinf = arith.constant 0x7F800000 : f32
  %ninit = tensor.splat %pinf : tensor<4xf32>
  %rn = linalg.reduce { arith.minnumf } ins(%x : tensor<4x128xf32>) outs(%ninit : tensor<4xf32>) dimensions = [1]
  %e = tensor.empty() : tensor<4x128xf32>
  %rc = arith.subf %rm, %rn : tensor<4xf32>
  %rcb = linalg.broadcast ins(%rc : tensor<4xf32>) outs(%e : tensor<4x128xf32>) dimensions = [1]
  %rs = arith.addf %rcb, %x : tensor<4x128xf32>
  %vm = ktdp.construct_memory_view %rmax, sizes: [16, 128], strides: [128, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<16x128xf32>
  %tm = ktdp.construct_access_tile %vm[%id * 4, 0] {access_tile_set = #block, access_tile_order = #id2} : memref<16x128xf32> -> !ktdp.access_tile<4x128xindex>
  ktdp.store %rs, %tm : tensor<4x128xf32>, !ktdp.access_tile<4x128xindex>
  func.return
}
