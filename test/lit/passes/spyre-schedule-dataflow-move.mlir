// RUN: spyre-opt %s -p convert-spyre-to-ktir | filecheck %s --check-prefix=KTIR
// RUN: spyre-opt %s -p convert-spyre-to-ktir,spyre-place-memory,spyre-schedule-dataflow | filecheck %s

// A head transpose [2, 16, 2, 64] -> [2, 2, 16, 64] fp16 that folds into nothing runs as a
// DMA-only kernel. Output run (b, h) is rows (b * 16 + s) * 2 + h of the input: stride 2, so
// the input is viewed as [64 / 2, 2 * 64] = [32, 128] and run (b, h) is column block h from
// row b * 16. Grid [2, 2] (fixed here): core x takes runs 2x, 2x + 1, core y rows 8y.. of
// each; tiles of 8 rows.
// KTIR-LABEL: func.func @k0(%q: index, %{{.*}}: index)
// KTIR:      %[[IN:.*]] = ktdp.construct_memory_view %q, sizes: [32, 128], strides: [128, 1]
// KTIR:      %[[OUT:.*]] = ktdp.construct_memory_view %{{.*}}, sizes: [64, 64], strides: [64, 1]
// KTIR:      scf.for
// KTIR:        %[[RUNI:.*]] = arith.addi
// KTIR:        scf.for
// KTIR:          %[[ROW:.*]] = arith.addi
// KTIR-NEXT:     %[[T:.*]] = ktdp.construct_access_tile %[[IN]][%[[RUNI]] floordiv 2 * 16 + %[[ROW]], %[[RUNI]] mod 2 * 64] {{.*}} -> !ktdp.access_tile<8x64xindex>
// KTIR-NEXT:     %[[ROWS:.*]] = ktdp.load %[[T]] : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
// KTIR-NEXT:     %[[O:.*]] = ktdp.construct_access_tile %[[OUT]][%[[RUNI]] * 16 + %[[ROW]], 0]
// KTIR-NEXT:     ktdp.store %[[ROWS]], %[[O]]

// Core 3 = (1, 1): runs 2 and 3 = (b 1, h 0) and (b 1, h 1), rows 8..15 of each. Run 2's
// rows start at input row (1 * 16 + 8) * 2 + 0 = 48, byte 48 * 128 = 6144, every other row
// (pitch 256); they land contiguously at output row 2 * 16 + 8 = 40, byte 8192 + 40 * 128 =
// 13312 (the output follows the 2 * 16 * 2 * 128 = 8192-byte input). Loads alternate between
// two LX slots, so the second load waits for nothing and is issued before the first store;
// each store waits only for its own load.
// CHECK: spyrecode.core attributes {id = 3 : i64}
// CHECK-NEXT: spyrecode.dma_load {ddr = 6144 : i64, lx = 0 : i64, rows = 8 : i64, row_bytes = 128 : i64, ddr_pitch = 256 : i64, lx_pitch = 128 : i64, unit = 0 : i64, deps = array<i64>}
// Run 3 = (b 1, h 1): input byte 6144 + 128 = 6272, output row 56 -> 8192 + 7168 = 15360.
// CHECK-NEXT: spyrecode.dma_load {ddr = 6272 : i64, lx = 1024 : i64, rows = 8 : i64, {{.*}}ddr_pitch = 256 : i64, {{.*}}deps = array<i64>}
// CHECK-NEXT: spyrecode.dma_store {lx = 0 : i64, ddr = 13312 : i64, rows = 8 : i64, row_bytes = 128 : i64, lx_pitch = 128 : i64, ddr_pitch = 128 : i64, unit = 0 : i64, deps = array<i64: 0>}
// CHECK-NEXT: spyrecode.dma_store {lx = 1024 : i64, ddr = 15360 : i64, {{.*}}deps = array<i64: 1>}
// CHECK-NEXT: }
builtin.module {
  func.func @forward(%q: tensor<2x16x2x64xf16> {spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 2, 16, 2, 64>, device_dtype = "dl16", pad = "zero"}}) -> tensor<2x2x16x64xf16> {
    %qt = spyre.kernel "k0"(%q) {grid = [2 : i64, 2 : i64], tile = [8 : i64, 64 : i64, 0 : i64], fused = ["permute"], reason = "row move (DMA only)", spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 2, 2, 16, 64>, device_dtype = "dl16", pad = "zero"}} : (tensor<2x16x2x64xf16>) -> tensor<2x2x16x64xf16> {
    ^bb0(%q_1: tensor<2x16x2x64xf16>):
      %qt_1 = spyre.permute_rows %q_1 {fx_node = "permute", spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 2, 2, 16, 64>, device_dtype = "dl16", pad = "zero"}, permutation = array<i64: 0, 2, 1, 3>} : tensor<2x16x2x64xf16> -> tensor<2x2x16x64xf16>
      spyre.yield %qt_1 : tensor<2x2x16x64xf16>
    }
    func.return %qt : tensor<2x2x16x64xf16>
  }
}
