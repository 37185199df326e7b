// ring_rank_reduced.mlir with each core's row viewed at %in_ptr + %pid * 64 (pointer
// arithmetic, as Triton emits it; test_ktir_runtime_args).
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#tiles = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
module {
  func.func @ring_sum(%in_ptr: index, %out_ptr: index) attributes {grid = [4, 1]} {
    %c0 = arith.constant 0 : index
    %pid = ktdp.get_compute_tile_id : index
    %c64 = arith.constant 64 : index
    %offs = arith.muli %pid, %c64 : index
    %row_ptr = arith.addi %in_ptr, %offs : index
    %vin = ktdp.construct_memory_view %row_ptr, sizes: [1, 64], strides: [64, 1] {
      coordinate_set = #row, memory_space = #ktdp.memory_space<global>} : memref<1x64xf32>
    %t = ktdp.construct_access_tile %vin[%c0, %c0] {access_tile_set = #row, access_tile_order = #id}
        : memref<1x64xf32> -> !ktdp.access_tile<1x64xindex>
    %partial = ktdp.load %t : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf32>
    %fut = ktdp.inter_tile_produce producer_tiles_per_group = #tiles
        : tensor<1x64xf32> -> !ktdp.tile_future<tensor<1x64xf32>, groups = affine_set<(g) : (g == 0)>> {
      ^bb0(%gid: index):
        ktdp.yield_partial %partial : tensor<1x64xf32>
    }
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x64xf32>
    %ident = linalg.fill ins(%zero : f32) outs(%e : tensor<1x64xf32>) -> tensor<1x64xf32>
    %sum = ktdp.inter_tile_reduce(%fut) consumer_tiles_per_group = #tiles, identity(%ident : tensor<1x64xf32>)
        : !ktdp.tile_future<tensor<1x64xf32>, groups = affine_set<(g) : (g == 0)>> -> tensor<64xf32> {
      ^bb0(%l: tensor<1x64xf32>, %r: tensor<1x64xf32>):
        %s = arith.addf %l, %r : tensor<1x64xf32>
        ktdp.yield_reduced %s : tensor<1x64xf32>
    }
    %first = arith.cmpi eq, %pid, %c0 : index
    scf.if %first {
      %sum2 = tensor.expand_shape %sum [[0, 1]] output_shape [1, 64] : tensor<64xf32> into tensor<1x64xf32>
      %vout = ktdp.construct_memory_view %out_ptr, sizes: [1, 64], strides: [64, 1] {
        coordinate_set = #row, memory_space = #ktdp.memory_space<global>} : memref<1x64xf32>
      %to = ktdp.construct_access_tile %vout[%c0, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<1x64xf32> -> !ktdp.access_tile<1x64xindex>
      ktdp.store %sum2, %to : tensor<1x64xf32>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
