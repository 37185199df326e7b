// RUN: spyre-opt %s | spyre-opt | filecheck %s
// RUN: spyre-opt %s --print-op-generic | spyre-opt | filecheck %s
// RUN: spyre-opt %s > %t.custom.mlir && spyre-opt %t.custom.mlir | diff %t.custom.mlir -
// RUN: spyre-opt %s --print-op-generic > %t.generic.mlir && spyre-opt %t.generic.mlir --print-op-generic | diff %t.generic.mlir -

// Inter-tile communication: every op and spelling survives print -> parse -> print, custom and
// generic. Tile sets are `(i)[g]` (tile i is in group g); xDSL prints `4 * g` as `(s0 * 4)`.

// A group set with an inequality prints as an alias before the module: upstream MLIR without
// ktdp reads a dialect type's body by matching brackets, and the `>` of an inline `>=` would
// end the type early. Sets of equalities print inline.
// CHECK: #groups = affine_set<(d0) : (d0 >= 0, ((d0 * -1) + 7) >= 0)>
// CHECK-NEXT: #groups1 = affine_set<(d0) : (d0 >= 0, ((d0 * -1) + 3) >= 0)>
// CHECK-NOT: #groups2

#groups8 = affine_set<(g) : (g >= 0, -g + 7 >= 0)>
#quad = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>

//===--- all-reduce --------------------------------------------------------------------===//

// 32 tiles in 8 groups of 4; every tile contributes a 1x64 partial sum and every tile of the
// group receives the group's total. The future type may be written bare inside the ops.
// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[P:.*]]: tensor<1x64xf16>, %[[ZERO:.*]]: tensor<1x64xf16>)
func.func @all_reduce(%partial: tensor<1x64xf16>, %zero: tensor<1x64xf16>) -> tensor<1x64xf16> attributes {grid = [32, 1]} {
  // CHECK-NEXT: %[[F:.*]] = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(d0)[s0] : ((d0 + (s0 * -4)) >= 0, (((d0 * -1) + (s0 * 4)) + 3) >= 0)> -> !ktdp.tile_future<(tensor<1x64xf16>), groups = #groups> {
  // CHECK-NEXT: ^{{.*}}(%{{.*}}: index):
  // CHECK-NEXT:   ktdp.yield_partial %[[P]] : tensor<1x64xf16>
  // CHECK-NEXT: }
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #quad -> <(tensor<1x64xf16>), groups = #groups8> {
  ^bb0(%gid: index):
    ktdp.yield_partial %partial : tensor<1x64xf16>
  }
  // CHECK-NEXT: %[[R:.*]] = ktdp.inter_tile_reduce(%[[F]]) consumer_tiles_per_group = affine_set<(d0)[s0] : ((d0 + (s0 * -4)) >= 0, (((d0 * -1) + (s0 * 4)) + 3) >= 0)>, identity(%[[ZERO]] : tensor<1x64xf16>) : !ktdp.tile_future<(tensor<1x64xf16>), groups = #groups> -> tensor<1x64xf16> {
  // CHECK-NEXT: ^{{.*}}(%[[L:.*]]: tensor<1x64xf16>, %[[RHS:.*]]: tensor<1x64xf16>):
  // CHECK-NEXT:   %[[S:.*]] = arith.addf %[[L]], %[[RHS]] : tensor<1x64xf16>
  // CHECK-NEXT:   ktdp.yield_reduced %[[S]] : tensor<1x64xf16>
  // CHECK-NEXT: }
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #quad, identity(%zero : tensor<1x64xf16>) : <(tensor<1x64xf16>), groups = #groups8> -> tensor<1x64xf16> {
  ^bb0(%lhs: tensor<1x64xf16>, %rhs: tensor<1x64xf16>):
    %s = arith.addf %lhs, %rhs : tensor<1x64xf16>
    ktdp.yield_reduced %s : tensor<1x64xf16>
  }
  func.return %r : tensor<1x64xf16>
}

//===--- reduce-to-one with two roles and a dependency set ------------------------------===//

// An argmax over 4 tiles: each tile offers (value, index); tile 0 alone receives the winner.
// The dependency set (p)[c, g] lets consumer c wait for producers 4g .. 4g+3 only, which is
// its whole group here; it is spelled out to exercise the optional attribute.
// CHECK-LABEL: func.func @argmax_to_one
func.func @argmax_to_one(%v: tensor<8xf32>, %i: tensor<8xi32>, %vid: tensor<8xf32>, %iid: tensor<8xi32>) -> (tensor<8xf32>, tensor<8xi32>) attributes {grid = [4, 1]} {
  // CHECK: ktdp.inter_tile_produce producer_tiles_per_group = {{.*}} -> !ktdp.tile_future<(tensor<8xf32>, tensor<8xi32>), groups = affine_set<(d0) : (d0 == 0)>>
  // CHECK: ktdp.yield_partial %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8xi32>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)> -> !ktdp.tile_future<(tensor<8xf32>, tensor<8xi32>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %v, %i : tensor<8xf32>, tensor<8xi32>
  }
  // CHECK: %{{.*}}, %{{.*}} = ktdp.inter_tile_reduce(%{{.*}}) consumer_tiles_per_group = affine_set<(d0)[s0] : (d0 == 0)>, producer_dependency_per_consumer = affine_set<(d0)[s0, s1] : ((d0 + (s1 * -4)) >= 0, (((d0 * -1) + (s1 * 4)) + 3) >= 0)>, identity(%{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8xi32>) : !ktdp.tile_future<(tensor<8xf32>, tensor<8xi32>), groups = affine_set<(d0) : (d0 == 0)>> -> tensor<8xf32>, tensor<8xi32> {
  // CHECK-NEXT: ^{{.*}}(%{{.*}}: tensor<8xf32>, %{{.*}}: tensor<8xi32>, %{{.*}}: tensor<8xf32>, %{{.*}}: tensor<8xi32>):
  // CHECK: ktdp.yield_reduced %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8xi32>
  %r:2 = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)>, producer_dependency_per_consumer = affine_set<(p)[c, g] : (p - 4 * g >= 0, -p + 4 * g + 3 >= 0)>, identity(%vid, %iid : tensor<8xf32>, tensor<8xi32>) : !ktdp.tile_future<(tensor<8xf32>, tensor<8xi32>), groups = affine_set<(g) : (g == 0)>> -> tensor<8xf32>, tensor<8xi32> {
  ^bb0(%lv: tensor<8xf32>, %li: tensor<8xi32>, %rv: tensor<8xf32>, %ri: tensor<8xi32>):
    %keep = arith.cmpf oge, %lv, %rv : tensor<8xf32>
    %bv = arith.select %keep, %lv, %rv : tensor<8xi1>, tensor<8xf32>
    %bi = arith.select %keep, %li, %ri : tensor<8xi1>, tensor<8xi32>
    ktdp.yield_reduced %bv, %bi : tensor<8xf32>, tensor<8xi32>
  }
  func.return %r#0, %r#1 : tensor<8xf32>, tensor<8xi32>
}

//===--- broadcast and routing ---------------------------------------------------------===//

// Tile 4g loads a weight block and the other tiles of its group receive it. This is the
// older spelling from the design doc (`: T -> !ktdp.tile_future<T, #G>`); it prints in the
// current form.
// CHECK-LABEL: func.func @broadcast
func.func @broadcast(%t: !ktdp.access_tile<64x128xindex>) -> tensor<64x128xf16> attributes {grid = [4, 1]} {
  // CHECK: ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(d0)[s0] : ((d0 + (s0 * -4)) == 0)> -> !ktdp.tile_future<(tensor<64x128xf16>), groups = affine_set<(d0) : (d0 == 0)>> {
  // CHECK: ktdp.load
  // CHECK: ktdp.yield_partial
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i - 4 * g == 0)> : tensor<64x128xf16> -> !ktdp.tile_future<tensor<64x128xf16>, affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    %w = ktdp.load %t : !ktdp.access_tile<64x128xindex> -> tensor<64x128xf16>
    ktdp.yield_partial %w : tensor<64x128xf16>
  }
  // CHECK: ktdp.inter_tile_consume(%{{.*}}) consumer_tiles_per_group = affine_set<(d0)[s0] : ((d0 + (s0 * -4)) >= 0, (((d0 * -1) + (s0 * 4)) + 3) >= 0)> : !ktdp.tile_future<(tensor<64x128xf16>), groups = affine_set<(d0) : (d0 == 0)>> -> tensor<64x128xf16>
  %w = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #quad : !ktdp.tile_future<tensor<64x128xf16>, groups = affine_set<(g) : (g == 0)>> -> tensor<64x128xf16>
  func.return %w : tensor<64x128xf16>
}

// Pairs of tiles swap their partials: in group g (tiles 2g, 2g+1) consumer c reads from the
// other tile p = 4g + 1 - c. Each consumer has exactly one source, as consume requires.
// CHECK-LABEL: func.func @swap_pairs
func.func @swap_pairs(%mine: tensor<4x64xf16>) -> tensor<4x64xf16> attributes {grid = [8, 1]} {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i - 2 * g >= 0, -i + 2 * g + 1 >= 0)> -> !ktdp.tile_future<(tensor<4x64xf16>), groups = affine_set<(g) : (g >= 0, -g + 3 >= 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %mine : tensor<4x64xf16>
  }
  // CHECK: ktdp.inter_tile_consume(%{{.*}}) consumer_tiles_per_group = {{.*}}, producer_dependency_per_consumer = affine_set<(d0)[s0, s1] : ((((d0 + s0) + (s1 * -4)) + -1) == 0)> : {{.*}} -> tensor<4x64xf16>
  %other = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i - 2 * g >= 0, -i + 2 * g + 1 >= 0)>, producer_dependency_per_consumer = affine_set<(p)[c, g] : (p + c - 4 * g - 1 == 0)> : !ktdp.tile_future<(tensor<4x64xf16>), groups = affine_set<(g) : (g >= 0, -g + 3 >= 0)>> -> tensor<4x64xf16>
  func.return %other : tensor<4x64xf16>
}

//===--- the future type on its own ----------------------------------------------------===//

// All three spellings of the type name the same type; a future can cross a call boundary.
// CHECK-LABEL: func.func @future_spellings
// CHECK-SAME: (%{{.*}}: !ktdp.tile_future<(tensor<2xf32>), groups = affine_set<(d0) : (d0 == 0)>>, %{{.*}}: !ktdp.tile_future<(tensor<2xf32>), groups = affine_set<(d0) : (d0 == 0)>>, %{{.*}}: !ktdp.tile_future<(tensor<2xf32>, tensor<2xi64>), groups = affine_set<(d0) : (d0 == 0)>>)
func.func @future_spellings(%a: !ktdp.tile_future<(tensor<2xf32>), groups = affine_set<(g) : (g == 0)>>, %b: !ktdp.tile_future<tensor<2xf32>, groups = affine_set<(g) : (g == 0)>>, %c: !ktdp.tile_future<tensor<2xf32>, tensor<2xi64>, affine_set<(g) : (g == 0)>>) {
  func.return
}
