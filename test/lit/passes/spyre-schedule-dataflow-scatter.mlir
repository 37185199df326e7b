// RUN: spyre-opt %s -p convert-spyre-to-ktir | filecheck %s --check-prefix=KTIR
// RUN: spyre-opt %s -p convert-spyre-to-ktir,spyre-place-memory | filecheck %s --check-prefix=PLACE
// RUN: spyre-opt %s -p convert-spyre-to-ktir,spyre-place-memory,spyre-schedule-dataflow | filecheck %s

// The KV-cache update of a decode step with two new tokens: rows k [1, 2, 2, 64] fp32
// written at positions pos [2] of the [1, 2, 256, 64] cache, in place. Grid [2, 1] (fixed
// here): core x takes head x; one tile of both rows. The cache is viewed [2, 256, 64], so
// the indirect subscript (the position) stands alone between the direct head and column.
// KTIR-LABEL: func.func @k0(%c: index, %pos: index, %k: index, %{{.*}}: index)
// KTIR:      %[[CACHE:.*]] = ktdp.construct_memory_view %{{.*}}, sizes: [2, 256, 64], strides: [16384, 64, 1] {{.*}} : memref<2x256x64xf32>
// KTIR:      %[[POS:.*]] = ktdp.construct_memory_view %pos, sizes: [1, 32], strides: [32, 1] {{.*}} : memref<1x32xi32>
// KTIR:      %[[ROWS:.*]] = ktdp.load %{{.*}} : !ktdp.access_tile<2x64xindex> -> tensor<2x64xf32>
// KTIR-NEXT: %[[T:.*]] = ktdp.construct_indirect_access_tile intermediate_variables(%r, %c_{{.*}}) %[[CACHE]][(%{{.*}}), ind(%[[POS]][0, %{{.*}} + %r]), (%c_{{.*}})] {{.*}} -> !ktdp.access_tile<2x64xindex>
// KTIR-NEXT: ktdp.store %[[ROWS]], %[[T]]

// The result is the cache's own storage: the launch result gets the weight's address
// (segment 1, 0x400000000 = 17179869184), no activation is allocated for it. The rows take
// one 512-byte LX slot (one tile per core), the two int32 positions two 256-byte index slots
// after it.
// PLACE:      spyre.param {{.*}}spyre.addr = 17179869184 : i64, param_name = "k_cache"
// PLACE:      spyre.launch @k0({{.*}}) {{.*}}spyre.inplace = [0 : i64], spyre.addr = [17179869184 : i64]
// PLACE:      ktdp.store {{.*}}lx_index_slots = array<i64: 512, 768>

// Core 1 = head 1: its rows are k rows 2 and 3 (k is the second input, after the 128-byte
// pos: byte 128 + 2 * 256 = 640); its cache block starts 1 * 256 rows of 256 B in, at
// 17179869184 + 65536 = 17179934720, and has 256 rows: `limit`. The scatter waits for both
// loads.
// CHECK: spyrecode.core attributes {id = 1 : i64}
// CHECK-NEXT: spyrecode.dma_load {ddr = 640 : i64, lx = 0 : i64, rows = 2 : i64, row_bytes = 256 : i64, ddr_pitch = 256 : i64, lx_pitch = 256 : i64, unit = 0 : i64, deps = array<i64>}
// CHECK-NEXT: spyrecode.dma_load {ddr = 0 : i64, lx = 512 : i64, rows = 1 : i64, row_bytes = 128 : i64, ddr_pitch = 128 : i64, lx_pitch = 128 : i64, unit = 0 : i64, deps = array<i64>}
// CHECK-NEXT: spyrecode.dma_scatter {lx = 0 : i64, ddr = 17179934720 : i64, rows = 2 : i64, row_bytes = 256 : i64, lx_pitch = 256 : i64, ddr_pitch = 256 : i64, idx = 512 : i64, limit = 256 : i64, unit = 0 : i64, deps = array<i64: 0, 1>}
// CHECK-NEXT: }
builtin.module {
  func.func @forward(%pos: tensor<2xi64> {spyre.layout = {stick_dim = 0 : i64, padded_shape = array<i64: 32>, device_dtype = "i32", pad = "zero"}}, %k: tensor<1x2x2x64xf32> {spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 1, 2, 2, 64>, device_dtype = "f32", pad = "zero"}}) -> tensor<1x2x256x64xf32> {
    %c = spyre.param {spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 1, 2, 256, 64>, device_dtype = "f32", pad = "zero"}, param_name = "k_cache"} : tensor<1x2x256x64xf32>
    %u = spyre.kernel "k0"(%c, %pos, %k) {fused = ["index_put"], spyre.inplace = [0 : i64], reason = "in-place row update by index (dma.scatter)", spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 1, 2, 256, 64>, device_dtype = "f32", pad = "zero"}, grid = [2 : i64, 1 : i64], tile = [2 : i64, 64 : i64, 0 : i64]} : (tensor<1x2x256x64xf32>, tensor<2xi64>, tensor<1x2x2x64xf32>) -> tensor<1x2x256x64xf32> {
    ^bb0(%c_1: tensor<1x2x256x64xf32>, %pos_1: tensor<2xi64>, %k_1: tensor<1x2x2x64xf32>):
      %u_1 = spyre.scatter %c_1, %pos_1, %k_1 {fx_node = "index_put", spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 1, 2, 256, 64>, device_dtype = "f32", pad = "zero"}} : tensor<1x2x256x64xf32>, tensor<2xi64>, tensor<1x2x2x64xf32> -> tensor<1x2x256x64xf32>
      spyre.yield %u_1 : tensor<1x2x256x64xf32>
    }
    func.return %u : tensor<1x2x256x64xf32>
  }
}
