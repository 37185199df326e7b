// Row tiles too wide for LX, streamed in chunks (spyrec/frontend/ktir_stream.py, design
// note 113): each reduction of the row is a pass over its chunks, each store another.

module {
  // Per row of a 2 x 131072 f16 tensor (a 512 KB f32 tile a row): its max (maxnumf from
  // -inf), the f32 sum of its elements plus 1000, and exp(x - max), on one core.
  func.func @row_stats(%x: index, %mx: index, %sm: index, %y: index) attributes {grid = [1]} {
    %xv = ktdp.construct_memory_view %x, sizes: [2, 131072], strides: [131072, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 131071 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<2x131072xf16>
    %yv = ktdp.construct_memory_view %y, sizes: [2, 131072], strides: [131072, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 131071 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<2x131072xf16>
    %mv = ktdp.construct_memory_view %mx, sizes: [2], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 1 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<2xf16>
    %sv = ktdp.construct_memory_view %sm, sizes: [2], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 1 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<2xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    scf.for %row = %c0 to %c2 step %c1 {
      %xt = ktdp.construct_access_tile %xv[%row, 0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 131071 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<2x131072xf16> -> !ktdp.access_tile<1x131072xindex>
      %a = ktdp.load %xt : !ktdp.access_tile<1x131072xindex> -> tensor<1x131072xf16>
      %neg_inf = arith.constant 0xFC00 : f16
      %m0 = tensor.splat %neg_inf : tensor<1xf16>
      %m = linalg.reduce { arith.maxnumf } ins(%a : tensor<1x131072xf16>) outs(%m0 : tensor<1xf16>) dimensions = [1]
      %a32 = arith.extf %a : tensor<1x131072xf16> to tensor<1x131072xf32>
      %offset = arith.constant 1000.0 : f32
      %s0 = tensor.splat %offset : tensor<1xf32>
      %s = linalg.reduce { arith.addf } ins(%a32 : tensor<1x131072xf32>) outs(%s0 : tensor<1xf32>) dimensions = [1]
      %m_one = tensor.extract %m[%c0] : tensor<1xf16>
      %mb = tensor.splat %m_one : tensor<1x131072xf16>
      %d = arith.subf %a, %mb : tensor<1x131072xf16>
      %e = math.exp %d : tensor<1x131072xf16>
      %yt = ktdp.construct_access_tile %yv[%row, 0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 131071 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<2x131072xf16> -> !ktdp.access_tile<1x131072xindex>
      ktdp.store %e, %yt : tensor<1x131072xf16>, !ktdp.access_tile<1x131072xindex>
      %mt = ktdp.construct_access_tile %mv[%row] {
        access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 >= 0)>,
        access_tile_order = affine_map<(d0) -> (d0)>} : memref<2xf16> -> !ktdp.access_tile<1xindex>
      ktdp.store %m, %mt : tensor<1xf16>, !ktdp.access_tile<1xindex>
      %st = ktdp.construct_access_tile %sv[%row] {
        access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 >= 0)>,
        access_tile_order = affine_map<(d0) -> (d0)>} : memref<2xf32> -> !ktdp.access_tile<1xindex>
      ktdp.store %s, %st : tensor<1xf32>, !ktdp.access_tile<1xindex>
    }
    return
  }
}
