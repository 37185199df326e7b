// Distributed views of LPDDR tensors (design note 114): several tensors, each the view of
// its own pointer argument, addressed as one; a tile over them moves one DMA per part it
// reaches. Parts stacked by rows (a key cache in two tensors) and side by side (two
// column blocks, each a whole stick wide).

module {
  // y = 2 x over the rows of k0 (rows 0..47) and k1 (rows 48..127), in 32-row tiles at
  // rows 32 i on four cores: core 1's tile straddles both parts (16 rows of each); y is
  // the same stack of two outputs.
  func.func @stacked_rows(%k0: index, %k1: index, %y0: index, %y1: index) attributes {grid = [4]} {
    %id = ktdp.get_compute_tile_id : index
    %c32 = arith.constant 32 : index
    %row = arith.muli %id, %c32 : index
    %v0 = ktdp.construct_memory_view %k0, sizes: [48, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 47 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<48x64xf16>
    %v1 = ktdp.construct_memory_view %k1, sizes: [80, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 - 48 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<80x64xf16>
    %k = ktdp.construct_distributed_memory_view (%v0, %v1 : memref<48x64xf16>, memref<80x64xf16>) : memref<128x64xf16>
    %w0 = ktdp.construct_memory_view %y0, sizes: [48, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 47 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<48x64xf16>
    %w1 = ktdp.construct_memory_view %y1, sizes: [80, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 - 48 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<80x64xf16>
    %y = ktdp.construct_distributed_memory_view (%w0, %w1 : memref<48x64xf16>, memref<80x64xf16>) : memref<128x64xf16>
    %kt = ktdp.construct_access_tile %k[%row, 0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<128x64xf16> -> !ktdp.access_tile<32x64xindex>
    %yt = ktdp.construct_access_tile %y[%row, 0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<128x64xf16> -> !ktdp.access_tile<32x64xindex>
    %a = ktdp.load %kt : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
    %s = arith.addf %a, %a : tensor<32x64xf16>
    ktdp.store %s, %yt : tensor<32x64xf16>, !ktdp.access_tile<32x64xindex>
    return
  }

  // Row sums of [a | b]: a holds columns 0..63, b columns 64..127 (f16, a stick each), one
  // 16 x 128 tile over both per core, summed in f32.
  func.func @side_by_side(%a: index, %b: index, %out: index) attributes {grid = [2]} {
    %id = ktdp.get_compute_tile_id : index
    %c16 = arith.constant 16 : index
    %row = arith.muli %id, %c16 : index
    %va = ktdp.construct_memory_view %a, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
    %vb = ktdp.construct_memory_view %b, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 - 64 >= 0, -d1 + 127 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
    %ab = ktdp.construct_distributed_memory_view (%va, %vb : memref<32x64xf16>, memref<32x64xf16>) : memref<32x128xf16>
    %t = ktdp.construct_access_tile %ab[%row, 0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<32x128xf16> -> !ktdp.access_tile<16x128xindex>
    %x = ktdp.load %t : !ktdp.access_tile<16x128xindex> -> tensor<16x128xf16>
    %x32 = arith.extf %x : tensor<16x128xf16> to tensor<16x128xf32>
    %zero = arith.constant 0.0 : f32
    %init = tensor.splat %zero : tensor<16xf32>
    %sum = linalg.reduce { arith.addf } ins(%x32 : tensor<16x128xf32>) outs(%init : tensor<16xf32>) dimensions = [1]
    %vo = ktdp.construct_memory_view %out, sizes: [32], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 31 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<32xf32>
    %ot = ktdp.construct_access_tile %vo[%row] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>} : memref<32xf32> -> !ktdp.access_tile<16xindex>
    ktdp.store %sum, %ot : tensor<16xf32>, !ktdp.access_tile<16xindex>
    return
  }

  // The same with tiles narrower than a stick (the RFC's row-merge copy): parts of 24 and 40
  // rows of 32 f16 columns, 32 x 16 tiles at [32 x, 16 y] on a 2 x 2 grid; both parts, the
  // view over them and the output are stored in blocks of 16 columns (ktir_blocks), and core
  // (0, y)'s tile straddles the parts at row 24.
  func.func @narrow_parts(%p0: index, %p1: index, %y: index) attributes {grid = [2, 2]} {
    %x, %j = ktdp.get_compute_tile_id : index, index
    %c32 = arith.constant 32 : index
    %c16 = arith.constant 16 : index
    %row = arith.muli %x, %c32 : index
    %col = arith.muli %j, %c16 : index
    %v0 = ktdp.construct_memory_view %p0, sizes: [24, 32], strides: [32, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 23 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<24x32xf16>
    %v1 = ktdp.construct_memory_view %p1, sizes: [40, 32], strides: [32, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 - 24 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<40x32xf16>
    %pv = ktdp.construct_distributed_memory_view (%v0, %v1 : memref<24x32xf16>, memref<40x32xf16>) : memref<64x32xf16>
    %yv = ktdp.construct_memory_view %y, sizes: [64, 32], strides: [32, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<64x32xf16>
    %pt = ktdp.construct_access_tile %pv[%row, %col] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 15 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x32xf16> -> !ktdp.access_tile<32x16xindex>
    %yt = ktdp.construct_access_tile %yv[%row, %col] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 15 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x32xf16> -> !ktdp.access_tile<32x16xindex>
    %a = ktdp.load %pt : !ktdp.access_tile<32x16xindex> -> tensor<32x16xf16>
    %s = arith.addf %a, %a : tensor<32x16xf16>
    ktdp.store %s, %yt : tensor<32x16xf16>, !ktdp.access_tile<32x16xindex>
    return
  }

  // Parts side by side at 32 columns (64 bytes), the tile over both computed on: b's
  // columns would start half way into a stick of its LX rows (only a plain copy can keep
  // the blocks apart, as @joined_columns does); refused with the column.
  func.func @half_stick_parts(%a: index, %b: index, %y: index) attributes {grid = [1]} {
    %va = ktdp.construct_memory_view %a, sizes: [8, 32], strides: [32, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<8x32xf16>
    %vb = ktdp.construct_memory_view %b, sizes: [8, 32], strides: [32, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 - 32 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<8x32xf16>
    %ab = ktdp.construct_distributed_memory_view (%va, %vb : memref<8x32xf16>, memref<8x32xf16>) : memref<8x64xf16>
    %t = ktdp.construct_access_tile %ab[0, 0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x64xf16> -> !ktdp.access_tile<8x64xindex>
    %x0 = ktdp.load %t : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
    %x = arith.addf %x0, %x0 : tensor<8x64xf16>
    %vy = ktdp.construct_memory_view %y, sizes: [8, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<8x64xf16>
    %yt = ktdp.construct_access_tile %vy[0, 0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x64xf16> -> !ktdp.access_tile<8x64xindex>
    ktdp.store %x, %yt : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
    return
  }

  // A 96-column store over parts of 64 columns each: its piece in b is b's first 32 columns,
  // half of b's one stick, and the DMA writes whole sticks: refused (b's other 32 columns
  // are data, not padding).
  func.func @part_of_a_stick(%x: index, %a: index, %b: index) attributes {grid = [1]} {
    %vx = ktdp.construct_memory_view %x, sizes: [8, 96], strides: [96, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 95 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<8x96xf16>
    %xt = ktdp.construct_access_tile %vx[0, 0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 95 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x96xf16> -> !ktdp.access_tile<8x96xindex>
    %v = ktdp.load %xt : !ktdp.access_tile<8x96xindex> -> tensor<8x96xf16>
    %va = ktdp.construct_memory_view %a, sizes: [8, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<8x64xf16>
    %vb = ktdp.construct_memory_view %b, sizes: [8, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 - 64 >= 0, -d1 + 127 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<8x64xf16>
    %ab = ktdp.construct_distributed_memory_view (%va, %vb : memref<8x64xf16>, memref<8x64xf16>) : memref<8x128xf16>
    %t = ktdp.construct_access_tile %ab[0, 0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 95 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x128xf16> -> !ktdp.access_tile<8x96xindex>
    ktdp.store %v, %t : tensor<8x96xf16>, !ktdp.access_tile<8x96xindex>
    return
  }

  // Two 16-column tensors side by side copied into one 32-column tensor (the RFC's dynamic
  // distributed copy at s0 = 16): the 32-column tiles are two 16-column blocks, the parts
  // and the destination are stored in blocks of 16 alike, and each part fills every other
  // LX row of the copied tile.
  func.func @joined_columns(%a: index, %b: index, %y: index) attributes {grid = [2]} {
    %id = ktdp.get_compute_tile_id : index
    %c8 = arith.constant 8 : index
    %row = arith.muli %id, %c8 : index
    %va = ktdp.construct_memory_view %a, sizes: [16, 16], strides: [16, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 15 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<16x16xf16>
    %vb = ktdp.construct_memory_view %b, sizes: [16, 16], strides: [16, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 - 16 >= 0, -d1 + 31 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<16x16xf16>
    %ab = ktdp.construct_distributed_memory_view (%va, %vb : memref<16x16xf16>, memref<16x16xf16>) : memref<16x32xf16>
    %vy = ktdp.construct_memory_view %y, sizes: [16, 32], strides: [32, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<16x32xf16>
    %t = ktdp.construct_access_tile %ab[%row, 0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<16x32xf16> -> !ktdp.access_tile<8x32xindex>
    %yt = ktdp.construct_access_tile %vy[%row, 0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<16x32xf16> -> !ktdp.access_tile<8x32xindex>
    %x = ktdp.load %t : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf16>
    ktdp.store %x, %yt : tensor<8x32xf16>, !ktdp.access_tile<8x32xindex>
    return
  }
}
