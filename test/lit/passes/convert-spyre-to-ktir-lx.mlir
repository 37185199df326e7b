// RUN: spyre-opt %S/Inputs/swiglu-mlp.mlir -p 'spyre-legalize,spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile,convert-spyre-to-ktir' | filecheck %s

// A tensor kept in LX between two kernels (design note 61) in KTIR. spyre-partition-cores
// keeps %silu (64 x 1024 fp16) in the cores' LX between k0 and k1 on a common 4x4 grid
// (spyre-partition-cores-keep.mlir). Core (x, y), compute tile y * 4 + x, owns rows
// 16x .. 16x + 15 and columns 256y .. 256y + 255: a 16 x 256 x 2 B = 8192 B slice, rows
// 512 B (4 sticks) apart. It sits at the top of the usable LX, 1677696 - 8192 = 1669504,
// element offset 1669504 / 2 = 834752, below which spyre-place-memory keeps the kernel's
// own tiles (`spyre.lx_reserved` = offset, bytes).
//
// The tensor is a distributed view of 16 ct_local parts, each the core's block in global
// coordinates: tile 1 (x = 1, y = 0) holds rows 16..31, tile 4 (x = 0, y = 1) columns
// 256..511.
// CHECK-LABEL: func.func @k0(%0: index, %p_g_weight_t: index, %silu: index) attributes {grid = [4 : i64, 4 : i64], share = "ring", spyre.lx_reserved = array<i64: 1669504, 8192>
// CHECK: %[[OFF:.*]] = arith.constant 834752 : index
// CHECK-NEXT: %[[P0:.*]] = ktdp.construct_memory_view %[[OFF]], sizes: [16, 256], strides: [256, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, ((d0 * -1) + 15) >= 0, d1 >= 0, ((d1 * -1) + 255) >= 0)>, memory_space = #ktdp.memory_space<ct_local, ct_id = 0>} : memref<16x256xf16>
// CHECK-NEXT: ktdp.construct_memory_view %[[OFF]], sizes: [16, 256], strides: [256, 1] {coordinate_set = affine_set<(d0, d1) : ((d0 + -16) >= 0, ((d0 * -1) + 31) >= 0, d1 >= 0, ((d1 * -1) + 255) >= 0)>, memory_space = #ktdp.memory_space<ct_local, ct_id = 1>}
// CHECK: ktdp.construct_memory_view %[[OFF]], sizes: [16, 256], strides: [256, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, ((d0 * -1) + 15) >= 0, (d1 + -256) >= 0, ((d1 * -1) + 511) >= 0)>, memory_space = #ktdp.memory_space<ct_local, ct_id = 4>}
// CHECK: %[[KEPT:.*]] = ktdp.construct_distributed_memory_view(%[[P0]], {{.*}} : memref<16x256xf16>, {{.*}}) : memref<64x1024xf16>
// k0 stores each silu tile into it, the access tile built before the rounding generic so
// the scheduler can round straight into the slice (no DMA, no copy).
// CHECK: linalg.generic {{.*}} attrs =  {spyre.fn = "silu"}
// CHECK: %[[AT:.*]] = ktdp.construct_access_tile %[[KEPT]][
// CHECK-NEXT: tensor.empty() : tensor<16x64xf16>
// CHECK-NEXT: %[[R:.*]] = linalg.generic {{.*}} attrs =  {spyre.fn = "copy"}
// CHECK: ktdp.store %[[R]], %[[AT]] : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
// CHECK: func.return

// k1 builds the same view and loads its tiles of %silu from it for the product.
// CHECK-LABEL: func.func @k1(%0: index, %p_u_weight_t: index, %silu: index, %mul: index) attributes {grid = [4 : i64, 4 : i64], share = "ring", spyre.lx_reserved = array<i64: 1669504, 8192>
// CHECK: %[[OFF1:.*]] = arith.constant 834752 : index
// CHECK: %[[KEPT1:.*]] = ktdp.construct_distributed_memory_view
// CHECK: %[[T:.*]] = ktdp.construct_access_tile %[[KEPT1]][
// CHECK-NEXT: %[[S:.*]] = ktdp.load %[[T]] : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
// CHECK: linalg.generic {{.*}} ins(%[[S]], {{.*}} attrs =  {spyre.fn = "mul"}

// k2 keeps nothing and reserves nothing.
// CHECK-LABEL: func.func @k2
// CHECK-NOT: spyre.lx_reserved
// CHECK-NOT: ct_local
// CHECK: func.return
