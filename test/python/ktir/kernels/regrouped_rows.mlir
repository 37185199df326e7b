// Kernels for test_ktir_regrouped_rows.py and test/lit/ktir-backend/regrouped-rows.mlir:
// constructs of the public paged-attention kernel the back end takes since design note 108:
// - @heads_rows: a [2, 4, 128] block of query heads collapsed to [8, 128] rows, computed on
//   and expanded back to [2, 4, 128] to be stored;
// - @keys_transposed: a [1, 16, 1, 128] block of a paged key cache collapsed to [16, 128]
//   (a size-1 dim merged into the last), transposed as a matmul's B: q @ k^T;
// - @keys_order_transposed: a [1, 16, 128] key block loaded through the order (d0, d2, d1)
//   (its transpose, [1, 128, 16]) and collapsed to [128, 16], a matmul's B;
// - @bitcast_bound: -inf spelled as the bits of an i32 constant, a lower bound of a max.
module {
  func.func @heads_rows(%x_ptr: index, %y_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %two = arith.constant 2.0 : f16
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [2, 4, 128], strides: [512, 128, 1] {
      coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 127 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<2x4x128xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [2, 4, 128], strides: [512, 128, 1] {
      coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 127 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<2x4x128xf16>
    %xt = ktdp.construct_access_tile %xv[%c0, %c0, %c0] {
      access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
    } : memref<2x4x128xf16> -> !ktdp.access_tile<2x4x128xindex>
    %yt = ktdp.construct_access_tile %yv[%c0, %c0, %c0] {
      access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
    } : memref<2x4x128xf16> -> !ktdp.access_tile<2x4x128xindex>
    %x3 = ktdp.load %xt : !ktdp.access_tile<2x4x128xindex> -> tensor<2x4x128xf16>
    %x = tensor.collapse_shape %x3 [[0, 1], [2]] : tensor<2x4x128xf16> into tensor<8x128xf16>
    %e = math.exp %x : tensor<8x128xf16>
    %s = tensor.splat %two : tensor<8x128xf16>
    %y = arith.mulf %e, %s : tensor<8x128xf16>
    %y3 = tensor.expand_shape %y [[0, 1], [2]] output_shape [2, 4, 128] : tensor<8x128xf16> into tensor<2x4x128xf16>
    ktdp.store %y3, %yt : tensor<2x4x128xf16>, !ktdp.access_tile<2x4x128xindex>
    return
  }

  func.func @keys_transposed(%q_ptr: index, %k_ptr: index, %s_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %qv = ktdp.construct_memory_view %q_ptr, sizes: [8, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 127 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<8x128xf16>
    %kv = ktdp.construct_memory_view %k_ptr, sizes: [1, 16, 1, 128], strides: [2048, 128, 128, 1] {
      coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 15 >= 0, d2 >= 0, -d2 >= 0, d3 >= 0, -d3 + 127 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<1x16x1x128xf16>
    %sv = ktdp.construct_memory_view %s_ptr, sizes: [8, 16], strides: [16, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 15 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<8x16xf32>
    %qt = ktdp.construct_access_tile %qv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<8x128xf16> -> !ktdp.access_tile<8x128xindex>
    %kt = ktdp.construct_access_tile %kv[%c0, %c0, %c0, %c0] {
      access_tile_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 15 >= 0, d2 >= 0, -d2 >= 0, d3 >= 0, -d3 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
    } : memref<1x16x1x128xf16> -> !ktdp.access_tile<1x16x1x128xindex>
    %st = ktdp.construct_access_tile %sv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 15 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<8x16xf32> -> !ktdp.access_tile<8x16xindex>
    %q16 = ktdp.load %qt : !ktdp.access_tile<8x128xindex> -> tensor<8x128xf16>
    %k4 = ktdp.load %kt : !ktdp.access_tile<1x16x1x128xindex> -> tensor<1x16x1x128xf16>
    %k16 = tensor.collapse_shape %k4 [[0, 1], [2, 3]] : tensor<1x16x1x128xf16> into tensor<16x128xf16>
    %kt_empty = tensor.empty() : tensor<128x16xf16>
    %kT = linalg.transpose ins(%k16 : tensor<16x128xf16>) outs(%kt_empty : tensor<128x16xf16>) permutation = [1, 0]
    %q = arith.extf %q16 : tensor<8x128xf16> to tensor<8x128xf32>
    %k = arith.extf %kT : tensor<128x16xf16> to tensor<128x16xf32>
    %init = tensor.splat %zero : tensor<8x16xf32>
    %s = linalg.matmul ins(%q, %k : tensor<8x128xf32>, tensor<128x16xf32>) outs(%init : tensor<8x16xf32>) -> tensor<8x16xf32>
    ktdp.store %s, %st : tensor<8x16xf32>, !ktdp.access_tile<8x16xindex>
    return
  }


  func.func @keys_order_transposed(%q_ptr: index, %k_ptr: index, %s_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %qv = ktdp.construct_memory_view %q_ptr, sizes: [8, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 127 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<8x128xf16>
    %kv = ktdp.construct_memory_view %k_ptr, sizes: [1, 16, 128], strides: [2048, 128, 1] {
      coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 15 >= 0, d2 >= 0, -d2 + 127 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<1x16x128xf16>
    %sv = ktdp.construct_memory_view %s_ptr, sizes: [8, 16], strides: [16, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 15 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<8x16xf32>
    %qt = ktdp.construct_access_tile %qv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<8x128xf16> -> !ktdp.access_tile<8x128xindex>
    %kt = ktdp.construct_access_tile %kv[%c0, %c0, %c0] {
      access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 15 >= 0, d2 >= 0, -d2 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
    } : memref<1x16x128xf16> -> !ktdp.access_tile<1x128x16xindex>
    %st = ktdp.construct_access_tile %sv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 15 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<8x16xf32> -> !ktdp.access_tile<8x16xindex>
    %q = ktdp.load %qt : !ktdp.access_tile<8x128xindex> -> tensor<8x128xf16>
    %k3 = ktdp.load %kt : !ktdp.access_tile<1x128x16xindex> -> tensor<1x128x16xf16>
    %k = tensor.collapse_shape %k3 [[0, 1], [2]] : tensor<1x128x16xf16> into tensor<128x16xf16>
    %init = tensor.splat %zero : tensor<8x16xf32>
    %s = linalg.matmul ins(%q, %k : tensor<8x128xf16>, tensor<128x16xf16>) outs(%init : tensor<8x16xf32>) -> tensor<8x16xf32>
    ktdp.store %s, %st : tensor<8x16xf32>, !ktdp.access_tile<8x16xindex>
    return
  }
  func.func @bitcast_bound(%x_ptr: index, %y_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %bits = arith.constant 0xFF800000 : i32
    %ninf = arith.bitcast %bits : i32 to f32
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [16, 32], strides: [32, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x32xf32>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [16, 32], strides: [32, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x32xf32>
    %xt = ktdp.construct_access_tile %xv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x32xf32> -> !ktdp.access_tile<16x32xindex>
    %yt = ktdp.construct_access_tile %yv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x32xf32> -> !ktdp.access_tile<16x32xindex>
    %x = ktdp.load %xt : !ktdp.access_tile<16x32xindex> -> tensor<16x32xf32>
    %lower = tensor.splat %ninf : tensor<16x32xf32>
    %y = arith.maximumf %x, %lower : tensor<16x32xf32>
    ktdp.store %y, %yt : tensor<16x32xf32>, !ktdp.access_tile<16x32xindex>
    return
  }
}
