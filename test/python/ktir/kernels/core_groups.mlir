// Kernel for test_ktir_core_groups.py and test/lit/ktir-backend/core-groups.mlir (design
// note 94): 8 cores in 2 groups of 4 (`pid / 4`, `pid % 4`, as ktir-cpu's
// ring_reduce_multi_group writes them); each core doubles its row of X, viewed at
// x_ptr + pid * 64; the first core of each group stores its row at y_ptr + (pid / 4) * 64,
// so Y holds rows 0 and 4 of 2X.
// @looped_sum: 2 cores all-reduce their row of X once per iteration of a loop of 3 and add
// each sum to an accumulator with the named `linalg.add` (ktir-cpu's ring_reduce_inner_loop
// form); core 0 stores 3 * (X0 + X1). The partial is loaded before the loop: each iteration
// reduces it again.
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

  func.func @looped_sum(%x_ptr: index, %y_ptr: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %id = ktdp.get_compute_tile_id : index
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [2, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<2x64xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [1, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<1x64xf16>
    %xt = ktdp.construct_access_tile %xv[%id, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<2x64xf16> -> !ktdp.access_tile<1x64xindex>
    %x = ktdp.load %xt : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    %zero = arith.constant 0.0 : f16
    %e = tensor.empty() : tensor<1x64xf16>
    %acc0 = linalg.fill ins(%zero : f16) outs(%e : tensor<1x64xf16>) -> tensor<1x64xf16>
    %total = scf.for %k = %c0 to %c3 step %c1 iter_args(%acc = %acc0) -> (tensor<1x64xf16>) {
      %fut = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>
          : tensor<1x64xf16> -> !ktdp.tile_future<tensor<1x64xf16>, groups = affine_set<(g) : (g == 0)>> {
        ^bb0(%gid: index):
          ktdp.yield_partial %x : tensor<1x64xf16>
      }
      %zeros = linalg.fill ins(%zero : f16) outs(%e : tensor<1x64xf16>) -> tensor<1x64xf16>
      %sum = ktdp.inter_tile_reduce(%fut) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>,
          identity(%zeros : tensor<1x64xf16>)
          : !ktdp.tile_future<tensor<1x64xf16>, groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16> {
        ^bb0(%l: tensor<1x64xf16>, %r: tensor<1x64xf16>):
          %s = arith.addf %l, %r : tensor<1x64xf16>
          ktdp.yield_reduced %s : tensor<1x64xf16>
      }
      %ne = tensor.empty() : tensor<1x64xf16>
      %next = linalg.add ins(%acc, %sum : tensor<1x64xf16>, tensor<1x64xf16>) outs(%ne : tensor<1x64xf16>) -> tensor<1x64xf16>
      scf.yield %next : tensor<1x64xf16>
    }
    %first = arith.cmpi eq, %id, %c0 : index
    scf.if %first {
      %yt = ktdp.construct_access_tile %yv[%c0, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
      ktdp.store %total, %yt : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
