// Kernels for test_ktir_fixed_addresses.py: tensors at hard-coded addresses, as the RFC 0682
// examples place them (offsets count elements of the view's type; no pointer arguments).
// - @fixed_sub: C = A - B on [16, 64] f16 tensors at elements 1024, 4096 and 8192, two
//   cores of eight rows each, four at a time; A is viewed twice at the same address (one
//   tensor);
// - @fixed_overlap: B's view starts inside A's (refused: the compiler places each tensor
//   on its own).
module {
  func.func @fixed_sub() attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %a_at = arith.constant 1024 : index
    %b_at = arith.constant 4096 : index
    %c_at = arith.constant 8192 : index
    %pid = ktdp.get_compute_tile_id : index
    %row = arith.muli %pid, %c8 : index
    %A_view = ktdp.construct_memory_view %a_at, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %A_again_view = ktdp.construct_memory_view %a_at, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %B_view = ktdp.construct_memory_view %b_at, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %C_view = ktdp.construct_memory_view %c_at, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %at = ktdp.construct_access_tile %A_view[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<4x64xindex>
    %row4 = arith.addi %row, %c4 : index
    %at2 = ktdp.construct_access_tile %A_again_view[%row4, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<4x64xindex>
    %bt = ktdp.construct_access_tile %B_view[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<4x64xindex>
    %bt2 = ktdp.construct_access_tile %B_view[%row4, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<4x64xindex>
    %ct = ktdp.construct_access_tile %C_view[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<4x64xindex>
    %ct2 = ktdp.construct_access_tile %C_view[%row4, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<4x64xindex>
    %a1 = ktdp.load %at : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf16>
    %a2 = ktdp.load %at2 : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf16>
    %b1 = ktdp.load %bt : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf16>
    %b2 = ktdp.load %bt2 : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf16>
    %c1 = arith.subf %a1, %b1 : tensor<4x64xf16>
    %c2 = arith.subf %a2, %b2 : tensor<4x64xf16>
    ktdp.store %c1, %ct : tensor<4x64xf16>, !ktdp.access_tile<4x64xindex>
    ktdp.store %c2, %ct2 : tensor<4x64xf16>, !ktdp.access_tile<4x64xindex>
    return
  }

  func.func @fixed_overlap() attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %a_at = arith.constant 0 : index
    %b_at = arith.constant 512 : index
    %A_view = ktdp.construct_memory_view %a_at, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %B_view = ktdp.construct_memory_view %b_at, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %at = ktdp.construct_access_tile %A_view[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    %bt = ktdp.construct_access_tile %B_view[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    %a = ktdp.load %at : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    ktdp.store %a, %bt : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
    return
  }
}
