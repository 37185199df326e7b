// Kernels for test_ktir_stored_broadcasts.py and test/lit/ktir-backend/stored-broadcasts.mlir:
// constructs of the public ktir-cpu kernels the back end takes since design note 94:
// - @row_max_select: a row max whose linalg.reduce combiner is written out as arith.cmpf ogt
//   + arith.select (NaN elements skipped), its column broadcast over the rows and stored;
// - @row_sum_splat: a row sum extracted and splatted over its one row, stored as it is;
// - @scalar_fill: one loaded element collapsed to rank 0, broadcast over 32x64 and stored;
// - @row_fill: one loaded row broadcast over 16 rows and stored.
// - @row_minus_tile, @row_over_tile: a row broadcast over the rows as the first operand of
//   an op that does not commute (sfu.binary reads it with pitch 0 in place).
module {
  func.func @row_max_select(%x_ptr: index, %y_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %xt = ktdp.construct_access_tile %xv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    %yt = ktdp.construct_access_tile %yv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    %x = ktdp.load %xt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    %lowest = arith.constant 0xFC00 : f16
    %init = tensor.empty() : tensor<16xf16>
    %filled = linalg.fill ins(%lowest : f16) outs(%init : tensor<16xf16>) -> tensor<16xf16>
    %max = linalg.reduce ins(%x : tensor<16x64xf16>) outs(%filled : tensor<16xf16>) dimensions = [1]
      (%in: f16, %acc: f16) {
        %gt = arith.cmpf ogt, %in, %acc : f16
        %m = arith.select %gt, %in, %acc : f16
        linalg.yield %m : f16
      }
    %empty = tensor.empty() : tensor<16x64xf16>
    %y = linalg.broadcast ins(%max : tensor<16xf16>) outs(%empty : tensor<16x64xf16>) dimensions = [1]
    ktdp.store %y, %yt : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
    return
  }

  func.func @row_sum_splat(%x_ptr: index, %y_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f16
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [1, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<1x64xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [1, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<1x64xf16>
    %xt = ktdp.construct_access_tile %xv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
    %yt = ktdp.construct_access_tile %yv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
    %x = ktdp.load %xt : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    %init = tensor.empty() : tensor<1xf16>
    %filled = linalg.fill ins(%zero : f16) outs(%init : tensor<1xf16>) -> tensor<1xf16>
    %sum = linalg.reduce ins(%x : tensor<1x64xf16>) outs(%filled : tensor<1xf16>) dimensions = [1]
      (%in: f16, %acc: f16) {
        %s = arith.addf %in, %acc : f16
        linalg.yield %s : f16
      }
    %total = tensor.extract %sum[%c0] : tensor<1xf16>
    %y = tensor.splat %total : tensor<1x64xf16>
    ktdp.store %y, %yt : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    return
  }

  func.func @scalar_fill(%x_ptr: index, %y_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [1, 1], strides: [1, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<1x1xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<32x64xf16>
    %xt = ktdp.construct_access_tile %xv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<1x1xf16> -> !ktdp.access_tile<1x1xindex>
    %yt = ktdp.construct_access_tile %yv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<32x64xf16> -> !ktdp.access_tile<32x64xindex>
    %x = ktdp.load %xt : !ktdp.access_tile<1x1xindex> -> tensor<1x1xf16>
    %s = tensor.collapse_shape %x [] : tensor<1x1xf16> into tensor<f16>
    %empty = tensor.empty() : tensor<32x64xf16>
    %y = linalg.broadcast ins(%s : tensor<f16>) outs(%empty : tensor<32x64xf16>) dimensions = [0, 1]
    ktdp.store %y, %yt : tensor<32x64xf16>, !ktdp.access_tile<32x64xindex>
    return
  }

  func.func @row_fill(%x_ptr: index, %y_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [64], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<64xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %xt = ktdp.construct_access_tile %xv[%c0] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>
    } : memref<64xf16> -> !ktdp.access_tile<64xindex>
    %yt = ktdp.construct_access_tile %yv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    %x = ktdp.load %xt : !ktdp.access_tile<64xindex> -> tensor<64xf16>
    %empty = tensor.empty() : tensor<16x64xf16>
    %y = linalg.broadcast ins(%x : tensor<64xf16>) outs(%empty : tensor<16x64xf16>) dimensions = [0]
    ktdp.store %y, %yt : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
    return
  }

  func.func @row_minus_tile(%r_ptr: index, %x_ptr: index, %y_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %rv = ktdp.construct_memory_view %r_ptr, sizes: [64], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<64xf16>
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %rt = ktdp.construct_access_tile %rv[%c0] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>
    } : memref<64xf16> -> !ktdp.access_tile<64xindex>
    %xt = ktdp.construct_access_tile %xv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    %yt = ktdp.construct_access_tile %yv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    %r = ktdp.load %rt : !ktdp.access_tile<64xindex> -> tensor<64xf16>
    %x = ktdp.load %xt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    %empty = tensor.empty() : tensor<16x64xf16>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r, %x : tensor<64xf16>, tensor<16x64xf16>) outs(%empty : tensor<16x64xf16>) {
    ^bb0(%a: f16, %b: f16, %o: f16):
      %v = arith.subf %a, %b : f16
      linalg.yield %v : f16
    } -> tensor<16x64xf16>
    ktdp.store %y, %yt : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
    return
  }

  func.func @row_over_tile(%r_ptr: index, %x_ptr: index, %y_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %rv = ktdp.construct_memory_view %r_ptr, sizes: [64], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<64xf16>
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>
    } : memref<16x64xf16>
    %rt = ktdp.construct_access_tile %rv[%c0] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>
    } : memref<64xf16> -> !ktdp.access_tile<64xindex>
    %xt = ktdp.construct_access_tile %xv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    %yt = ktdp.construct_access_tile %yv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    %r = ktdp.load %rt : !ktdp.access_tile<64xindex> -> tensor<64xf16>
    %x = ktdp.load %xt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    %empty = tensor.empty() : tensor<16x64xf16>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r, %x : tensor<64xf16>, tensor<16x64xf16>) outs(%empty : tensor<16x64xf16>) {
    ^bb0(%a: f16, %b: f16, %o: f16):
      %v = arith.divf %a, %b : f16
      linalg.yield %v : f16
    } -> tensor<16x64xf16>
    ktdp.store %y, %yt : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
    return
  }
}
