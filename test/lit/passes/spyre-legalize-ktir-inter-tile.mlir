// RUN: spyre-opt %s -p spyre-legalize-ktir | filecheck %s --check-prefix=LEGAL
// RUN: spyre-opt %s -p spyre-legalize-ktir,spyre-place-memory,spyre-schedule-dataflow | filecheck %s
// RUN: sed 's/arith.addf \(.lhs, .rhs\)/arith.maximumf \1/' %s | not spyre-opt -p spyre-legalize-ktir 2>&1 | filecheck %s --check-prefix=BAD-MAX
// RUN: sed 's/consumer_tiles_per_group = #same_x,/consumer_tiles_per_group = #same_x, producer_dependency_per_consumer = #all_of_group,/' %s | not spyre-opt -p spyre-legalize-ktir 2>&1 | filecheck %s --check-prefix=BAD-DEP

// Hand-written inter-tile sums (design note 59): a ktdp.inter_tile_produce whose region
// yields a partial computed before it, and a ktdp.inter_tile_reduce whose combiner is one
// arith.addf, become one ring.reduce per core, in place in the partial's LX slot.

// @rms_scale: y = x * rsqrt(mean(x^2)) of a 16x256 f16 x on a [2, 4] grid. Tile (x, y) has
// linear id i = y * 2 + x and owns rows 8x .. 8x+7, columns 64y .. 64y+63. A
// row's sum of squares is spread over the four tiles of one x: group g = i mod 2, the tiles
// g, g+2, g+4, g+6 (first g, stride 2, count 4), all of them consumers (an all-reduce).
// The partial is linalg.reduce's tensor<8xf32>: a column in LX, 8 rows of one f32, a
// 128-byte stick each (1024 B). The produce and reduce keep their 1-D types; the reduce
// gets the partial's tile (spyre.tile = [8, 1]), so the scalar ops on its result are
// columns too and the final generic reads it as a per-row broadcast. The identity, a zero
// splat, becomes a zero fill of that tile, before the produce: the reduce follows the
// produce directly, nothing may take the partial's slot between them. The combiner's
// arith.addf on tensors stays as written.
// LEGAL-LABEL: func.func @rms_scale
// LEGAL:       %partial = linalg.generic {{.*}}spyre.fn = "reduce_sum", spyre.valid_cols = 64 : index, spyre.tile = array<i64: 8, 1>
// LEGAL:       %[[ID:.*]] = linalg.fill {spyre.tile = array<i64: 8, 1>} ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8xf32>)
// LEGAL-NEXT:  %[[F:.*]] = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(d0)[s0] : (d0 >= 0, ((d0 * -1) + 7) >= 0, ((d0 mod 2) + (s0 * -1)) == 0)> -> !ktdp.tile_future<(tensor<8xf32>)
// LEGAL-NEXT:    ^{{.*}}(%{{.*}}: index):
// LEGAL-NEXT:    ktdp.yield_partial %partial : tensor<8xf32>
// LEGAL-NEXT:  }
// LEGAL-NEXT:  %ssq = ktdp.inter_tile_reduce(%[[F]]) {{.*}}identity(%[[ID]] : tensor<8xf32>) {spyre.tile = array<i64: 8, 1>} : {{.*}} -> tensor<8xf32> {
// LEGAL-NEXT:    ^{{.*}}(%lhs: tensor<8xf32>, %rhs: tensor<8xf32>):
// LEGAL-NEXT:    %s = arith.addf %lhs, %rhs : tensor<8xf32>
// LEGAL-NEXT:    ktdp.yield_reduced %s : tensor<8xf32>
// LEGAL-NEXT:  }
// LEGAL:       %ms = linalg.generic {{.*}} ins(%ssq : tensor<8xf32>) {{.*}}spyre.fn = "mul", spyre.scalar = 3.906250e-03 : f32, spyre.tile = array<i64: 8, 1>
// LEGAL:       %r = linalg.generic {{.*}}spyre.fn = "rsqrt", spyre.tile = array<i64: 8, 1>
// LEGAL:       %out = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, {{.*}} ins(%x16, %r : tensor<8x64xf16>, tensor<8xf32>)
// LEGAL-NOT:   tensor.splat
// LEGAL-NOT:   linalg.reduce

// In SpyreCode, core 5 = tile (1, 2), in group 1: tiles 1, 3, 5, 7. Its sfu.reduce sums
// its 64 columns into the partial's column at LX 5120 (8 rows, a 128-byte stick each), then
// one ring.reduce sums that column over first = 1, stride = 2, count = 4 in place, root
// -1: every core of the group gets the sums. The scalar and rsqrt steps work on the
// column in place, and sfu.colwise broadcasts it along the rows of x.
// CHECK:      spyrecode.program "rms_scale" attributes {spyre.schedule = "per-core"
// CHECK:      spyrecode.core attributes {id = 5 : i64}
// CHECK-NEXT: spyrecode.dma_load
// CHECK-NEXT: spyrecode.sfu_binary
// CHECK-NEXT: spyrecode.sfu_reduce {fn = 0 : i64, src = {{[0-9]+}} : i64, dst = [[P:[0-9]+]] : i64, rows = 8 : i64, cols = 64 : i64
// CHECK-NEXT: spyrecode.ring_reduce {src = [[P]] : i64, dst = [[P]] : i64, rows = 8 : i64, cols = 1 : i64, src_pitch = 128 : i64, dst_pitch = 128 : i64, dtype = 0 : i64, first = 1 : i64, count = 4 : i64, stride = 2 : i64, root = -1 : i64, tag = 1 : i64
// CHECK-NEXT: spyrecode.sfu_scalar {fn = 2 : i64, src = [[P]] : i64, dst = [[P]] : i64, rows = 8 : i64, cols = 1 : i64
// CHECK-NEXT: spyrecode.sfu_unary {fn = 10 : i64, src = [[P]] : i64, dst = [[P]] : i64
// CHECK-NEXT: spyrecode.sfu_colwise {fn = 2 : i64, src0 = 0 : i64, src1 = [[P]] : i64
// CHECK-NEXT: spyrecode.dma_store
// CHECK-NEXT: }

// The combiner must be one arith.addf: ring.reduce only adds.
// BAD-MAX: error: kernel @rms_scale: ktdp.inter_tile_reduce (%ssq): its combiner is (arith.maximumf, ktdp.yield_reduced); ring.reduce only adds

// A partial reduction (each consumer folds only the producers a set names) has no ring form,
// even when the set names the whole group.
// BAD-DEP: error: kernel @rms_scale: ktdp.inter_tile_reduce (%ssq): a partial reduction (producer_dependency_per_consumer) has no ring.reduce form

#x_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#x8_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#block = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row_of = affine_map<(d0, d1) -> (d0)>
#same_x = affine_set<(i)[g] : (i >= 0, -i + 7 >= 0, i mod 2 - g == 0)>
#two_groups = affine_set<(g) : (g >= 0, -g + 1 >= 0)>
#all_of_group = affine_set<(p)[c, g] : (p >= 0, -p + 7 >= 0, p mod 2 - g == 0)>
#all4 = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
#tile0 = affine_set<(i)[g] : (i == 0)>
#one_group = affine_set<(g) : (g == 0)>

func.func @rms_scale(%x: index, %y: index) attributes {grid = [2, 4]} {
  %cx, %cy = ktdp.get_compute_tile_id : index, index
  %vx = ktdp.construct_memory_view %x, sizes: [16, 256], strides: [256, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<16x256xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [16, 256], strides: [256, 1] {coordinate_set = #x_set, memory_space = #ktdp.memory_space<global>} : memref<16x256xf16>
  %tx = ktdp.construct_access_tile %vx[%cx * 8, %cy * 64] {access_tile_set = #block, access_tile_order = #id2} : memref<16x256xf16> -> !ktdp.access_tile<8x64xindex>
  %x16 = ktdp.load %tx : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
  %xf = arith.extf %x16 : tensor<8x64xf16> to tensor<8x64xf32>
  %sq = arith.mulf %xf, %xf : tensor<8x64xf32>
  %zero = arith.constant 0.0 : f32
  %z8 = tensor.splat %zero : tensor<8xf32>
  %partial = linalg.reduce { arith.addf } ins(%sq : tensor<8x64xf32>) outs(%z8 : tensor<8xf32>) dimensions = [1]
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #same_x -> !ktdp.tile_future<(tensor<8xf32>), groups = #two_groups> {
  ^bb0(%gid: index):
    ktdp.yield_partial %partial : tensor<8xf32>
  }
  %ssq = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #same_x, identity(%z8 : tensor<8xf32>) : !ktdp.tile_future<(tensor<8xf32>), groups = #two_groups> -> tensor<8xf32> {
  ^bb0(%lhs: tensor<8xf32>, %rhs: tensor<8xf32>):
    %s = arith.addf %lhs, %rhs : tensor<8xf32>
    ktdp.yield_reduced %s : tensor<8xf32>
  }
  %inv_n = arith.constant 3.906250e-03 : f32
  %inv_n8 = tensor.splat %inv_n : tensor<8xf32>
  %ms = arith.mulf %ssq, %inv_n8 : tensor<8xf32>
  %r = math.rsqrt %ms : tensor<8xf32>
  %e16 = tensor.empty() : tensor<8x64xf16>
  %out = linalg.generic {indexing_maps = [#id2, #row_of, #id2], iterator_types = ["parallel", "parallel"]} ins(%xf, %r : tensor<8x64xf32>, tensor<8xf32>) outs(%e16 : tensor<8x64xf16>) {
  ^bb0(%v: f32, %rs: f32, %o: f16):
    %n = arith.mulf %v, %rs : f32
    %n16 = arith.truncf %n : f32 to f16
    linalg.yield %n16 : f16
  } -> tensor<8x64xf16>
  %ty = ktdp.construct_access_tile %vy[%cx * 8, %cy * 64] {access_tile_set = #block, access_tile_order = #id2} : memref<16x256xf16> -> !ktdp.access_tile<8x64xindex>
  ktdp.store %out, %ty : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
  func.return
}

// @rms_scale_first: the same sums of a 8x256 x over a [4, 1] grid (tile i owns columns
// 64i .. 64i+63), reduced to one tile: the consumer set is tile 0 alone, so ring.reduce's
// root is 0 and only core 0 receives the sums. The result is used only under scf.if on
// the tile id (elsewhere it is undefined), whose ops legalize like the kernel's: core 0
// scales its own 64 columns; cores 1 to 3 join the reduce and do nothing else.
// LEGAL-LABEL: func.func @rms_scale_first
// LEGAL:       %ssq = ktdp.inter_tile_reduce
// LEGAL:       scf.if %root {
// LEGAL:         linalg.generic {{.*}} ins(%ssq : tensor<8xf32>) {{.*}}spyre.fn = "mul"
// CHECK:      spyrecode.program "rms_scale_first"
// CHECK:      spyrecode.core attributes {id = 0 : i64}
// CHECK:      spyrecode.ring_reduce {src = [[Q:[0-9]+]] : i64, dst = [[Q]] : i64, rows = 8 : i64, cols = 1 : i64, {{.*}}first = 0 : i64, count = 4 : i64, stride = 1 : i64, root = 0 : i64
// CHECK-NEXT: spyrecode.sfu_scalar {fn = 2 : i64, src = [[Q]] : i64
// CHECK:      spyrecode.dma_store
// CHECK:      spyrecode.core attributes {id = 1 : i64}
// CHECK-NEXT: spyrecode.dma_load
// CHECK-NEXT: spyrecode.sfu_binary
// CHECK-NEXT: spyrecode.sfu_reduce
// CHECK-NEXT: spyrecode.ring_reduce {{{.*}}first = 0 : i64, count = 4 : i64, stride = 1 : i64, root = 0 : i64
// CHECK-NEXT: }
func.func @rms_scale_first(%x: index, %y: index) attributes {grid = [4, 1]} {
  %col, %row = ktdp.get_compute_tile_id : index, index
  %vx = ktdp.construct_memory_view %x, sizes: [8, 256], strides: [256, 1] {coordinate_set = #x8_set, memory_space = #ktdp.memory_space<global>} : memref<8x256xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [8, 64], strides: [64, 1] {coordinate_set = #block, memory_space = #ktdp.memory_space<global>} : memref<8x64xf16>
  %tx = ktdp.construct_access_tile %vx[0, %col * 64] {access_tile_set = #block, access_tile_order = #id2} : memref<8x256xf16> -> !ktdp.access_tile<8x64xindex>
  %x16 = ktdp.load %tx : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
  %xf = arith.extf %x16 : tensor<8x64xf16> to tensor<8x64xf32>
  %sq = arith.mulf %xf, %xf : tensor<8x64xf32>
  %zero = arith.constant 0.0 : f32
  %z8 = tensor.splat %zero : tensor<8xf32>
  %partial = linalg.reduce { arith.addf } ins(%sq : tensor<8x64xf32>) outs(%z8 : tensor<8xf32>) dimensions = [1]
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #all4 -> !ktdp.tile_future<(tensor<8xf32>), groups = #one_group> {
  ^bb0(%gid: index):
    ktdp.yield_partial %partial : tensor<8xf32>
  }
  %ssq = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #tile0, identity(%z8 : tensor<8xf32>) : !ktdp.tile_future<(tensor<8xf32>), groups = #one_group> -> tensor<8xf32> {
  ^bb0(%lhs: tensor<8xf32>, %rhs: tensor<8xf32>):
    %s = arith.addf %lhs, %rhs : tensor<8xf32>
    ktdp.yield_reduced %s : tensor<8xf32>
  }
  %c0 = arith.constant 0 : index
  %root = arith.cmpi eq, %col, %c0 : index
  scf.if %root {
    %inv_n = arith.constant 3.906250e-03 : f32
    %inv_n8 = tensor.splat %inv_n : tensor<8xf32>
    %ms = arith.mulf %ssq, %inv_n8 : tensor<8xf32>
    %r = math.rsqrt %ms : tensor<8xf32>
    %e16 = tensor.empty() : tensor<8x64xf16>
    %out = linalg.generic {indexing_maps = [#id2, #row_of, #id2], iterator_types = ["parallel", "parallel"]} ins(%xf, %r : tensor<8x64xf32>, tensor<8xf32>) outs(%e16 : tensor<8x64xf16>) {
    ^bb0(%v: f32, %rs: f32, %o: f16):
      %n = arith.mulf %v, %rs : f32
      %n16 = arith.truncf %n : f32 to f16
      linalg.yield %n16 : f16
    } -> tensor<8x64xf16>
    %ty = ktdp.construct_access_tile %vy[0, 0] {access_tile_set = #block, access_tile_order = #id2} : memref<8x64xf16> -> !ktdp.access_tile<8x64xindex>
    ktdp.store %out, %ty : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
  }
  func.return
}

// The graph the frontend (spyrec compile) builds around hand-written kernels: one launch
// each, the kernels' arguments in order (`spyre.kernel_args`).
func.func @main(%x: tensor<16x256xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 16, 256>, device_dtype = "dl16", pad = "zero"}}, %x2: tensor<8x256xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 8, 256>, device_dtype = "dl16", pad = "zero"}}) -> (tensor<16x256xf16>, tensor<8x64xf16>) {
  %y = spyre.launch @rms_scale(%x) {spyre.kernel_args = array<i64: 0, 1>, spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 16, 256>, device_dtype = "dl16", pad = "zero"}} : (tensor<16x256xf16>) -> tensor<16x256xf16>
  %z = spyre.launch @rms_scale_first(%x2) {spyre.kernel_args = array<i64: 0, 1>, spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 8, 64>, device_dtype = "dl16", pad = "zero"}} : (tensor<8x256xf16>) -> tensor<8x64xf16>
  func.return %y, %z : tensor<16x256xf16>, tensor<8x64xf16>
}
