// Kernel for test_ktir_core_groups.py and test/lit/ktir-backend/core-groups.mlir (design
// note 94): 8 cores in 2 groups of 4 (`pid / 4`, `pid % 4`, as ktir-cpu's
// ring_reduce_multi_group writes them); each core doubles its row of X, viewed at
// x_ptr + pid * 64; the first core of each group stores its row at y_ptr + (pid / 4) * 64,
// so Y holds rows 0 and 4 of 2X.
module {
  func.func @group_rows(%x_ptr: index, %y_ptr: index) attributes {grid = [8]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %pid = ktdp.get_compute_tile_id : index
    %x_offs = arith.muli %pid, %c64 : index
    %row_ptr = arith.addi %x_ptr, %x_offs : index
    %xv = ktdp.construct_memory_view %row_ptr, sizes: [1, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<1x64xf16>
    %xt = ktdp.construct_access_tile %xv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
    %x = ktdp.load %xt : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    %y = arith.addf %x, %x : tensor<1x64xf16>
    %lane = arith.remui %pid, %c4 : index
    %first = arith.cmpi eq, %lane, %c0 : index
    scf.if %first {
      %group = arith.divui %pid, %c4 : index
      %y_offs = arith.muli %group, %c64 : index
      %out_ptr = arith.addi %y_ptr, %y_offs : index
      %yv = ktdp.construct_memory_view %out_ptr, sizes: [1, 64], strides: [64, 1] {
        coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
      } : memref<1x64xf16>
      %yt = ktdp.construct_access_tile %yv[%c0, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
      ktdp.store %y, %yt : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
