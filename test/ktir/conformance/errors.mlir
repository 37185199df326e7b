// Kernels that are well-formed KTIR (they verify) but fail when run: the interpreter must
// stop with a KtirError subclass whose message names the core, the function, the op and,
// for accesses, the offending coordinate. Nothing may read as zero or write silently.
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#x_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows16 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>

// Off by 4: tile %id reads the 16 rows from 16 * %id + 4, so tile 3 reaches rows 64..67 of
// a 64-row view; the first point outside, in tile order, is (64, 0).
// CHECK-LABEL: func.func @load_out_of_bounds
func.func @load_out_of_bounds(%x: index, %y: index) attributes {grid = [4, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vx = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [64, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [64, 64], strides: [64, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %tx = ktdp.construct_access_tile %vx[%id * 16 + 4, 0] {access_tile_set = #rows16, access_tile_order = #id2} : memref<64x64xf16> -> !ktdp.access_tile<16x64xindex>
  %ty = ktdp.construct_access_tile %vy[%id * 16, 0] {access_tile_set = #rows16, access_tile_order = #id2} : memref<64x64xf16> -> !ktdp.access_tile<16x64xindex>
  %rows = ktdp.load %tx : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
  ktdp.store %rows, %ty : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
  func.return
}

// A scatter whose index table names row 64 of a 64-row table: the store fails at (64, 0)
// and writes nothing, not even the rows whose indices are valid.
#idx_set = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>
#rows8 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
// CHECK-LABEL: func.func @scatter_out_of_bounds
func.func @scatter_out_of_bounds(%src: index, %idx: index, %table: index) {
  %vs = ktdp.construct_memory_view %src, sizes: [8, 64], strides: [64, 1] {coordinate_set = #rows8, memory_space = #ktdp.memory_space<global>} : memref<8x64xf16>
  %vi = ktdp.construct_memory_view %idx, sizes: [8], strides: [1] {coordinate_set = #idx_set, memory_space = #ktdp.memory_space<global>} : memref<8xi32>
  %vt = ktdp.construct_memory_view %table, sizes: [64, 64], strides: [64, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
  %ts = ktdp.construct_access_tile %vs[0, 0] {access_tile_set = #rows8, access_tile_order = #id2} : memref<8x64xf16> -> !ktdp.access_tile<8x64xindex>
  %data = ktdp.load %ts : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
  %tt = ktdp.construct_indirect_access_tile intermediate_variables(%i, %j) %vt[ind(%vi[%i]), (%j)] {variables_space_set = #rows8, variables_space_order = #id2} : memref<64x64xf16>, memref<8xi32> -> !ktdp.access_tile<8x64xindex>
  ktdp.store %data, %tt : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
  func.return
}

// A distributed view with a hole: its parts own rows 0..15 and 32..47 of a 48-row tensor,
// and the tile reads rows 8..23, so (16, 0) is in no part.
#part_lo = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#part_hi = affine_set<(d0, d1) : (d0 - 32 >= 0, -d0 + 47 >= 0, d1 >= 0, -d1 + 63 >= 0)>
// CHECK-LABEL: func.func @distributed_hole
func.func @distributed_hole(%lo: index, %hi: index) {
  %p0 = ktdp.construct_memory_view %lo, sizes: [16, 64], strides: [64, 1] {coordinate_set = #part_lo, memory_space = #ktdp.memory_space<global>} : memref<16x64xf16>
  %p1 = ktdp.construct_memory_view %hi, sizes: [16, 64], strides: [64, 1] {coordinate_set = #part_hi, memory_space = #ktdp.memory_space<global>} : memref<16x64xf16>
  %v = ktdp.construct_distributed_memory_view(%p0, %p1 : memref<16x64xf16>, memref<16x64xf16>) : memref<48x64xf16>
  %c8 = arith.constant 8 : index
  %t = ktdp.construct_access_tile %v[%c8, 0] {access_tile_set = #rows16, access_tile_order = #id2} : memref<48x64xf16> -> !ktdp.access_tile<16x64xindex>
  %rows = ktdp.load %t : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
  func.return
}

// Every loaded tile lives in the 2 MiB (2097152-byte) LX of its core. 640 rows of 1024 f32
// are 640 * 1024 * 4 = 2621440 bytes: 2.5 MiB, half a MiB too many.
#big_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 639 >= 0, d1 >= 0, -d1 + 1023 >= 0)>
// CHECK-LABEL: func.func @tile_overflows_lx
func.func @tile_overflows_lx(%x: index) {
  %vx = ktdp.construct_memory_view %x, sizes: [640, 1024], strides: [1024, 1] {coordinate_set = #big_set, memory_space = #ktdp.memory_space<global>} : memref<640x1024xf32>
  %t = ktdp.construct_access_tile %vx[0, 0] {access_tile_set = #big_set, access_tile_order = #id2} : memref<640x1024xf32> -> !ktdp.access_tile<640x1024xindex>
  %big = ktdp.load %t : !ktdp.access_tile<640x1024xindex> -> tensor<640x1024xf32>
  func.return
}

// A ct_local buffer must lie inside its core's LX: 512x1024 f32 is exactly 2 MiB, so
// starting it at element 1 (byte 4) makes its last byte 2097155.
#lx_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 511 >= 0, d1 >= 0, -d1 + 1023 >= 0)>
// CHECK-LABEL: func.func @lx_buffer_overflows
func.func @lx_buffer_overflows() attributes {grid = [2, 1]} {
  %c1 = arith.constant 1 : index
  %buffer = ktdp.construct_memory_view %c1, sizes: [512, 1024], strides: [1024, 1] {coordinate_set = #lx_set, memory_space = #ktdp.memory_space<ct_local, ct_id = 1>} : memref<512x1024xf32>
  func.return
}
