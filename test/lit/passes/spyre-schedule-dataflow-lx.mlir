// RUN: spyre-opt %S/Inputs/swiglu-mlp.mlir -p 'spyre-legalize,spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile,convert-spyre-to-ktir,spyre-place-memory,spyre-schedule-dataflow' | filecheck %s
// RUN: spyre-opt %S/Inputs/swiglu-mlp-512.mlir -p 'spyre-legalize,spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile,convert-spyre-to-ktir,spyre-place-memory,spyre-schedule-dataflow' | filecheck %s --check-prefix=CHAIN

// A tensor kept in LX between two kernels (design note 61) in SpyreCode. k0 keeps %silu in
// its cores' LX for k1 on a 4x4 grid: core (x, y) holds rows 16x.. and columns 256y.. of
// it, 16 x 256 fp16 at LX byte 1669504, rows 512 B apart (convert-spyre-to-ktir-lx.mlir).
// Each core computes its 16 x 64 output tiles in 4 column steps of 64 (128 B).
//
// k0: the last SFU op of each tile (rounding f32 to fp16, `src_dtype` 0 -> `dst_dtype` 1)
// writes straight into the slice, each corelet its 8 rows: core 0's first tile at 1669504
// (rows 0-7) and 1669504 + 8 x 512 = 1673600 (rows 8-15), the next tile 128 B further on.
// No dma.store in the whole program: %silu never leaves the chip. The schedule is still
// one template for all cores (the slice's place follows the core's coordinates).
// CHECK: spyrecode.program "k0" attributes {spyre.schedule = "symbolic"
// CHECK: spyrecode.core attributes {id = 0 : i64}
// CHECK-NOT: spyrecode.dma_store
// CHECK: spyrecode.sfu_unary {fn = 0 : i64, src = {{[0-9]+}} : i64, dst = 1669504 : i64, rows = 8 : i64, cols = 64 : i64, src_pitch = 256 : i64, dst_pitch = 512 : i64, src_dtype = 0 : i64, dst_dtype = 1 : i64, unit = 0
// CHECK-NEXT: spyrecode.sfu_unary {fn = 0 : i64, src = {{[0-9]+}} : i64, dst = 1673600 : i64, rows = 8 : i64, {{.*}}dst_pitch = 512 : i64, src_dtype = 0 : i64, dst_dtype = 1 : i64, unit = 1
// CHECK-NOT: spyrecode.dma_store
// CHECK: spyrecode.sfu_unary {fn = 0 : i64, src = {{[0-9]+}} : i64, dst = 1669632 : i64
// CHECK-NOT: spyrecode.dma_store
// CHECK: spyrecode.program "k1"

// k1: no DMA brings %silu in; the product's sfu.binary (fn 2: mul) reads its fp16 tile
// (`src0_dtype` 1) in place in the slice, pitch 512, next to the f32 up-projection tile.
// Its own result %mul goes to LPDDR as usual (dma.store after the rounding).
// CHECK: spyrecode.core attributes {id = 0 : i64}
// CHECK: spyrecode.sfu_binary {fn = 2 : i64, src0 = 1669504 : i64, src1 = {{[0-9]+}} : i64, dst = {{[0-9]+}} : i64, rows = 8 : i64, cols = 64 : i64, src0_pitch = 512 : i64, src1_pitch = 256 : i64, dst_pitch = 256 : i64, src0_dtype = 1 : i64, src1_dtype = 0 : i64
// CHECK-NEXT: spyrecode.sfu_binary {fn = 2 : i64, src0 = 1673600 : i64
// CHECK: spyrecode.dma_store
// CHECK: spyrecode.program "k2"

// The 512-token MLP keeps both tensors on 32x1 (spyre-partition-cores-keep.mlir): each core
// owns 16 whole rows, the slice 16 x 1024 x 2 B = 32768 B at 1677696 - 32768 = 1644928,
// rows 2048 B apart. In k1 the product of a tile reads the silu tile in place (src0) and
// the rounding writes the product over it (dst, the same address), after that read: the
// sfu.unary depends on the sfu.binary. k1 stores nothing.
// CHAIN: spyrecode.program "k1" attributes {spyre.schedule = "symbolic"
// CHAIN: spyrecode.core attributes {id = 0 : i64}
// CHAIN-NOT: spyrecode.dma_store
// CHAIN: spyrecode.sfu_binary {fn = 2 : i64, src0 = 1644928 : i64, src1 = {{[0-9]+}} : i64, dst = [[P:[0-9]+]] : i64, rows = 8 : i64, cols = 64 : i64, src0_pitch = 2048 : i64
// CHAIN-NEXT: spyrecode.sfu_binary {fn = 2 : i64, src0 = 1661312 : i64
// CHAIN-NEXT: spyrecode.sfu_unary {fn = 0 : i64, src = [[P]] : i64, dst = 1644928 : i64, rows = 8 : i64, cols = 64 : i64, src_pitch = 256 : i64, dst_pitch = 2048 : i64
// CHAIN-NOT: spyrecode.dma_store
// CHAIN: spyrecode.program "k2"
// k2's matmul reads its A tiles (8 rows a corelet, 64 of K) where k1 left them, at pitch
// 2048: its only loads are B's, to LX slots at the bottom.
// CHAIN: spyrecode.core attributes {id = 0 : i64}
// CHAIN-NEXT: spyrecode.dma_load {{{.*}}lx = 16384 : i64
// CHAIN: spyrecode.pt_matmul {a = 1644928 : i64, b = 16384 : i64, c = {{[0-9]+}} : i64, m = 8 : i64, k = 64 : i64, n = 128 : i64, a_pitch = 2048 : i64
// CHAIN-NEXT: spyrecode.pt_matmul {a = 1661312 : i64, b = 16384 : i64
