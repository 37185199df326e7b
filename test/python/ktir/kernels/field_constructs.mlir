// Kernels for test_ktir_field_constructs.py and test/lit/ktir-backend/field-constructs.mlir:
// constructs of the public ktir-cpu kernels the back end takes since design note 89:
// - @grid_3d: a grid [4, 1, 1] and a tile id read as (x, y, z); core x scales rows 8x..8x+7;
// - @row_rstd: a row statistic extracted, computed on as a scalar (divf, addf, rsqrt) and
//   splatted back over the row: RMSNorm's 1 / sqrt(mean(x^2) + eps) per row;
// - @column_blocks: a weight addressed as a distributed view of two column blocks, each a
//   view at the pointer plus the block's first element, core (x, y) adding block x of W to
//   rows 8y..8y+7 of X;
// - @update_in_place: an argument loaded and stored (each row of T replaced by T * T + T);
// - @flat_sum: two cores' 2x64 partials flattened to 128 elements for an inter-tile sum and
//   expanded back after it (ffn_swiglu_4core's form); core 0 stores X0 + X1.
module {
  func.func @grid_3d(%x_ptr: index, %y_ptr: index) attributes {grid = [4, 1, 1]} {
    %px, %py, %pz = ktdp.get_compute_tile_id : index, index, index
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<32x64xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<32x64xf16>
    %plane = arith.addi %px, %pz : index
    %row = arith.muli %plane, %c8 : index
    %xt = ktdp.construct_access_tile %xv[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<32x64xf16> -> !ktdp.access_tile<8x64xindex>
    %yt = ktdp.construct_access_tile %yv[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<32x64xf16> -> !ktdp.access_tile<8x64xindex>
    %x = ktdp.load %xt : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
    %two = arith.constant 2.0 : f16
    %s = tensor.splat %two : tensor<8x64xf16>
    %y = arith.mulf %x, %s : tensor<8x64xf16>
    ktdp.store %y, %yt : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
    return
  }

  func.func @row_rstd(%x_ptr: index, %y_ptr: index, %eps: f16) attributes {grid = [2]} {
    %id = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [8, 256], strides: [256, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<8x256xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [8, 256], strides: [256, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<8x256xf16>
    %first = arith.muli %id, %c4 : index
    %last = arith.addi %first, %c4 : index
    scf.for %r = %first to %last step %c1 {
      %xt = ktdp.construct_access_tile %xv[%r, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<8x256xf16> -> !ktdp.access_tile<1x256xindex>
      %x = ktdp.load %xt : !ktdp.access_tile<1x256xindex> -> tensor<1x256xf16>
      %sq = arith.mulf %x, %x : tensor<1x256xf16>
      %zero = arith.constant 0.0 : f16
      %init = tensor.splat %zero : tensor<1xf16>
      %sum = linalg.reduce { arith.addf } ins(%sq : tensor<1x256xf16>) outs(%init : tensor<1xf16>) dimensions = [1]
      %s = tensor.extract %sum[%c0] : tensor<1xf16>
      %n = arith.constant 256.0 : f16
      %mean = arith.divf %s, %n : f16
      %shifted = arith.addf %mean, %eps : f16
      %rstd = math.rsqrt %shifted : f16
      %rstd_row = tensor.splat %rstd : tensor<1x256xf16>
      %y = arith.mulf %x, %rstd_row : tensor<1x256xf16>
      %yt = ktdp.construct_access_tile %yv[%r, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<8x256xf16> -> !ktdp.access_tile<1x256xindex>
      ktdp.store %y, %yt : tensor<1x256xf16>, !ktdp.access_tile<1x256xindex>
    }
    return
  }

  func.func @column_blocks(%x_ptr: index, %w_ptr: index, %y_ptr: index) attributes {grid = [2, 2]} {
    %px, %py = ktdp.get_compute_tile_id : index, index
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    %w1_ptr = arith.addi %w_ptr, %c128 : index
    %w0 = ktdp.construct_memory_view %w_ptr, sizes: [16, 128], strides: [256, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 127 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x128xf16>
    %w1 = ktdp.construct_memory_view %w1_ptr, sizes: [16, 128], strides: [256, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 - 128 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x128xf16>
    %wv = ktdp.construct_distributed_memory_view (%w0, %w1 : memref<16x128xf16>, memref<16x128xf16>) : memref<16x256xf16>
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [16, 256], strides: [256, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x256xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [16, 256], strides: [256, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x256xf16>
    %row = arith.muli %py, %c8 : index
    %col = arith.muli %px, %c128 : index
    %wt = ktdp.construct_access_tile %wv[%row, %col] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x256xf16> -> !ktdp.access_tile<8x128xindex>
    %xt = ktdp.construct_access_tile %xv[%row, %col] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x256xf16> -> !ktdp.access_tile<8x128xindex>
    %yt = ktdp.construct_access_tile %yv[%row, %col] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x256xf16> -> !ktdp.access_tile<8x128xindex>
    %w = ktdp.load %wt : !ktdp.access_tile<8x128xindex> -> tensor<8x128xf16>
    %x = ktdp.load %xt : !ktdp.access_tile<8x128xindex> -> tensor<8x128xf16>
    %y = arith.addf %x, %w : tensor<8x128xf16>
    ktdp.store %y, %yt : tensor<8x128xf16>, !ktdp.access_tile<8x128xindex>
    return
  }

  func.func @update_in_place(%t_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %tv = ktdp.construct_memory_view %t_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %tt = ktdp.construct_access_tile %tv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    %t = ktdp.load %tt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    %sq = arith.mulf %t, %t : tensor<16x64xf16>
    %u = arith.addf %sq, %t : tensor<16x64xf16>
    ktdp.store %u, %tt : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
    return
  }

  func.func @flat_sum(%x_ptr: index, %y_ptr: index) attributes {grid = [2]} {
    %id = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [4, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<4x64xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [2, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<2x64xf16>
    %row = arith.muli %id, %c2 : index
    %xt = ktdp.construct_access_tile %xv[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<4x64xf16> -> !ktdp.access_tile<2x64xindex>
    %x = ktdp.load %xt : !ktdp.access_tile<2x64xindex> -> tensor<2x64xf16>
    %flat = tensor.collapse_shape %x [[0, 1]] : tensor<2x64xf16> into tensor<128xf16>
    %fut = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>
        : tensor<128xf16> -> !ktdp.tile_future<tensor<128xf16>, groups = affine_set<(g) : (g == 0)>> {
      ^bb0(%gid: index):
        ktdp.yield_partial %flat : tensor<128xf16>
    }
    %zero = arith.constant 0.0 : f16
    %e = tensor.empty() : tensor<128xf16>
    %zeros = linalg.fill ins(%zero : f16) outs(%e : tensor<128xf16>) -> tensor<128xf16>
    %sum_flat = ktdp.inter_tile_reduce(%fut) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>,
        identity(%zeros : tensor<128xf16>)
        : !ktdp.tile_future<tensor<128xf16>, groups = affine_set<(g) : (g == 0)>> -> tensor<128xf16> {
      ^bb0(%l: tensor<128xf16>, %r: tensor<128xf16>):
        %init = tensor.empty() : tensor<128xf16>
        %s = linalg.add ins(%l, %r : tensor<128xf16>, tensor<128xf16>) outs(%init : tensor<128xf16>) -> tensor<128xf16>
        ktdp.yield_reduced %s : tensor<128xf16>
    }
    %sum = tensor.expand_shape %sum_flat [[0, 1]] output_shape [2, 64] : tensor<128xf16> into tensor<2x64xf16>
    %first = arith.cmpi eq, %id, %c0 : index
    scf.if %first {
      %yt = ktdp.construct_access_tile %yv[%c0, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<2x64xf16> -> !ktdp.access_tile<2x64xindex>
      ktdp.store %sum, %yt : tensor<2x64xf16>, !ktdp.access_tile<2x64xindex>
    }
    return
  }
}
