// RUN: spyre-opt %S/Inputs/attention-tiled.mlir -p convert-spyre-to-ktir | filecheck %s
// RUN: spyre-opt %S/Inputs/attention-tiled.mlir -p convert-spyre-to-ktir | spyre-opt --print-op-generic | spyre-opt | filecheck %s

// The graph launches the attention kernel on the stored projections; the head merge after it
// stays a reshape (an alias).
// CHECK-LABEL: func.func @forward
// CHECK:      %[[O:.*]] = spyre.launch @k0(%q, %k, %v)
// CHECK-NEXT: spyre.reshape %[[O]]

// Views: q's [1, 100, 128] rows are two 64-element heads each, 200 unit rows in all; a
// head's query rows are every 2nd unit row, so q is viewed as [200 / 2, 2 * 64] =
// [100, 128] and head h's run of rows is column block h. K and V (one head) are plain
// [100, 64]; the output is written back in the [1, 100, 2, 64] head-minor order, also
// [100, 128].
// CHECK-LABEL: func.func @k0(%q: index, %k: index, %v: index, %{{.*}}: index)
// CHECK-SAME: grid = [2 : i64, 2 : i64]
// CHECK:      %[[X:.*]], %[[Y:.*]] = ktdp.get_compute_tile_id : index, index
// CHECK:      %[[QV:.*]] = ktdp.construct_memory_view %q, sizes: [100, 128], strides: [128, 1]
// CHECK:      %[[KV:.*]] = ktdp.construct_memory_view %k, sizes: [100, 64], strides: [64, 1]
// CHECK:      %[[VV:.*]] = ktdp.construct_memory_view %v, sizes: [100, 64], strides: [64, 1]
// CHECK:      %[[OV:.*]] = ktdp.construct_memory_view %{{.*}}, sizes: [100, 128], strides: [128, 1]
// Core (x, y) takes head x (2 heads / 2 cores) and query rows [50 y, 50 y + 50).
// CHECK:      %[[H0:.*]] = arith.muli %[[X]]
// CHECK:      %[[R0:.*]] = arith.muli %[[Y]]
// CHECK:      scf.for %[[I:.*]] = {{.*}} {
// CHECK-NEXT:   %[[HEAD:.*]] = arith.addi %[[H0]], %[[I]]
// All query heads share key/value head 0 (GQA, group 2): whole K and V at the origin, once
// per head, outside the query loop.
// CHECK-NEXT:   %[[KT:.*]] = ktdp.construct_access_tile %[[KV]][0, 0] {{.*}} -> !ktdp.access_tile<100x64xindex>
// CHECK-NEXT:   %[[K:.*]] = ktdp.load %[[KT]] : !ktdp.access_tile<100x64xindex> -> tensor<100x64xf16>
// CHECK:        %[[V:.*]] = ktdp.load {{.*}} -> tensor<100x64xf16>
// CHECK:        scf.for %[[J:.*]] = {{.*}} {
// CHECK-NEXT:     %[[Q0:.*]] = arith.addi %[[R0]], %[[J]]
// Query head h = head mod 2 (one batch): rows from the core's first query row, column h * 64.
// CHECK-NEXT:     %[[QT:.*]] = ktdp.construct_access_tile %[[QV]][%[[Q0]], %[[HEAD]] mod 2 * 64] {{.*}} -> !ktdp.access_tile<50x64xindex>
// CHECK-NEXT:     %[[Q:.*]] = ktdp.load %[[QT]] {{.*}} -> tensor<50x64xf16>
// Scores = Q K^T: K is read as stored, [n, k], by the map (d1, d2).
// CHECK:          %[[S:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[Q]], %[[K]] : tensor<50x64xf16>, tensor<100x64xf16>) outs({{.*}} : tensor<50x100xf32>) attrs = {spyre.fn = "matmul_nt"}
// Scale by 1/sqrt(64), then the causal mask: key c > query q0 + r gets -30000 (finite).
// CHECK:          %[[SC:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<50x100xf32>) {{.*}} {spyre.fn = "mul", spyre.scalar = 1.250000e-01 : f32}
// CHECK:          %[[M:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], {{.*}} ins(%[[SC]], %[[Q0]] : tensor<50x100xf32>, index) {{.*}} {spyre.fn = "causal_mask", spyre.scalar = -3.000000e+04 : f32}
// CHECK-NEXT:     ^{{.*}}(%[[SV:.*]]: f32, %[[FIRST:.*]]: index, %{{.*}}: f32):
// CHECK-NEXT:       %[[ROW:.*]] = linalg.index 0 : index
// CHECK-NEXT:       %[[QROW:.*]] = arith.addi %[[ROW]], %[[FIRST]] : index
// CHECK-NEXT:       %[[COL:.*]] = linalg.index 1 : index
// CHECK-NEXT:       %[[AFTER:.*]] = arith.cmpi ugt, %[[COL]], %[[QROW]] : index
// CHECK-NEXT:       %[[NEG:.*]] = arith.constant -3.000000e+04 : f32
// CHECK-NEXT:       arith.select %[[AFTER]], %[[NEG]], %[[SV]] : f32
// Softmax over the 100 valid key columns; P is rounded to fp16 for the second matmul.
// CHECK:          %[[MAX:.*]] = linalg.generic {{.*}} ins(%[[M]] : tensor<50x100xf32>) {{.*}} {spyre.fn = "reduce_max", spyre.valid_cols = 100 : index}
// CHECK:          {spyre.fn = "sub"}
// CHECK:          %[[E:.*]] = linalg.generic {{.*}} {spyre.fn = "exp"}
// CHECK:          {spyre.fn = "reduce_sum", spyre.valid_cols = 100 : index}
// CHECK:          %[[P:.*]] = linalg.generic {{.*}} ins(%[[E]], %{{.*}} : tensor<50x100xf32>, tensor<50x1xf32>) outs(%{{.*}} : tensor<50x100xf16>) attrs = {spyre.fn = "div"}
// CHECK:            arith.truncf
// O = P V with k = 100, then rounded to fp16 and stored at the same rows and column block.
// CHECK:          %[[OACC:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, {{.*}} ins(%[[P]], %[[V]] : tensor<50x100xf16>, tensor<100x64xf16>) outs({{.*}} : tensor<50x64xf32>) attrs = {spyre.fn = "matmul"}
// CHECK:          %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[OACC]] : tensor<50x64xf32>) outs({{.*}} : tensor<50x64xf16>) attrs = {spyre.fn = "copy"}
// CHECK:          %[[OT:.*]] = ktdp.construct_access_tile %[[OV]][%[[Q0]], %[[HEAD]] mod 2 * 64] {{.*}} -> !ktdp.access_tile<50x64xindex>
// CHECK-NEXT:     ktdp.store %[[OUT]], %[[OT]] : tensor<50x64xf16>, !ktdp.access_tile<50x64xindex>
