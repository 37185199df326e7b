// One 96x64 f16 tensor T stored in three places and addressed through one distributed view
// in global coordinates: rows 0..63 in LPDDR (%stage), rows 64..79 at the start of core 0's
// LX (row-major) and rows 80..95 at the start of core 1's LX, column-major (strides
// [1, 16]: element (r, c) of the part at 16c + r). A part's local coordinate is the global
// one minus the part's first row.
//
// On a [2, 1] grid, tile c first fills its share: x rows 32c .. 32c+31 into the LPDDR part
// and x rows 64 + 16c .. into its own LX part. An all-reduce of a one-element token over both
// tiles is the barrier that orders those writes before the reads. Then tile c reads rows
// 48c .. 48c+47 of T back through the view, so tile 1's tile spans all three parts (16 LPDDR
// rows, 16 of core 0's LX over the ring, 16 of its own LX), and writes 2 * T to %y.
#global = affine_set<(d0, d1) : (d0 >= 0, -d0 + 95 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#lpddr_part = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#lx0_part = affine_set<(d0, d1) : (d0 - 64 >= 0, -d0 + 79 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#lx1_part = affine_set<(d0, d1) : (d0 - 80 >= 0, -d0 + 95 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows16 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows32 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows48 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 47 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#both = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>
#one_group = affine_set<(g) : (g == 0)>

// CHECK-LABEL: func.func @distributed_view
func.func @distributed_view(%x: index, %stage: index, %y: index) attributes {grid = [2, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %c0 = arith.constant 0 : index
  %vx = ktdp.construct_memory_view %x, sizes: [96, 64], strides: [64, 1] {coordinate_set = #global, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [96, 64], strides: [64, 1] {coordinate_set = #global, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  %p0 = ktdp.construct_memory_view %stage, sizes: [64, 64], strides: [64, 1] {coordinate_set = #lpddr_part, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %p1 = ktdp.construct_memory_view %c0, sizes: [16, 64], strides: [64, 1] {coordinate_set = #lx0_part, memory_space = #ktdp.memory_space<ct_local, ct_id = 0>} : memref<16x64xf16>
  %p2 = ktdp.construct_memory_view %c0, sizes: [16, 64], strides: [1, 16] {coordinate_set = #lx1_part, memory_space = #ktdp.memory_space<ct_local, ct_id = 1>} : memref<16x64xf16>
  %t = ktdp.construct_distributed_memory_view(%p0, %p1, %p2 : memref<64x64xf16>, memref<16x64xf16>, memref<16x64xf16>) : memref<96x64xf16>
  %from_lpddr = ktdp.construct_access_tile %vx[%id * 32, 0] {access_tile_set = #rows32, access_tile_order = #id2} : memref<96x64xf16> -> !ktdp.access_tile<32x64xindex>
  %to_lpddr = ktdp.construct_access_tile %t[%id * 32, 0] {access_tile_set = #rows32, access_tile_order = #id2} : memref<96x64xf16> -> !ktdp.access_tile<32x64xindex>
  %from_lx = ktdp.construct_access_tile %vx[%id * 16 + 64, 0] {access_tile_set = #rows16, access_tile_order = #id2} : memref<96x64xf16> -> !ktdp.access_tile<16x64xindex>
  %to_lx = ktdp.construct_access_tile %t[%id * 16 + 64, 0] {access_tile_set = #rows16, access_tile_order = #id2} : memref<96x64xf16> -> !ktdp.access_tile<16x64xindex>
  %a = ktdp.load %from_lpddr : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
  ktdp.store %a, %to_lpddr : tensor<32x64xf16>, !ktdp.access_tile<32x64xindex>
  %b = ktdp.load %from_lx : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
  ktdp.store %b, %to_lx : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
  %zero = arith.constant 0 : i32
  %token = tensor.splat %zero : tensor<1xi32>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #both -> !ktdp.tile_future<(tensor<1xi32>), groups = #one_group> {
  ^bb0(%gid: index):
    ktdp.yield_partial %token : tensor<1xi32>
  }
  %done = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #both, identity(%token : tensor<1xi32>) : !ktdp.tile_future<(tensor<1xi32>), groups = #one_group> -> tensor<1xi32> {
  ^bb0(%lhs: tensor<1xi32>, %rhs: tensor<1xi32>):
    %s = arith.addi %lhs, %rhs : tensor<1xi32>
    ktdp.yield_reduced %s : tensor<1xi32>
  }
  %back = ktdp.construct_access_tile %t[%id * 48, 0] {access_tile_set = #rows48, access_tile_order = #id2} : memref<96x64xf16> -> !ktdp.access_tile<48x64xindex>
  %rows = ktdp.load %back : !ktdp.access_tile<48x64xindex> -> tensor<48x64xf16>
  %twice = arith.addf %rows, %rows : tensor<48x64xf16>
  %out = ktdp.construct_access_tile %vy[%id * 48, 0] {access_tile_set = #rows48, access_tile_order = #id2} : memref<96x64xf16> -> !ktdp.access_tile<48x64xindex>
  ktdp.store %twice, %out : tensor<48x64xf16>, !ktdp.access_tile<48x64xindex>
  func.return
}
