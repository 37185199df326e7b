// RUN: spyre-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// One case per verifier or parser rule of the inter-tile communication ops. As in
// invalid.mlir, each case is checked by a CHECK on the error xDSL prints for its chunk.
// Tile sets are (i)[g]: tile i belongs to group g.

//===--- !ktdp.tile_future -------------------------------------------------------------===//

// A partial is a ranked tensor.
func.func @future_scalar_partial(%f: !ktdp.tile_future<(f32), groups = affine_set<(g) : (g == 0)>>) {
  func.return
}
// CHECK: {{^}}tile_future partial 0 must be a ranked tensor, got f32

// -----

// The group set enumerates group ids: one dim, no symbols.
func.func @future_groups_symbol(%f: !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g)[n] : (g >= 0, n - g - 1 >= 0)>>) {
  func.return
}
// CHECK: {{^}}tile_future groups must be a 1-D set without symbols, got 1 dims and 1 symbols

// -----

func.func @future_groups_2d(%f: !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g, h) : (g == 0, h == 0)>>) {
  func.return
}
// CHECK: {{^}}tile_future groups must be a 1-D set without symbols, got 2 dims and 0 symbols

// -----

//===--- ktdp.inter_tile_produce -------------------------------------------------------===//

// The producer set is (i)[g]; without the group symbol it cannot say who produces for whom.
func.func @produce_no_group_symbol(%p: tensor<4xf32>, %id: tensor<4xf32>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i) : (i >= 0, -i + 3 >= 0)> -> !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<4xf32>
  }
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)> : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> -> tensor<4xf32>
  func.return
}
// CHECK: {{^}}producer_tiles_per_group must have 1 dim and 1 symbol(s), got 1 dims and 0 symbols

// -----

// The region's one argument is the group id, an index.
func.func @produce_block_args(%p: tensor<4xf32>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == g)> -> !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: i32):
    ktdp.yield_partial %p : tensor<4xf32>
  }
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)> : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> -> tensor<4xf32>
  func.return
}
// CHECK: {{^}}inter_tile_produce region takes one index argument (the group id), got (i32)

// -----

// The yielded partials must have the future's types.
func.func @produce_yield_types(%p: tensor<8xf32>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == g)> -> !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<8xf32>
  }
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)> : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> -> tensor<4xf32>
  func.return
}
// CHECK: {{^}}ktdp.yield_partial yields (tensor<8xf32>) but the future carries (tensor<4xf32>)

// -----

// The old spelling repeats the partial types before `->`; they must agree with the future.
func.func @produce_old_spelling_types(%p: tensor<4xf32>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == g)> : tensor<8xf32> -> !ktdp.tile_future<tensor<4xf32>, affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<4xf32>
  }
  func.return
}
// CHECK: {{^ *}}partial types (tensor<8xf32>) differ from the future's (tensor<4xf32>)

// -----

// R1: groups are disjoint. Group g holds tiles g and g+1, so tile 1 is in groups 0 and 1.
func.func @produce_overlapping_groups(%p: tensor<4xf32>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i - g >= 0, -i + g + 1 >= 0)> -> !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g >= 0, -g + 1 >= 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<4xf32>
  }
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i - g == 0)>, producer_dependency_per_consumer = affine_set<(p)[c] : (p - c == 0)> : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g >= 0, -g + 1 >= 0)>> -> tensor<4xf32>
  func.return
}
// CHECK: {{^}}producer tile 1 belongs to groups 0 and 1; producer_tiles_per_group must give disjoint groups

// -----

// R2: a future is delivered exactly once; an unused one is an error too.
func.func @produce_unused(%p: tensor<4xf32>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == g)> -> !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<4xf32>
  }
  func.return
}
// CHECK: {{^}}future result must have exactly one use (its delivery op), got 0

// -----

func.func @produce_two_deliveries(%p: tensor<4xf32>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == g)> -> !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<4xf32>
  }
  %a = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)> : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> -> tensor<4xf32>
  %b = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)> : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> -> tensor<4xf32>
  func.return
}
// CHECK: {{^}}future result must have exactly one use (its delivery op), got 2

// -----

//===--- ktdp.inter_tile_reduce --------------------------------------------------------===//

// The result has the partial's type, or drops only its unit dims (tensor<64xf16> from
// tensor<1x64xf16> is accepted, the public examples' form); 32 elements are not 64.
func.func @reduce_result_type(%f: !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>>, %id: tensor<1x64xf16>) {
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)>, identity(%id : tensor<1x64xf16>) : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<32xf16> {
  ^bb0(%l: tensor<1x64xf16>, %r2: tensor<1x64xf16>):
    ktdp.yield_reduced %l : tensor<1x64xf16>
  }
  func.return
}
// CHECK: {{^}}result types (tensor<32xf16>) must equal the future's partial types (tensor<1x64xf16>), or drop only their unit dims

// -----

// One identity per role, of the role's type.
func.func @reduce_identity_type(%f: !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>>, %id: tensor<1x64xf32>) {
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)>, identity(%id : tensor<1x64xf32>) : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16> {
  ^bb0(%l: tensor<1x64xf16>, %r2: tensor<1x64xf16>):
    ktdp.yield_reduced %l : tensor<1x64xf16>
  }
  func.return
}
// CHECK: {{^}}identity types (tensor<1x64xf32>) must equal the result types (tensor<1x64xf16>)

// -----

// The combiner takes (lhs..., rhs...): two arguments for one role.
func.func @reduce_combiner_args(%f: !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>>, %id: tensor<1x64xf16>) {
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)>, identity(%id : tensor<1x64xf16>) : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16> {
  ^bb0(%l: tensor<1x64xf16>):
    ktdp.yield_reduced %l : tensor<1x64xf16>
  }
  func.return
}
// CHECK: {{^}}combiner takes (tensor<1x64xf16>) but must take (tensor<1x64xf16>, tensor<1x64xf16>): all lhs partials, then all rhs partials

// -----

func.func @reduce_yield_types(%f: !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>>, %id: tensor<1x64xf16>, %other: tensor<64xf16>) {
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)>, identity(%id : tensor<1x64xf16>) : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16> {
  ^bb0(%l: tensor<1x64xf16>, %r2: tensor<1x64xf16>):
    ktdp.yield_reduced %other : tensor<64xf16>
  }
  func.return
}
// CHECK: {{^}}ktdp.yield_reduced yields (tensor<64xf16>) but the future carries (tensor<1x64xf16>)

// -----

// R10: the combiner may run anywhere, in any order, so it must not touch memory.
func.func @reduce_impure_combiner(%f: !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>>, %id: tensor<1x64xf16>, %t: !ktdp.access_tile<1x64xindex>) {
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)>, identity(%id : tensor<1x64xf16>) : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16> {
  ^bb0(%l: tensor<1x64xf16>, %r2: tensor<1x64xf16>):
    %x = ktdp.load %t : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    ktdp.yield_reduced %x : tensor<1x64xf16>
  }
  func.return
}
// CHECK: {{^}}combiner must be pure, but ktdp.load has memory effects

// -----

// The consumer set is (i)[g] like the producer set.
func.func @reduce_consumer_set_symbols(%f: !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>>, %id: tensor<4xf32>) {
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g, h] : (i == 0)>, identity(%id : tensor<4xf32>) : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> -> tensor<4xf32> {
  ^bb0(%l: tensor<4xf32>, %r2: tensor<4xf32>):
    ktdp.yield_reduced %l : tensor<4xf32>
  }
  func.return
}
// CHECK: {{^}}consumer_tiles_per_group must have 1 dim and 1 symbol(s), got 1 dims and 2 symbols

// -----

// The dependency set is (p)[c] or (p)[c, g].
func.func @reduce_dependency_symbols(%f: !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>>, %id: tensor<4xf32>) {
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)>, producer_dependency_per_consumer = affine_set<(p) : (p == 0)>, identity(%id : tensor<4xf32>) : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> -> tensor<4xf32> {
  ^bb0(%l: tensor<4xf32>, %r2: tensor<4xf32>):
    ktdp.yield_reduced %l : tensor<4xf32>
  }
  func.return
}
// CHECK: {{^}}producer_dependency_per_consumer must have 1 dim and 1 or 2 symbol(s), got 1 dims and 0 symbols

// -----

// R13: a reduce delivers to tiles of the group that produced. Tiles 0..3 produce; tile 5 is
// not one of them.
func.func @reduce_consumer_not_producer(%p: tensor<4xf32>, %id: tensor<4xf32>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)> -> !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<4xf32>
  }
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i - 5 == 0)>, identity(%id : tensor<4xf32>) : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> -> tensor<4xf32> {
  ^bb0(%l: tensor<4xf32>, %r2: tensor<4xf32>):
    %s = arith.addf %l, %r2 : tensor<4xf32>
    ktdp.yield_reduced %s : tensor<4xf32>
  }
  func.return
}
// CHECK: {{^}}consumer tiles [5] of group 0 are not producers of it; inter_tile_reduce needs consumer_tiles_per_group within producer_tiles_per_group

// -----

// R14: all-reduce (consumers = producers 0..3) or reduce-to-one; tiles 0 and 1 are neither.
func.func @reduce_to_subset(%p: tensor<4xf32>, %id: tensor<4xf32>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)> -> !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<4xf32>
  }
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>, identity(%id : tensor<4xf32>) : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> -> tensor<4xf32> {
  ^bb0(%l: tensor<4xf32>, %r2: tensor<4xf32>):
    %s = arith.addf %l, %r2 : tensor<4xf32>
    ktdp.yield_reduced %s : tensor<4xf32>
  }
  func.return
}
// CHECK: {{^}}group 0 has consumers [0, 1] and producers [0, 1, 2, 3]: reduce-to-subset is unsupported (consumers must be all producers or one tile)

// -----

// R3: a consumer may only wait on producers of its group. Tile 0 names tiles 0..4; tile 4
// does not produce.
func.func @reduce_dependency_outside(%p: tensor<4xf32>, %id: tensor<4xf32>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)> -> !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<4xf32>
  }
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)>, producer_dependency_per_consumer = affine_set<(p)[c] : (p >= 0, -p + 4 >= 0)>, identity(%id : tensor<4xf32>) : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> -> tensor<4xf32> {
  ^bb0(%l: tensor<4xf32>, %r2: tensor<4xf32>):
    %s = arith.addf %l, %r2 : tensor<4xf32>
    ktdp.yield_reduced %s : tensor<4xf32>
  }
  func.return
}
// CHECK: {{^}}consumer tile 0 of group 0 depends on tiles [4], which are not producers of that group

// -----

// R4: every producer's contribution is read by some consumer. Tile 0 reads only 0..1.
func.func @reduce_producer_unread(%p: tensor<4xf32>, %id: tensor<4xf32>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)> -> !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<4xf32>
  }
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)>, producer_dependency_per_consumer = affine_set<(p)[c] : (p >= 0, -p + 1 >= 0)>, identity(%id : tensor<4xf32>) : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> -> tensor<4xf32> {
  ^bb0(%l: tensor<4xf32>, %r2: tensor<4xf32>):
    %s = arith.addf %l, %r2 : tensor<4xf32>
    ktdp.yield_reduced %s : tensor<4xf32>
  }
  func.return
}
// CHECK: {{^}}producer tiles [2, 3] of group 0 are read by no consumer (producer_dependency_per_consumer must cover every producer)

// -----

//===--- ktdp.inter_tile_consume -------------------------------------------------------===//

// R8: consume has no combiner, so each consumer needs one source. Group 0 has producers 0
// and 1 and no dependency set to choose between them.
func.func @consume_two_sources(%p: tensor<4xf32>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)> -> !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<4xf32>
  }
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)> : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> -> tensor<4xf32>
  func.return
}
// CHECK: {{^}}consumer tile 0 of group 0 receives from 2 producers [0, 1]; inter_tile_consume needs exactly one; name one with producer_dependency_per_consumer

// -----

// R8 with a dependency set: it pairs consumer c with producer c - 2, which exists for
// consumers 2 and 3 only; consumer 0 would read tile -2 and has no source.
func.func @consume_no_source(%p: tensor<4xf32>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)> -> !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<4xf32>
  }
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>, producer_dependency_per_consumer = affine_set<(p)[c] : (p - c + 2 == 0)> : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> -> tensor<4xf32>
  func.return
}
// CHECK: {{^}}consumer tile 0 of group 0 receives from 0 producers []; inter_tile_consume needs exactly one

// -----

// Broadcast delivers the partial unchanged: the result type is the partial type.
func.func @consume_result_type(%f: !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>>) {
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)> : !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>> -> tensor<4xf16>
  func.return
}
// CHECK: {{^}}result types (tensor<4xf16>) must equal the future's partial types (tensor<4xf32>), or drop only their unit dims
