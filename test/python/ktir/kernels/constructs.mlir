// Kernels for test_ktir_constructs.py and test/lit/ktir-backend/constructs.mlir: the
// compute constructs of public Triton / hand-written KTIR the back end takes (design note 82):
// - @matmul_acc16: Triton's matmul, `acc + dot` over a loop-carried f16 zero constant;
// - @narrow_rows: rows of 40 f16 (80 B, not whole sticks) and a 1-D grid `[2]`;
// - @scores_kt: `linalg.transpose` of K as a matmul's B operand (Q K^T);
// - @sum_named_add: an inter-tile sum whose combiner is the named `linalg.add`.
module {
  func.func @matmul_acc16(%a_ptr: index, %b_ptr: index, %c_ptr: index, %K: index,
                          %BM: index, %BN: index, %BK: index) attributes {grid = [2, 2]} {
    %pm, %pn = ktdp.get_compute_tile_id : index, index
    %c0 = arith.constant 0 : index
    %a_view = ktdp.construct_memory_view %a_ptr, sizes: [16, 256], strides: [256, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x256xf16>
    %b_view = ktdp.construct_memory_view %b_ptr, sizes: [256, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 127 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<256x128xf16>
    %c_view = ktdp.construct_memory_view %c_ptr, sizes: [16, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 127 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x128xf16>
    %om = arith.muli %pm, %BM : index
    %on = arith.muli %pn, %BN : index
    %zero = arith.constant dense<0.0> : tensor<8x64xf16>
    %c = scf.for %k = %c0 to %K step %BK iter_args(%acc = %zero) -> (tensor<8x64xf16>) {
      %at = ktdp.construct_access_tile %a_view[%om, %k] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<16x256xf16> -> !ktdp.access_tile<8x64xindex>
      %bt = ktdp.construct_access_tile %b_view[%k, %on] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<256x128xf16> -> !ktdp.access_tile<64x64xindex>
      %a = ktdp.load %at : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
      %b = ktdp.load %bt : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
      %e = tensor.empty() : tensor<8x64xf16>
      %dot = linalg.matmul ins(%a, %b : tensor<8x64xf16>, tensor<64x64xf16>)
                           outs(%e : tensor<8x64xf16>) -> tensor<8x64xf16>
      %next = arith.addf %acc, %dot : tensor<8x64xf16>
      scf.yield %next : tensor<8x64xf16>
    }
    %ct = ktdp.construct_access_tile %c_view[%om, %on] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x128xf16> -> !ktdp.access_tile<8x64xindex>
    ktdp.store %c, %ct : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
    return
  }

  func.func @narrow_rows(%x_ptr: index, %y_ptr: index, %z_ptr: index) attributes {grid = [2]} {
    %id = ktdp.get_compute_tile_id : index
    %c8 = arith.constant 8 : index
    %c0 = arith.constant 0 : index
    %row = arith.muli %id, %c8 : index
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [16, 40], strides: [40, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 39 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x40xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [16, 40], strides: [40, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 39 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x40xf16>
    %zv = ktdp.construct_memory_view %z_ptr, sizes: [16, 40], strides: [40, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 39 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x40xf16>
    %xt = ktdp.construct_access_tile %xv[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 39 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x40xf16> -> !ktdp.access_tile<8x40xindex>
    %yt = ktdp.construct_access_tile %yv[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 39 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x40xf16> -> !ktdp.access_tile<8x40xindex>
    %zt = ktdp.construct_access_tile %zv[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 39 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x40xf16> -> !ktdp.access_tile<8x40xindex>
    %x = ktdp.load %xt : !ktdp.access_tile<8x40xindex> -> tensor<8x40xf16>
    %y = ktdp.load %yt : !ktdp.access_tile<8x40xindex> -> tensor<8x40xf16>
    %s = arith.addf %x, %y : tensor<8x40xf16>
    %z = arith.mulf %s, %x : tensor<8x40xf16>
    ktdp.store %z, %zt : tensor<8x40xf16>, !ktdp.access_tile<8x40xindex>
    return
  }

  func.func @scores_kt(%q_ptr: index, %k_ptr: index, %s_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %qv = ktdp.construct_memory_view %q_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %kv = ktdp.construct_memory_view %k_ptr, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<64x64xf16>
    %sv = ktdp.construct_memory_view %s_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %qt = ktdp.construct_access_tile %qv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    %kt = ktdp.construct_access_tile %kv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>
    %st = ktdp.construct_access_tile %sv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    %q = ktdp.load %qt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    %k = ktdp.load %kt : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
    %ke = tensor.empty() : tensor<64x64xf16>
    %k_t = linalg.transpose ins(%k : tensor<64x64xf16>) outs(%ke : tensor<64x64xf16>) permutation = [1, 0]
    %se = tensor.empty() : tensor<16x64xf16>
    %s = linalg.matmul ins(%q, %k_t : tensor<16x64xf16>, tensor<64x64xf16>) outs(%se : tensor<16x64xf16>) -> tensor<16x64xf16>
    ktdp.store %s, %st : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
    return
  }

  func.func @sum_named_add(%x_ptr: index, %y_ptr: index) attributes {grid = [2, 1]} {
    %id = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
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
    %sq = arith.mulf %x, %x : tensor<1x64xf16>
    %fut = ktdp.inter_tile_produce
        producer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>
        : tensor<1x64xf16> -> !ktdp.tile_future<tensor<1x64xf16>, groups = affine_set<(g) : (g == 0)>>
    {
      ^bb0(%gid: index):
        ktdp.yield_partial %sq : tensor<1x64xf16>
    }
    %zero = arith.constant 0.0 : f16
    %ie = tensor.empty() : tensor<1x64xf16>
    %identity = linalg.fill ins(%zero : f16) outs(%ie : tensor<1x64xf16>) -> tensor<1x64xf16>
    %sum = ktdp.inter_tile_reduce(%fut)
        consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>,
        identity(%identity : tensor<1x64xf16>)
        : !ktdp.tile_future<tensor<1x64xf16>, groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16>
    {
      ^bb0(%lhs: tensor<1x64xf16>, %rhs: tensor<1x64xf16>):
        %re = tensor.empty() : tensor<1x64xf16>
        %r = linalg.add ins(%lhs, %rhs : tensor<1x64xf16>, tensor<1x64xf16>) outs(%re : tensor<1x64xf16>) -> tensor<1x64xf16>
        ktdp.yield_reduced %r : tensor<1x64xf16>
    }
    %yt = ktdp.construct_access_tile %yv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
    %first = arith.cmpi eq, %id, %c0 : index
    scf.if %first {
      ktdp.store %sum, %yt : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
