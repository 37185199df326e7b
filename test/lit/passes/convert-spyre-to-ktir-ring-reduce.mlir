// RUN: spyre-opt %S/Inputs/row-reductions.mlir -p 'spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile,convert-spyre-to-ktir' | filecheck %s --check-prefix=KTIR
// RUN: spyre-opt %S/Inputs/mlp64x100.mlir -p 'spyre-stickify,spyre-fuse,spyre-partition-cores{share="none" keep_in_lx=false},spyre-tile{share="none"},convert-spyre-to-ktir' | filecheck %s --check-prefix=BIAS

// Reduced rows split over a grid row (design note 59). k0 of row-reductions.mlir sums 4
// rows of 65536 fp16 on a 1x16 grid (spyre-partition-cores-reduce.mlir): core (0, y) =
// core number y owns columns 4096y .. 4096y + 4095 of every row, in two 2x4096 tiles. Its
// one grid row is the tiles i with i mod 1 = 0: all 16 cores (tile (x, y) is y * gm + x).
// Each core reduces its 4096 columns (valid_cols = its share: no column is padding).

// In KTIR each core's partial sum of a row is produced for its grid row and all-reduced
// (consumers = producers), the combiner one arith.addf; the one-column result is stored
// under scf.if by the core with y = 0 alone.
// A group set with an inequality prints as an alias before the module (docs/ktir.md §1).
// KTIR: #groups = affine_set<(d0) : (d0 >= 0, (d0 * -1) >= 0)>
// KTIR: func.func @k0
// KTIR: %[[PART:[0-9]+]] = linalg.generic {{.*}}spyre.fn = "reduce_sum", spyre.valid_cols = 4096 : index
// KTIR: %[[F:[0-9]+]] = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(d0)[s0] : (d0 >= 0, ((d0 * -1) + 15) >= 0, ((d0 mod 1) + (s0 * -1)) == 0)> -> !ktdp.tile_future<(tensor<2x1xf32>), groups = #groups>
// KTIR: ktdp.yield_partial %[[PART]] : tensor<2x1xf32>
// KTIR: %[[SUM:[0-9]+]] = ktdp.inter_tile_reduce(%[[F]]) consumer_tiles_per_group = affine_set<(d0)[s0] : (d0 >= 0, ((d0 * -1) + 15) >= 0, ((d0 mod 1) + (s0 * -1)) == 0)>
// KTIR: arith.addf
// KTIR: ktdp.yield_reduced
// KTIR: %[[FIRST:[0-9]+]] = arith.cmpi eq, %1, %{{[0-9]+}} : index
// KTIR: scf.if %[[FIRST]] {
// KTIR: ktdp.store

// A row operand loaded once (design note 59): k0 of the 64x100 MLP (spyre-tile.mlir) has
// one 64-column tile and two 32-row tiles per core, so its bias row (1 x 64) is loaded
// before the column and row loops, at the core's columns, not once per 32-row tile.
// BIAS: func.func @k0
// BIAS: ktdp.load %{{[0-9]+}} : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
// BIAS-NEXT: scf.for
// BIAS-NOT: access_tile<1x64xindex>
// BIAS: func.return
