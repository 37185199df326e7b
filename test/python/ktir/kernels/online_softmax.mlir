// Kernels for test_ktir_online_softmax.py and test/lit/ktir-backend/online-softmax.mlir:
// constructs of the public paged-attention kernel the back end takes since design note 109:
// - @head_runs: a [2, 4, 128] block of an [4, 8, 128] view (two rows of four heads each):
//   its rows are not evenly spaced, so it moves in two DMAs, loaded and stored;
// - @row_group_mask: a mask whose limit steps every fourth row (Triton's causal mask of
//   query heads sharing a KV head, `j * 32 + col <= ctx + pid * 2 + row / 4`), from the
//   row and column indices, the loop counter, the core and a scalar argument;
// - @negated_mask: the same mask, its condition the negation (`xori` with true) of `>`;
// - @suffix_mask: a mask keeping the columns past a limit (not a prefix of the row);
// - @online_softmax: softmax(s) @ v over four key tiles, the row maximum and the row sum
//   carried as rank-1 tensors from splat inits (-inf and 0), the accumulator rescaled.
module {
  func.func @head_runs(%x_ptr: index, %y_ptr: index) attributes {grid = [2]} {
    %pid = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %two = arith.constant 2.0 : f16
    %row = arith.muli %pid, %c2 : index
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [4, 8, 128], strides: [1024, 128, 1] {
      coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 127 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<4x8x128xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [4, 8, 128], strides: [1024, 128, 1] {
      coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 127 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<4x8x128xf16>
    %xt = ktdp.construct_access_tile %xv[%row, %c4, %c0] {
      access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
    } : memref<4x8x128xf16> -> !ktdp.access_tile<2x4x128xindex>
    %yt = ktdp.construct_access_tile %yv[%row, %c4, %c0] {
      access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
    } : memref<4x8x128xf16> -> !ktdp.access_tile<2x4x128xindex>
    %x = ktdp.load %xt : !ktdp.access_tile<2x4x128xindex> -> tensor<2x4x128xf16>
    %s = tensor.splat %two : tensor<2x4x128xf16>
    %y = arith.mulf %x, %s : tensor<2x4x128xf16>
    ktdp.store %y, %yt : tensor<2x4x128xf16>, !ktdp.access_tile<2x4x128xindex>
    return
  }

  func.func @row_group_mask(%s_ptr: index, %o_ptr: index, %ctx: index) attributes {grid = [2]} {
    %pid = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %ninf_bits = arith.constant 0xFF800000 : i32
    %ninf = arith.bitcast %ninf_bits : i32 to f32
    %row0 = arith.muli %pid, %c8 : index
    %pid2 = arith.muli %pid, %c2 : index
    %sv = ktdp.construct_memory_view %s_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf32>
    %ov = ktdp.construct_memory_view %o_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf32>
    scf.for %j = %c0 to %c2 step %c1 {
      %col0 = arith.muli %j, %c32 : index
      %st = ktdp.construct_access_tile %sv[%row0, %col0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<16x64xf32> -> !ktdp.access_tile<8x32xindex>
      %ot = ktdp.construct_access_tile %ov[%row0, %col0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<16x64xf32> -> !ktdp.access_tile<8x32xindex>
      %s = ktdp.load %st : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf32>
      %e = tensor.empty() : tensor<8x32xf32>
      %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
          ins(%s : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
      ^bb0(%v : f32, %out : f32):
        %r = linalg.index 0 : index
        %c = linalg.index 1 : index
        %r4 = arith.divui %r, %c4 : index
        %lim0 = arith.addi %ctx, %pid2 : index
        %lim = arith.addi %lim0, %r4 : index
        %pos = arith.addi %col0, %c : index
        %keep = arith.cmpi ule, %pos, %lim : index
        %res = arith.select %keep, %v, %ninf : f32
        linalg.yield %res : f32
      } -> tensor<8x32xf32>
      ktdp.store %m, %ot : tensor<8x32xf32>, !ktdp.access_tile<8x32xindex>
    }
    return
  }

  func.func @negated_mask(%s_ptr: index, %o_ptr: index, %ctx: index) attributes {grid = [2]} {
    %pid = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %ninf_bits = arith.constant 0xFF800000 : i32
    %ninf = arith.bitcast %ninf_bits : i32 to f32
    %row0 = arith.muli %pid, %c8 : index
    %pid2 = arith.muli %pid, %c2 : index
    %sv = ktdp.construct_memory_view %s_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf32>
    %ov = ktdp.construct_memory_view %o_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf32>
    scf.for %j = %c0 to %c2 step %c1 {
      %col0 = arith.muli %j, %c32 : index
      %st = ktdp.construct_access_tile %sv[%row0, %col0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<16x64xf32> -> !ktdp.access_tile<8x32xindex>
      %ot = ktdp.construct_access_tile %ov[%row0, %col0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<16x64xf32> -> !ktdp.access_tile<8x32xindex>
      %s = ktdp.load %st : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf32>
      %e = tensor.empty() : tensor<8x32xf32>
      %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
          ins(%s : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
      ^bb0(%v : f32, %out : f32):
        %r = linalg.index 0 : index
        %c = linalg.index 1 : index
        %r4 = arith.divui %r, %c4 : index
        %lim0 = arith.addi %ctx, %pid2 : index
        %lim = arith.addi %lim0, %r4 : index
        %pos = arith.addi %col0, %c : index
        %after = arith.cmpi ugt, %pos, %lim : index
        %true = arith.constant true
        %keep = arith.xori %after, %true : i1
        %res = arith.select %keep, %v, %ninf : f32
        linalg.yield %res : f32
      } -> tensor<8x32xf32>
      ktdp.store %m, %ot : tensor<8x32xf32>, !ktdp.access_tile<8x32xindex>
    }
    return
  }

  func.func @suffix_mask(%s_ptr: index, %o_ptr: index, %ctx: index) attributes {grid = [2]} {
    %pid = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %ninf_bits = arith.constant 0xFF800000 : i32
    %ninf = arith.bitcast %ninf_bits : i32 to f32
    %row0 = arith.muli %pid, %c8 : index
    %pid2 = arith.muli %pid, %c2 : index
    %sv = ktdp.construct_memory_view %s_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf32>
    %ov = ktdp.construct_memory_view %o_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf32>
    scf.for %j = %c0 to %c2 step %c1 {
      %col0 = arith.muli %j, %c32 : index
      %st = ktdp.construct_access_tile %sv[%row0, %col0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<16x64xf32> -> !ktdp.access_tile<8x32xindex>
      %ot = ktdp.construct_access_tile %ov[%row0, %col0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<16x64xf32> -> !ktdp.access_tile<8x32xindex>
      %s = ktdp.load %st : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf32>
      %e = tensor.empty() : tensor<8x32xf32>
      %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
          ins(%s : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
      ^bb0(%v : f32, %out : f32):
        %r = linalg.index 0 : index
        %c = linalg.index 1 : index
        %lim = arith.addi %ctx, %r : index
        %pos = arith.addi %col0, %c : index
        %drop = arith.cmpi ult, %pos, %lim : index
        %res = arith.select %drop, %ninf, %v : f32
        linalg.yield %res : f32
      } -> tensor<8x32xf32>
      ktdp.store %m, %ot : tensor<8x32xf32>, !ktdp.access_tile<8x32xindex>
    }
    return
  }

  func.func @online_softmax(%s_ptr: index, %v_ptr: index, %o_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %ninf_bits = arith.constant 0xFF800000 : i32
    %ninf = arith.bitcast %ninf_bits : i32 to f32
    %zero = arith.constant 0.0 : f32
    %sv = ktdp.construct_memory_view %s_ptr, sizes: [8, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 127 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<8x128xf32>
    %vv = ktdp.construct_memory_view %v_ptr, sizes: [128, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 127 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<128x128xf16>
    %ov = ktdp.construct_memory_view %o_ptr, sizes: [8, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 127 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<8x128xf32>
    %M0 = tensor.splat %ninf : tensor<8xf32>
    %L0 = tensor.splat %zero : tensor<8xf32>
    %A0 = tensor.splat %zero : tensor<8x128xf32>
    %M, %L, %A = scf.for %j = %c0 to %c4 step %c1 iter_args(%m = %M0, %l = %L0, %acc = %A0)
        -> (tensor<8xf32>, tensor<8xf32>, tensor<8x128xf32>) {
      %col0 = arith.muli %j, %c32 : index
      %st = ktdp.construct_access_tile %sv[%c0, %col0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<8x128xf32> -> !ktdp.access_tile<8x32xindex>
      %vt = ktdp.construct_access_tile %vv[%col0, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<128x128xf16> -> !ktdp.access_tile<32x128xindex>
      %s = ktdp.load %st : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf32>
      %v16 = ktdp.load %vt : !ktdp.access_tile<32x128xindex> -> tensor<32x128xf16>
      %v = arith.extf %v16 : tensor<32x128xf16> to tensor<32x128xf32>
      %mx0 = tensor.splat %ninf : tensor<8xf32>
      %rowmax = linalg.reduce ins(%s : tensor<8x32xf32>) outs(%mx0 : tensor<8xf32>) dimensions = [1]
        (%a : f32, %b : f32) {
          %x = arith.maximumf %a, %b : f32
          linalg.yield %x : f32
        }
      %mnew = arith.maximumf %m, %rowmax : tensor<8xf32>
      %pe = tensor.empty() : tensor<8x32xf32>
      %p = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                           iterator_types = ["parallel", "parallel"]}
          ins(%s, %mnew : tensor<8x32xf32>, tensor<8xf32>) outs(%pe : tensor<8x32xf32>) {
      ^bb0(%x : f32, %mm : f32, %out : f32):
        %d = arith.subf %x, %mm : f32
        %ex = math.exp %d : f32
        linalg.yield %ex : f32
      } -> tensor<8x32xf32>
      %sum0 = tensor.splat %zero : tensor<8xf32>
      %rowsum = linalg.reduce ins(%p : tensor<8x32xf32>) outs(%sum0 : tensor<8xf32>) dimensions = [1]
        (%a : f32, %b : f32) {
          %x = arith.addf %a, %b : f32
          linalg.yield %x : f32
        }
      %dm = arith.subf %m, %mnew : tensor<8xf32>
      %alpha = math.exp %dm : tensor<8xf32>
      %la = arith.mulf %l, %alpha : tensor<8xf32>
      %lnew = arith.addf %la, %rowsum : tensor<8xf32>
      %se = tensor.empty() : tensor<8x128xf32>
      %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                                iterator_types = ["parallel", "parallel"]}
          ins(%acc, %alpha : tensor<8x128xf32>, tensor<8xf32>) outs(%se : tensor<8x128xf32>) {
      ^bb0(%x : f32, %al : f32, %out : f32):
        %y = arith.mulf %x, %al : f32
        linalg.yield %y : f32
      } -> tensor<8x128xf32>
      %accnew = linalg.matmul ins(%p, %v : tensor<8x32xf32>, tensor<32x128xf32>)
                              outs(%scaled : tensor<8x128xf32>) -> tensor<8x128xf32>
      scf.yield %mnew, %lnew, %accnew : tensor<8xf32>, tensor<8xf32>, tensor<8x128xf32>
    }
    %oe = tensor.empty() : tensor<8x128xf32>
    %o = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%A, %L : tensor<8x128xf32>, tensor<8xf32>) outs(%oe : tensor<8x128xf32>) {
    ^bb0(%x : f32, %ll : f32, %out : f32):
      %y = arith.divf %x, %ll : f32
      linalg.yield %y : f32
    } -> tensor<8x128xf32>
    %ot = ktdp.construct_access_tile %ov[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<8x128xf32> -> !ktdp.access_tile<8x128xindex>
    ktdp.store %o, %ot : tensor<8x128xf32>, !ktdp.access_tile<8x128xindex>
    return
  }
}
