// Tiles narrower than a stick at multiples of their width (spyrec/frontend/ktir_blocks.py):
// the back end stores such a tensor's last dim in blocks of the tile width.

// Each of 4 cores scales a 16 x 32 f16 block (64-byte rows) of a 32 x 64 tensor: cores
// (i, j) take rows 16 i and columns 32 j, so two cores write the halves of every stick.
module {
  func.func @half_sticks(%x: index, %y: index) attributes {grid = [2, 2]} {
    %i, %j = ktdp.get_compute_tile_id : index, index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %row = arith.muli %i, %c16 : index
    %col = arith.muli %j, %c32 : index
    %xv = ktdp.construct_memory_view %x, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
    %yv = ktdp.construct_memory_view %y, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
    %xt = ktdp.construct_access_tile %xv[%row, %col] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<32x64xf16> -> !ktdp.access_tile<16x32xindex>
    %yt = ktdp.construct_access_tile %yv[%row, %col] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<32x64xf16> -> !ktdp.access_tile<16x32xindex>
    %a = ktdp.load %xt : !ktdp.access_tile<16x32xindex> -> tensor<16x32xf16>
    %s = arith.addf %a, %a : tensor<16x32xf16>
    ktdp.store %s, %yt : tensor<16x32xf16>, !ktdp.access_tile<16x32xindex>
    return
  }

  // Row sums stored one f32 per row into a vector the 8 cores interleave (row = core + 8 k),
  // as Triton's layer norm stores its mean: a rank-1 view in blocks of one element.
  func.func @row_sums(%x: index, %s: index) attributes {grid = [8]} {
    %core = ktdp.get_compute_tile_id : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %xv = ktdp.construct_memory_view %x, sizes: [64, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<64x128xf32>
    %sv = ktdp.construct_memory_view %s, sizes: [64], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<64xf32>
    scf.for %row = %core to %c64 step %c8 {
      %xt = ktdp.construct_access_tile %xv[%row, 0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x128xf32> -> !ktdp.access_tile<1x128xindex>
      %a = ktdp.load %xt : !ktdp.access_tile<1x128xindex> -> tensor<1x128xf32>
      %zero = arith.constant 0.0 : f32
      %init = tensor.splat %zero : tensor<1xf32>
      %sum = linalg.reduce { arith.addf } ins(%a : tensor<1x128xf32>) outs(%init : tensor<1xf32>) dimensions = [1]
      %st = ktdp.construct_access_tile %sv[%row] {
        access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 >= 0)>,
        access_tile_order = affine_map<(d0) -> (d0)>} : memref<64xf32> -> !ktdp.access_tile<1xindex>
      ktdp.store %sum, %st : tensor<1xf32>, !ktdp.access_tile<1xindex>
    }
    return
  }

  // @half_sticks with the columns at 16 j: a 32-wide tile at column 16 is not at a multiple
  // of its width, so it is not one block; refused by the bounds proof, never read wrong.
  func.func @off_block(%x: index, %y: index) attributes {grid = [2, 2]} {
    %i, %j = ktdp.get_compute_tile_id : index, index
    %c16 = arith.constant 16 : index
    %row = arith.muli %i, %c16 : index
    %col = arith.muli %j, %c16 : index
    %xv = ktdp.construct_memory_view %x, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
    %yv = ktdp.construct_memory_view %y, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
    %xt = ktdp.construct_access_tile %xv[%row, %col] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<32x64xf16> -> !ktdp.access_tile<16x32xindex>
    %yt = ktdp.construct_access_tile %yv[%row, %col] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<32x64xf16> -> !ktdp.access_tile<16x32xindex>
    %a = ktdp.load %xt : !ktdp.access_tile<16x32xindex> -> tensor<16x32xf16>
    ktdp.store %a, %yt : tensor<16x32xf16>, !ktdp.access_tile<16x32xindex>
    return
  }

  // A vector written both from a column of row sums and from a loaded row: no one layout
  // holds both as they are in LX (the column would need a transpose); refused by name.
  func.func @column_and_row(%x: index, %v: index, %s: index) attributes {grid = [1]} {
    %xv = ktdp.construct_memory_view %x, sizes: [8, 32], strides: [32, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<8x32xf32>
    %vv = ktdp.construct_memory_view %v, sizes: [8], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<8xf32>
    %sv = ktdp.construct_memory_view %s, sizes: [16], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<16xf32>
    %xt = ktdp.construct_access_tile %xv[0, 0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x32xf32> -> !ktdp.access_tile<8x32xindex>
    %vt = ktdp.construct_access_tile %vv[0] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>} : memref<8xf32> -> !ktdp.access_tile<8xindex>
    %a = ktdp.load %xt : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf32>
    %zero = arith.constant 0.0 : f32
    %init = tensor.splat %zero : tensor<8xf32>
    %sum = linalg.reduce { arith.addf } ins(%a : tensor<8x32xf32>) outs(%init : tensor<8xf32>) dimensions = [1]
    %row = ktdp.load %vt : !ktdp.access_tile<8xindex> -> tensor<8xf32>
    %s0 = ktdp.construct_access_tile %sv[0] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>} : memref<16xf32> -> !ktdp.access_tile<8xindex>
    %s1 = ktdp.construct_access_tile %sv[8] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>} : memref<16xf32> -> !ktdp.access_tile<8xindex>
    ktdp.store %sum, %s0 : tensor<8xf32>, !ktdp.access_tile<8xindex>
    ktdp.store %row, %s1 : tensor<8xf32>, !ktdp.access_tile<8xindex>
    return
  }
}
