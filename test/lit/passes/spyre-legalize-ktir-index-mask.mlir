// spyre-legalize-ktir on the index-dependent and loop-carried constructs of design note 109:
// - a generic whose body selects by a condition on linalg.index is an `index_mask` generic:
//   the value it keeps, computed in the body (a scale), is a generic of its own first; the
//   condition's ops stay in its body;
// - a splat of -inf a loop carries, a row statistic, is a fill in LX before the loop, laid
//   out as a column (spyre.tile [8, 1]);
// - a body that reads linalg.index any other way (here: it keeps a constant either way) is
//   refused by name.
// RUN: spyre-opt %S/../../ktir/conformance/sdpa.mlir -p spyre-legalize-ktir | filecheck %s --check-prefix=MASK
// RUN: spyre-opt %s -p spyre-legalize-ktir | filecheck %s
// RUN: sed 's/%keep = arith.select %c, %x, %ninf : f32/%keep = arith.select %c, %ninf, %ninf : f32/' %s | not spyre-opt -p spyre-legalize-ktir 2>&1 | filecheck %s --check-prefix=BAD

// MASK:      %[[S:[0-9]+]] = linalg.generic {{.*}} ins(%scores : tensor<64x64xf32>){{.*}}spyre.fn = "mul", spyre.scalar = 1.250000e-01 : f32
// MASK:      %masked = linalg.generic {{.*}} ins(%[[S]] : tensor<64x64xf32>){{.*}}spyre.fn = "index_mask", spyre.scalar = 0xff800000 : f32
// MASK-NOT:  spyre.keep_true
// MASK:        linalg.index 0
// MASK:        arith.cmpi ugt

// CHECK-LABEL: func.func @running_max
// CHECK:       %m0 = linalg.fill {spyre.tile = array<i64: 8, 1>} ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8xf32>) -> tensor<8xf32>
// CHECK:       scf.for {{.*}} iter_args(%m = %m0) -> (tensor<8xf32>)
// CHECK:         spyre.fn = "reduce_max"
// CHECK:         spyre.fn = "maximum"
// CHECK:       spyre.fn = "index_mask"{{.*}}spyre.keep_true

// BAD: kernel @running_max: linalg.generic (%masked): the value it keeps (%ninf) is defined outside its body, not a tile

func.func @running_max(%s_ptr: index, %o_ptr: index) attributes {grid = [1, 1]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %ninf = arith.constant 0xFF800000 : f32
  %sv = ktdp.construct_memory_view %s_ptr, sizes: [8, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<8x64xf32>
  %ov = ktdp.construct_memory_view %o_ptr, sizes: [8, 32], strides: [32, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<8x32xf32>
  %m0 = tensor.splat %ninf : tensor<8xf32>
  %mf = scf.for %j = %c0 to %c2 step %c1 iter_args(%m = %m0) -> (tensor<8xf32>) {
    %col = arith.muli %j, %c32 : index
    %st = ktdp.construct_access_tile %sv[%c0, %col] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x64xf32> -> !ktdp.access_tile<8x32xindex>
    %s = ktdp.load %st : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf32>
    %r0 = tensor.splat %ninf : tensor<8xf32>
    %rm = linalg.reduce { arith.maximumf } ins(%s : tensor<8x32xf32>) outs(%r0 : tensor<8xf32>) dimensions = [1]
    %mn = arith.maximumf %m, %rm : tensor<8xf32>
    scf.yield %mn : tensor<8xf32>
  }
  %ot = ktdp.construct_access_tile %ov[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x32xf32> -> !ktdp.access_tile<8x32xindex>
  %st0 = ktdp.construct_access_tile %sv[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x64xf32> -> !ktdp.access_tile<8x32xindex>
  %s0 = ktdp.load %st0 : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s0, %mf : tensor<8x32xf32>, tensor<8xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %x = arith.subf %a, %b : f32
    linalg.yield %x : f32
  } -> tensor<8x32xf32>
  %masked = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = linalg.index 0 : index
    %col = linalg.index 1 : index
    %c = arith.cmpi ule, %col, %r : index
    %keep = arith.select %c, %x, %ninf : f32
    linalg.yield %keep : f32
  } -> tensor<8x32xf32>
  ktdp.store %masked, %ot : tensor<8x32xf32>, !ktdp.access_tile<8x32xindex>
  func.return
}
