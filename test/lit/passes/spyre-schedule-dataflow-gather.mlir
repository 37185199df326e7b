// RUN: spyre-opt %s -p convert-spyre-to-ktir | filecheck %s --check-prefix=KTIR
// RUN: spyre-opt %s -p convert-spyre-to-ktir,spyre-place-memory | filecheck %s --check-prefix=LX
// RUN: spyre-opt %s -p convert-spyre-to-ktir,spyre-place-memory,spyre-schedule-dataflow | filecheck %s

// A token embedding: int64 ids [2, 16] (int32 on device, one 128-byte stick per row) pick
// rows of a [100, 64] fp16 table. Grid [2, 2] (fixed here): core x takes ids row x, core y
// ids 8y .. 8y + 7 of it; one tile of 8 ids. The KTIR load goes through an indirect access
// tile whose row subscript reads the ids view at [run, row + r] and whose column is direct.
// KTIR-LABEL: func.func @k0(%w: index, %ids: index, %{{.*}}: index)
// KTIR:      %[[TABLE:.*]] = ktdp.construct_memory_view %w, sizes: [100, 64], strides: [64, 1] {{.*}} : memref<100x64xf16>
// KTIR:      %[[IDS:.*]] = ktdp.construct_memory_view %ids, sizes: [2, 32], strides: [32, 1] {{.*}} : memref<2x32xi32>
// KTIR:      scf.for
// KTIR:        %[[RUNI:.*]] = arith.addi
// KTIR:        scf.for
// KTIR:          %[[ROW:.*]] = arith.addi
// KTIR-NEXT:     %[[T:.*]] = ktdp.construct_indirect_access_tile intermediate_variables(%r, %c) %[[TABLE]][ind(%[[IDS]][%[[RUNI]], %[[ROW]] + %r]), (%c)] {{.*}} : memref<100x64xf16>, memref<2x32xi32> -> !ktdp.access_tile<8x64xindex>
// KTIR-NEXT:     %[[ROWS:.*]] = ktdp.load %[[T]] : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
// KTIR-NEXT:     %[[O:.*]] = ktdp.construct_access_tile %{{.*}}[%[[RUNI]] * 16 + %[[ROW]], 0]
// KTIR-NEXT:     ktdp.store %[[ROWS]], %[[O]]

// The 8 rows of 128 B take one 1024-byte slot (the load runs once per core: one tile); the
// indices two slots of 256 B after it: 8 int32 are 32 B, but they may start anywhere in a
// stick, so one stick more than they fill.
// LX: ktdp.load %{{.*}} {lx_slots = array<i64: 0, 0>, lx_index_slots = array<i64: 1024, 1280>}

// Core 3 = (1, 1): ids row 1 (LPDDR byte 128; the ids are the first input, at 0), ids 8..15
// at bytes 128 + 32 .. 128 + 64, so the stick at 128 is loaded and the gather reads its
// indices 32 B in (LX 1024 + 32 = 1056). The table is the first weight (segment 1,
// 0x400000000 = 17179869184), 100 rows of 128 B: `limit` is 100. The rows land at output
// row 16 + 8 = 24, byte 256 (after the 256-byte ids) + 24 * 128 = 3328.
// CHECK: spyrecode.core attributes {id = 3 : i64}
// CHECK-NEXT: spyrecode.dma_load {ddr = 128 : i64, lx = 1024 : i64, rows = 1 : i64, row_bytes = 128 : i64, ddr_pitch = 128 : i64, lx_pitch = 128 : i64, unit = 0 : i64, deps = array<i64>}
// CHECK-NEXT: spyrecode.dma_gather {ddr = 17179869184 : i64, lx = 0 : i64, rows = 8 : i64, row_bytes = 128 : i64, ddr_pitch = 128 : i64, lx_pitch = 128 : i64, idx = 1056 : i64, limit = 100 : i64, unit = 0 : i64, deps = array<i64: 0>}
// CHECK-NEXT: spyrecode.dma_store {lx = 0 : i64, ddr = 3328 : i64, rows = 8 : i64, row_bytes = 128 : i64, lx_pitch = 128 : i64, ddr_pitch = 128 : i64, unit = 0 : i64, deps = array<i64: 1>}
// CHECK-NEXT: }
builtin.module {
  func.func @forward(%ids: tensor<2x16xi64> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 2, 32>, device_dtype = "i32", pad = "zero"}}) -> tensor<2x16x64xf16> {
    %w = spyre.param {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 100, 64>, device_dtype = "dl16", pad = "zero"}, param_name = "emb.weight"} : tensor<100x64xf16>
    %e = spyre.kernel "k0"(%w, %ids) {fused = ["embedding"], reason = "row gather by index (dma.gather)", spyre.layout = {stick_dim = 2 : i64, padded_shape = array<i64: 2, 16, 64>, device_dtype = "dl16", pad = "zero"}, grid = [2 : i64, 2 : i64], tile = [8 : i64, 64 : i64, 0 : i64]} : (tensor<100x64xf16>, tensor<2x16xi64>) -> tensor<2x16x64xf16> {
    ^bb0(%w_1: tensor<100x64xf16>, %ids_1: tensor<2x16xi64>):
      %e_1 = spyre.gather %w_1, %ids_1 {fx_node = "embedding", spyre.layout = {stick_dim = 2 : i64, padded_shape = array<i64: 2, 16, 64>, device_dtype = "dl16", pad = "zero"}} : tensor<100x64xf16>, tensor<2x16xi64> -> tensor<2x16x64xf16>
      spyre.yield %e_1 : tensor<2x16x64xf16>
    }
    func.return %e : tensor<2x16x64xf16>
  }
}
