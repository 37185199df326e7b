#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  // c[r] = a[r] * alpha + b[r] for the ROWS rows of each of the 4 cores
  func.func @scale_add(%a: index, %b: index, %c: index, %ROWS: index, %alpha: f32)
      attributes {grid = [4, 1]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pid = ktdp.get_compute_tile_id : index
    %first = arith.muli %pid, %ROWS : index
    %va = ktdp.construct_memory_view %a, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %vb = ktdp.construct_memory_view %b, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %vc = ktdp.construct_memory_view %c, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %scale = arith.truncf %alpha : f32 to f16
    %splat = tensor.splat %scale : tensor<1x64xf16>
    scf.for %i = %c0 to %ROWS step %c1 {
      %r = arith.addi %first, %i : index
      %ta = ktdp.construct_access_tile %va[%r, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
      %tb = ktdp.construct_access_tile %vb[%r, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
      %tc = ktdp.construct_access_tile %vc[%r, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
      %x = ktdp.load %ta : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
      %y = ktdp.load %tb : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
      %m = arith.mulf %x, %splat : tensor<1x64xf16>
      %s = arith.addf %m, %y : tensor<1x64xf16>
      ktdp.store %s, %tc : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
