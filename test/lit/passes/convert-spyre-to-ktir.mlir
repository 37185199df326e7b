// RUN: spyre-opt %S/Inputs/mlp64x100-tiled.mlir -p convert-spyre-to-ktir | filecheck %s
// RUN: spyre-opt %S/Inputs/mlp64x100-tiled.mlir -p convert-spyre-to-ktir | spyre-opt --print-op-generic | spyre-opt | filecheck %s

// The graph keeps only launches of the kernels.
// CHECK-LABEL: func.func @forward
// CHECK: %[[K0:.*]] = spyre.launch @k0(%x, %w1, %b1)
// CHECK: spyre.launch @k1(%[[K0]], %w2, %b2)

// k1 on grid [2, 1]: core (x, y) owns rows [32x, 32x + 32) of the stick-padded 64x128
// output; one pointer argument per tensor, views over the padded shapes.
// CHECK-LABEL: func.func @k1(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index)
// CHECK-SAME: grid = [2 : i64, 1 : i64]
// CHECK:   %[[X:.*]], %[[Y:.*]] = ktdp.get_compute_tile_id : index, index
// CHECK:   %[[A:.*]] = ktdp.construct_memory_view %{{.*}}, sizes: [64, 128], strides: [128, 1] {coordinate_set = affine_set<{{.*}}>, memory_space = #ktdp.memory_space<global>} : memref<64x128xf16>
// CHECK:   %[[W:.*]] = ktdp.construct_memory_view %{{.*}}, sizes: [128, 128], strides: [128, 1]
// CHECK:   %[[BIAS:.*]] = ktdp.construct_memory_view %{{.*}}, sizes: [1, 128], strides: [128, 1]
// CHECK:   %[[O:.*]] = ktdp.construct_memory_view %{{.*}}, sizes: [64, 128], strides: [128, 1]
// CHECK:   arith.muli %[[X]]
// CHECK:   scf.for
// K fits one 128-wide tile, so the A row block is loaded once per row tile, outside the column loop.
// CHECK:     %[[AT:.*]] = ktdp.construct_access_tile %[[A]][%{{.*}}, %{{.*}}] {access_tile_set = affine_set<{{.*}}>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x128xf16> -> !ktdp.access_tile<32x128xindex>
// CHECK:     ktdp.load %[[AT]] : !ktdp.access_tile<32x128xindex> -> tensor<32x128xf16>
// CHECK:     scf.for
// CHECK:       linalg.fill
// CHECK:       scf.for {{.*}} iter_args
// CHECK:         ktdp.load {{.*}} -> tensor<128x64xf16>
// CHECK:         linalg.generic {{.*}} {spyre.fn = "matmul"}
// CHECK:       ktdp.load {{.*}} -> tensor<1x64xf16>
// CHECK:       linalg.generic {{.*}} {spyre.fn = "add"}
// CHECK:       {spyre.fn = "gelu"}
// CHECK:       math.erf
// CHECK:       {spyre.fn = "copy"}
// CHECK:       arith.truncf
// CHECK:       ktdp.store {{.*}} : tensor<32x64xf16>, !ktdp.access_tile<32x64xindex>
