// RUN: spyre-opt %s | spyre-opt | filecheck %s
// RUN: spyre-opt %s --print-op-generic | spyre-opt | filecheck %s

// One instruction of every opcode; the ops mirror the ISA table field for field.
// CHECK: spyrecode.program "k0" attributes {num_cores = 2 : i64} {
// CHECK-NEXT: spyrecode.core attributes {id = 0 : i64} {
// CHECK-NEXT: spyrecode.dma_load {ddr = 0 : i64, lx = 0 : i64, rows = 64 : i64, row_bytes = 128 : i64, ddr_pitch = 256 : i64, lx_pitch = 128 : i64, unit = 0 : i64, deps = array<i64>}
// CHECK-NEXT: spyrecode.dma_load {ddr = 17179869184 : i64, lx = 8192 : i64, rows = 64 : i64, row_bytes = 128 : i64, ddr_pitch = 128 : i64, lx_pitch = 128 : i64, unit = 0 : i64, deps = array<i64>}
// CHECK-NEXT: spyrecode.pt_matmul {a = 0 : i64, b = 8192 : i64, c = 16384 : i64, m = 64 : i64, k = 64 : i64, n = 64 : i64, a_pitch = 128 : i64, b_pitch = 128 : i64, c_pitch = 256 : i64, in_dtype = 1 : i64, accumulate = 0 : i64, unit = 1 : i64, deps = array<i64: 0, 1>}
// CHECK-NEXT: spyrecode.sfu_binary
// CHECK-NEXT: spyrecode.sfu_unary
// CHECK-NEXT: spyrecode.dma_store
// CHECK: spyrecode.core attributes {id = 1 : i64} {
// CHECK-NEXT: spyrecode.dma_load {ddr = 128 : i64
spyrecode.program "k0" attributes {num_cores = 2 : i64} {
  spyrecode.core attributes {id = 0 : i64} {
    spyrecode.dma_load {ddr = 0 : i64, lx = 0 : i64, rows = 64 : i64, row_bytes = 128 : i64, ddr_pitch = 256 : i64, lx_pitch = 128 : i64, unit = 0 : i64, deps = array<i64>}
    spyrecode.dma_load {ddr = 17179869184 : i64, lx = 8192 : i64, rows = 64 : i64, row_bytes = 128 : i64, ddr_pitch = 128 : i64, lx_pitch = 128 : i64, unit = 0 : i64, deps = array<i64>}
    spyrecode.pt_matmul {a = 0 : i64, b = 8192 : i64, c = 16384 : i64, m = 64 : i64, k = 64 : i64, n = 64 : i64, a_pitch = 128 : i64, b_pitch = 128 : i64, c_pitch = 256 : i64, in_dtype = 1 : i64, accumulate = 0 : i64, unit = 1 : i64, deps = array<i64: 0, 1>}
    spyrecode.sfu_binary {fn = 0 : i64, src0 = 16384 : i64, src1 = 32768 : i64, dst = 16384 : i64, rows = 64 : i64, cols = 64 : i64, src0_pitch = 256 : i64, src1_pitch = 0 : i64, dst_pitch = 256 : i64, src0_dtype = 0 : i64, src1_dtype = 1 : i64, dst_dtype = 0 : i64, unit = 1 : i64, deps = array<i64: 2>}
    spyrecode.sfu_unary {fn = 1 : i64, src = 16384 : i64, dst = 40960 : i64, rows = 64 : i64, cols = 64 : i64, src_pitch = 256 : i64, dst_pitch = 128 : i64, src_dtype = 0 : i64, dst_dtype = 1 : i64, unit = 1 : i64, deps = array<i64: 3>}
    spyrecode.dma_store {lx = 40960 : i64, ddr = 65536 : i64, rows = 64 : i64, row_bytes = 128 : i64, lx_pitch = 128 : i64, ddr_pitch = 256 : i64, unit = 0 : i64, deps = array<i64: 4>}
  }
  spyrecode.core attributes {id = 1 : i64} {
    spyrecode.dma_load {ddr = 128 : i64, lx = 0 : i64, rows = 64 : i64, row_bytes = 128 : i64, ddr_pitch = 256 : i64, lx_pitch = 128 : i64, unit = 0 : i64, deps = array<i64>}
  }
}

// Ring, sync and loop instructions. Core 0 sends one 128-byte stick to core 1, joins a
// two-core reduction rooted at core 1 and a barrier; core 1 loads 4 sticks in a counted loop
// (the DDR address advances by 128 bytes per iteration; its load waits for the previous
// iteration's store, pc 5, a later instruction of the same body).
// CHECK-LABEL: spyrecode.program "k1"
// CHECK: spyrecode.ring_send {src = 0 : i64, rows = 1 : i64, row_bytes = 128 : i64, src_pitch = 128 : i64, dst_core = 1 : i64, tag = 0 : i64, unit = 0 : i64, deps = array<i64>}
// CHECK-NEXT: spyrecode.ring_reduce {src = 0 : i64, dst = 128 : i64, rows = 1 : i64, cols = 32 : i64, src_pitch = 128 : i64, dst_pitch = 128 : i64, dtype = 0 : i64, first = 0 : i64, count = 2 : i64, stride = 1 : i64, root = 1 : i64, tag = 0 : i64, unit = 0 : i64, deps = array<i64: 0>}
// CHECK-NEXT: spyrecode.sync_barrier {first = 0 : i64, count = 2 : i64, stride = 1 : i64, tag = 0 : i64, unit = 0 : i64, deps = array<i64: 1>}
// CHECK: spyrecode.ring_recv {dst = 0 : i64, rows = 1 : i64, row_bytes = 128 : i64, dst_pitch = 128 : i64, src_core = 0 : i64, tag = 0 : i64, unit = 0 : i64, deps = array<i64>}
// CHECK-NEXT: spyrecode.loop_begin {trips = 4 : i64, unit = 0 : i64, deps = array<i64>}
// CHECK-NEXT: spyrecode.loop_incr {pc = 4 : i64, field = 0 : i64, step = 128 : i64, unit = 0 : i64, deps = array<i64>}
// CHECK-NEXT: spyrecode.loop_incr {pc = 5 : i64, field = 1 : i64, step = 128 : i64, unit = 0 : i64, deps = array<i64>}
// CHECK-NEXT: spyrecode.dma_load {{.*}} deps = array<i64: 0, 5>}
// CHECK-NEXT: spyrecode.dma_store {{.*}} deps = array<i64: 4>}
// CHECK-NEXT: spyrecode.loop_end {unit = 0 : i64, deps = array<i64>}
spyrecode.program "k1" attributes {num_cores = 2 : i64} {
  spyrecode.core attributes {id = 0 : i64} {
    spyrecode.ring_send {src = 0 : i64, rows = 1 : i64, row_bytes = 128 : i64, src_pitch = 128 : i64, dst_core = 1 : i64, tag = 0 : i64, unit = 0 : i64, deps = array<i64>}
    spyrecode.ring_reduce {src = 0 : i64, dst = 128 : i64, rows = 1 : i64, cols = 32 : i64, src_pitch = 128 : i64, dst_pitch = 128 : i64, dtype = 0 : i64, first = 0 : i64, count = 2 : i64, stride = 1 : i64, root = 1 : i64, tag = 0 : i64, unit = 0 : i64, deps = array<i64: 0>}
    spyrecode.sync_barrier {first = 0 : i64, count = 2 : i64, stride = 1 : i64, tag = 0 : i64, unit = 0 : i64, deps = array<i64: 1>}
  }
  spyrecode.core attributes {id = 1 : i64} {
    spyrecode.ring_recv {dst = 0 : i64, rows = 1 : i64, row_bytes = 128 : i64, dst_pitch = 128 : i64, src_core = 0 : i64, tag = 0 : i64, unit = 0 : i64, deps = array<i64>}
    spyrecode.loop_begin {trips = 4 : i64, unit = 0 : i64, deps = array<i64>}
    spyrecode.loop_incr {pc = 4 : i64, field = 0 : i64, step = 128 : i64, unit = 0 : i64, deps = array<i64>}
    spyrecode.loop_incr {pc = 5 : i64, field = 1 : i64, step = 128 : i64, unit = 0 : i64, deps = array<i64>}
    spyrecode.dma_load {ddr = 0 : i64, lx = 4096 : i64, rows = 1 : i64, row_bytes = 128 : i64, ddr_pitch = 128 : i64, lx_pitch = 128 : i64, unit = 0 : i64, deps = array<i64: 0, 5>}
    spyrecode.dma_store {lx = 4096 : i64, ddr = 65536 : i64, rows = 1 : i64, row_bytes = 128 : i64, lx_pitch = 128 : i64, ddr_pitch = 128 : i64, unit = 0 : i64, deps = array<i64: 4>}
    spyrecode.loop_end {unit = 0 : i64, deps = array<i64>}
  }
}
