// RUN: spyre-opt %s -p 'spyre-tile{share="ring"},convert-spyre-to-ktir,spyre-place-memory,spyre-schedule-dataflow' | filecheck %s

// Ring sharing in the schedule (design note 38): 128x128 @ 128x128 fp16 on a 2x2 grid,
// B column block resident (16x64x128 tiles), shared over the ring. Core = y * 2 + x: cores
// 0 and 1 (y = 0) own output columns 0-63, cores 2 and 3 columns 64-127; cores 0 and 2
// (x = 0) rows 0-63, cores 1 and 3 rows 64-127. Each LPDDR tile is loaded by the first
// core of its chain: the 128x64 B block (128 rows of 128 B) of column block y by core x = 0
// and sent to the ring neighbour x = 1; each 16x128 A tile (16 rows of 256 B) of row block x
// by core y = 0 and sent two core numbers on, to y = 1. Per core: one B block and 4 A
// tiles; shared: 2 B blocks + 2 x 4 A tiles = 10 tiles in 10 transfers, each saving its
// bytes once: 2 x 16384 + 8 x 4096 = 65536 B of LPDDR reads.
// CHECK: spyrecode.program "k0" attributes {{{.*}}spyre.ring = "10 tiles shared over the ring in 10 transfers, 65536 B of LPDDR reads saved"
// Core 0 loads its B block and sends it to core 1 once the load is done (deps on pc 0),
// then loads the first two A tiles (ping-pong slots 24576 and 28672), each sent to core 2.
// CHECK: spyrecode.core attributes {id = 0 : i64}
// CHECK-NEXT: spyrecode.dma_load {ddr = 17179869184 : i64, lx = 0 : i64, rows = 128 : i64, row_bytes = 128 : i64
// CHECK-NEXT: spyrecode.ring_send {src = 0 : i64, rows = 128 : i64, row_bytes = 128 : i64, src_pitch = 128 : i64, dst_core = 1 : i64, tag = 0 : i64, unit = 0 : i64, deps = array<i64: 0>}
// CHECK-NEXT: spyrecode.dma_load {ddr = 0 : i64, lx = 24576 : i64, rows = 16 : i64, row_bytes = 256 : i64
// CHECK-NEXT: spyrecode.ring_send {src = 24576 : i64, {{.*}}dst_core = 2 : i64, {{.*}}deps = array<i64: 2>}
// CHECK-NEXT: spyrecode.dma_load {ddr = 4096 : i64, lx = 28672 : i64
// CHECK-NEXT: spyrecode.ring_send {src = 28672 : i64, {{.*}}dst_core = 2 : i64, {{.*}}deps = array<i64: 4>}
// The third A tile reuses slot 24576: besides the matmuls that read the first tile (pc 6
// and 7, one per corelet) it waits for the send of that tile (pc 3): write after read.
// CHECK: spyrecode.dma_load {ddr = 8192 : i64, lx = 24576 : i64, {{.*}}deps = array<i64: 2, 3, 6, 7>}
// Core 1 receives its B block from core 0 into the slot its load would have filled, loads
// its own A tiles (row block 1) and sends them to core 3.
// CHECK: spyrecode.core attributes {id = 1 : i64}
// CHECK-NEXT: spyrecode.ring_recv {dst = 0 : i64, rows = 128 : i64, row_bytes = 128 : i64, dst_pitch = 128 : i64, src_core = 0 : i64, tag = 0 : i64, unit = 0 : i64, deps = array<i64>}
// CHECK-NEXT: spyrecode.dma_load {ddr = 16384 : i64, lx = 24576 : i64
// CHECK-NEXT: spyrecode.ring_send {src = 24576 : i64, {{.*}}dst_core = 3 : i64
// Core 2 loads B column block 1 (128 bytes further) for core 3 and receives its A tiles
// from core 0; core 3 loads nothing but its outputs' stores.
// CHECK: spyrecode.core attributes {id = 2 : i64}
// CHECK-NEXT: spyrecode.dma_load {ddr = 17179869312 : i64, lx = 0 : i64
// CHECK-NEXT: spyrecode.ring_send {src = 0 : i64, {{.*}}dst_core = 3 : i64
// CHECK-NEXT: spyrecode.ring_recv {dst = 24576 : i64, rows = 16 : i64, row_bytes = 256 : i64, dst_pitch = 256 : i64, src_core = 0 : i64
// CHECK-NEXT: spyrecode.ring_recv {dst = 28672 : i64, {{.*}}src_core = 0 : i64
// CHECK: spyrecode.core attributes {id = 3 : i64}
// CHECK-NOT: spyrecode.dma_load
// CHECK: spyrecode.ring_recv {dst = 0 : i64, {{.*}}src_core = 2 : i64
// CHECK-NOT: spyrecode.dma_load
// CHECK: spyrecode.ring_recv {dst = 24576 : i64, {{.*}}src_core = 1 : i64
// CHECK-NOT: spyrecode.dma_load
// CHECK: spyrecode.dma_store

func.func @square(%x: tensor<128x128xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 128, 128>, device_dtype = "dl16", pad = "zero"}}) -> tensor<128x128xf16> {
  %w = spyre.param {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 128, 128>, device_dtype = "dl16", pad = "zero"}, param_name = "w"} : tensor<128x128xf16>
  %y = spyre.kernel "k0"(%x, %w) {fused = ["mm"], reason = "single op", grid = [2 : i64, 2 : i64], spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 128, 128>, device_dtype = "dl16", pad = "zero"}} : (tensor<128x128xf16>, tensor<128x128xf16>) -> tensor<128x128xf16> {
  ^bb0(%x_1: tensor<128x128xf16>, %w_1: tensor<128x128xf16>):
    %y_1 = spyre.matmul %x_1, %w_1 {fx_node = "mm", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 128, 128>, device_dtype = "dl16", pad = "zero"}} : tensor<128x128xf16>, tensor<128x128xf16> -> tensor<128x128xf16>
    spyre.yield %y_1 : tensor<128x128xf16>
  }
  func.return %y : tensor<128x128xf16>
}
