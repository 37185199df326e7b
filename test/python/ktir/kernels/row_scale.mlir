// A Triton-style row kernel: each core doubles rows pid, pid + 4, ... below %n_rows, one
// 64-element row per iteration; %n_rows can stay a run-time argument (test_ktir_runtime_args).
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @row_scale(%out_ptr: index, %in_ptr: index, %n_rows: index)
      attributes {grid = [4, 1]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %pid = ktdp.get_compute_tile_id : index
    %vin = ktdp.construct_memory_view %in_ptr, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %vout = ktdp.construct_memory_view %out_ptr, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %two = arith.constant 2.0 : f16
    %splat = tensor.splat %two : tensor<1x64xf16>
    scf.for %r = %pid to %n_rows step %c4 {
      %ti = ktdp.construct_access_tile %vin[%r, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
      %to = ktdp.construct_access_tile %vout[%r, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
      %x = ktdp.load %ti : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
      %y = arith.mulf %x, %splat : tensor<1x64xf16>
      ktdp.store %y, %to : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
