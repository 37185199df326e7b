// Constructs of Triton-generated KTIR (written for spyrec's tests): row statistics reduced
// into f16 accumulators, taken out with tensor.extract and spread back with tensor.splat,
// dense splat constants, and a matmul into an f16 tensor.empty.
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  // y[r] = exp(x[r] - max(x[r])) / sum(exp(x[r] - max(x[r]))) * 2, one row at a time
  func.func @row_softmax(%y_ptr: index, %x_ptr: index, %n_rows: index)
      attributes {grid = [4, 1]} {
    %pid = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %vx = ktdp.construct_memory_view %x_ptr, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
    %vy = ktdp.construct_memory_view %y_ptr, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
    scf.for %r = %pid to %n_rows step %c4 {
      %tx = ktdp.construct_access_tile %vx[%r, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<32x64xf16> -> !ktdp.access_tile<1x64xindex>
      %x = ktdp.load %tx : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
      %ninf = arith.constant 0xFC00 : f16
      %m0 = tensor.splat %ninf : tensor<1xf16>
      %m = linalg.reduce { arith.maximumf } ins(%x : tensor<1x64xf16>) outs(%m0 : tensor<1xf16>) dimensions = [1]
      %ms = tensor.extract %m[%c0] : tensor<1xf16>
      %mrow = tensor.splat %ms : tensor<1x64xf16>
      %d = arith.subf %x, %mrow : tensor<1x64xf16>
      %e = math.exp %d : tensor<1x64xf16>
      %s0 = arith.constant dense<0.0> : tensor<1xf16>
      %s = linalg.reduce { arith.addf } ins(%e : tensor<1x64xf16>) outs(%s0 : tensor<1xf16>) dimensions = [1]
      %ss = tensor.extract %s[%c0] : tensor<1xf16>
      %srow = tensor.splat %ss : tensor<1x64xf16>
      %p = arith.divf %e, %srow : tensor<1x64xf16>
      %two = arith.constant dense<2.0> : tensor<1x64xf16>
      %y = arith.mulf %p, %two : tensor<1x64xf16>
      %ty = ktdp.construct_access_tile %vy[%r, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<32x64xf16> -> !ktdp.access_tile<1x64xindex>
      ktdp.store %y, %ty : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    }
    return
  }

  // c = a @ b into an f16 tensor.empty: summed in f32, rounded once to f16
  func.func @matmul_f16_init(%a_ptr: index, %b_ptr: index, %c_ptr: index)
      attributes {grid = [1, 1]} {
    %c0 = arith.constant 0 : index
    %va = ktdp.construct_memory_view %a_ptr, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
    %vb = ktdp.construct_memory_view %b_ptr, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %vc = ktdp.construct_memory_view %c_ptr, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
    %ta = ktdp.construct_access_tile %va[%c0, %c0] {access_tile_set = #rows, access_tile_order = #id}
        : memref<32x64xf16> -> !ktdp.access_tile<32x64xindex>
    %tb = ktdp.construct_access_tile %vb[%c0, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
        access_tile_order = #id} : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>
    %tc = ktdp.construct_access_tile %vc[%c0, %c0] {access_tile_set = #rows, access_tile_order = #id}
        : memref<32x64xf16> -> !ktdp.access_tile<32x64xindex>
    %a = ktdp.load %ta : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
    %b = ktdp.load %tb : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
    %init = tensor.empty() : tensor<32x64xf16>
    %c = linalg.matmul ins(%a, %b : tensor<32x64xf16>, tensor<64x64xf16>)
                       outs(%init : tensor<32x64xf16>) -> tensor<32x64xf16>
    ktdp.store %c, %tc : tensor<32x64xf16>, !ktdp.access_tile<32x64xindex>
    return
  }
}
