// RUN: spyre-opt %S/Inputs/layernorm64x256-tiled.mlir -p convert-spyre-to-ktir,spyre-place-memory | filecheck %s

// spyre-place-memory's liveness reuse of LX slots, on a fused layer norm over 64 rows of 256
// fp16 columns, split over 32 cores: 2 rows per core, one tile of 2 x 256. A computed tile
// takes the slot pair of a dead computed tile of the same loop body with the same geometry
// (rows and LX row pitch); loads never give or take slots.
//
// The kernel's total, worked out below:
// CHECK: func.func @k0{{.*}}spyre.lx_bytes = 12800 : i64
// The input tile (2 rows of 512 B) runs once per core: one slot, 1024 B at 0.
// CHECK: ktdp.load {{.*}}lx_slots = array<i64: 0, 0>{{.*}}-> tensor<2x256xf16>
// The row mean: 2 rows of one 128 B stick, f32, two slots: 1024 and 1280.
// CHECK: linalg.fill {lx_slots = array<i64: 1024, 1280>}
// The centred tile x - mean (f32, 2 rows of 1024 B): a new pair, 1536 and 3584.
// CHECK: lx_slots = array<i64: 1536, 3584>
// Its square: the centred tile is read again later (it is normalised), so a new pair,
// 5632 and 7680.
// CHECK: lx_slots = array<i64: 5632, 7680>
// The variance's accumulator: the mean's last reader (the subtraction) has run and it has
// the mean's geometry, so it takes 1024 / 1280 again.
// CHECK: linalg.fill {lx_slots = array<i64: 1024, 1280>}
// The normalised tile (x - mean) * rstd cannot run in place (the centred tile has other
// readers), but the square died at the variance's reduction: it takes 5632 / 7680.
// CHECK: ins(%{{[0-9]+}}, %{{[0-9]+}} : tensor<2x256xf32>, tensor<2x1xf32>){{.*}}lx_slots = array<i64: 5632, 7680>
// The weight and bias rows are loads: slots of their own (one each, they run once).
// CHECK: ktdp.load {{.*}}lx_slots = array<i64: 9728, 9728>
// CHECK: ktdp.load {{.*}}lx_slots = array<i64: 10240, 10240>
// The fp16 result (2 rows of 512 B) has no dead tile of its geometry (the f32 tiles' rows
// are 1024 B: putting it there would move the second corelet's half of the rows), so a
// new pair: 10752 and 11776, ending at 12800 B. Without reuse the second accumulator and
// the normalised tile took 512 + 4096 B more: 17408 B.
// CHECK: outs(%{{[0-9]+}} : tensor<2x256xf16>){{.*}}lx_slots = array<i64: 10752, 11776>
