// Constructs of the public ktir-cpu kernels through the back end (design note 89; kernels:
// test/python/ktir/kernels/field_constructs.mlir; numerics and injected bugs:
// test_ktir_field_constructs.py; the CHECKED lines run the emulator against the interpreter):
// - a grid [4, 1, 1] is [4, 1]; a tile id read as (x, y, z) reads (x, y) and z is 0;
// - scalar ops on an extracted row statistic (divf, addf, rsqrt) are SFU ops on its
//   one-element tile, and the splat broadcasts the computed column along the row;
// - a distributed view of two column blocks of one tensor is a view of the whole tensor;
// - a partial flattened for an inter-tile sum and expanded after it is summed as it is.
// RUN: spyrec compile %S/../../python/ktir/kernels/field_constructs.mlir --function grid_3d --emit=ktir 2>/dev/null | FileCheck --check-prefix=GRID %s
// RUN: spyrec compile %S/../../python/ktir/kernels/field_constructs.mlir --function row_rstd --arg eps=1e-5 --emit=ktir 2>/dev/null | FileCheck --check-prefix=RSTD %s
// RUN: spyrec compile %S/../../python/ktir/kernels/field_constructs.mlir --function column_blocks --emit=ktir 2>/dev/null | FileCheck --check-prefix=BLOCKS %s
// RUN: spyrec compile %S/../../python/ktir/kernels/field_constructs.mlir --function flat_sum --emit=ktir 2>/dev/null | FileCheck --check-prefix=FLAT %s
// RUN: spyrec compile %S/../../python/ktir/kernels/field_constructs.mlir --function row_rstd --arg eps=1e-5 -o %t.rstd.spyre 2>/dev/null
// RUN: spyrec run %t.rstd.spyre --check %S/../../python/ktir/kernels/field_constructs.mlir 2>&1 | FileCheck --check-prefix=CHECKED-RSTD %s
// RUN: spyrec compile %S/../../python/ktir/kernels/field_constructs.mlir --function column_blocks -o %t.blocks.spyre 2>/dev/null
// RUN: spyrec run %t.blocks.spyre --check %S/../../python/ktir/kernels/field_constructs.mlir --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED-BLOCKS %s

// GRID-LABEL: func.func @grid_3d
// GRID-SAME:  grid = [4 : i64, 1 : i64]
// GRID-NEXT:  %px, %py = ktdp.get_compute_tile_id : index, index
// GRID-NEXT:  %pz = arith.constant 0 : index

// RSTD-LABEL: func.func @row_rstd
// RSTD:       {spyre.fn = "reduce_sum"
// RSTD:       ins(%sum : tensor<1xf16>) {{.*}} {spyre.fn = "div", spyre.scalar = 2.560000e+02 : f32
// RSTD:       ins(%[[MEAN:.*]] : tensor<1xf16>) {{.*}} {spyre.fn = "add", spyre.scalar = 1.00135803e-05 : f32
// RSTD:       ins(%[[SHIFTED:.*]] : tensor<1xf16>) {{.*}} {spyre.fn = "rsqrt"
// RSTD:       %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, {{.*}} {spyre.fn = "mul"
// RSTD-NOT:   tensor.splat
// RSTD-NOT:   tensor.extract

// BLOCKS-LABEL: func.func @column_blocks
// BLOCKS-NOT:   construct_distributed_memory_view
// BLOCKS:       %wv = ktdp.construct_memory_view %w_ptr, sizes: [16, 256], strides: [256, 1]
// BLOCKS-NOT:   construct_distributed_memory_view

// FLAT-LABEL: func.func @flat_sum
// FLAT-NOT:   tensor.collapse_shape
// FLAT:       ktdp.inter_tile_produce {{.*}} -> !ktdp.tile_future<(tensor<2x64xf16>)
// FLAT-NEXT:  ^bb0(%gid: index):
// FLAT-NEXT:    ktdp.yield_partial %x : tensor<2x64xf16>
// FLAT:       %sum_flat = ktdp.inter_tile_reduce(%fut) {{.*}} -> tensor<2x64xf16>
// FLAT:         arith.addf {{.*}} : tensor<2x64xf16>
// FLAT-NOT:   tensor.expand_shape

// CHECKED-RSTD: y_ptr: ok
// CHECKED-BLOCKS: y_ptr: ok
// CHECKED-BLOCKS-NEXT: worst element {{.*}} error 0,
