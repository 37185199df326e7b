// RUN: spyre-opt %s --split-input-file --verify-diagnostics | filecheck %s

// xDSL 0.74's --verify-diagnostics prints each chunk's first error instead of matching
// expected-error annotations, so filecheck matches the messages, one CHECK per case.

// An instruction may wait only for earlier instructions of its own core.
spyrecode.program "k0" attributes {num_cores = 1 : i64} {
  // CHECK: spyrecode.core 0: instruction 0 (spyrecode.dma_store) waits for [3], which are not earlier instructions
  spyrecode.core attributes {id = 0 : i64} {
    spyrecode.dma_store {lx = 0 : i64, ddr = 0 : i64, rows = 1 : i64, row_bytes = 128 : i64, lx_pitch = 128 : i64, ddr_pitch = 128 : i64, unit = 0 : i64, deps = array<i64: 3>}
  }
}

// -----

// A later instruction is a dependency only inside the same loop body (the previous iteration).
spyrecode.program "k0" attributes {num_cores = 1 : i64} {
  // CHECK: spyrecode.core 0: instruction 1 (spyrecode.dma_load) waits for [3], which are not earlier instructions
  spyrecode.core attributes {id = 0 : i64} {
    spyrecode.loop_begin {trips = 2 : i64, unit = 0 : i64, deps = array<i64>}
    spyrecode.dma_load {ddr = 0 : i64, lx = 0 : i64, rows = 1 : i64, row_bytes = 128 : i64, ddr_pitch = 128 : i64, lx_pitch = 128 : i64, unit = 0 : i64, deps = array<i64: 3>}
    spyrecode.loop_end {unit = 0 : i64, deps = array<i64>}
    spyrecode.dma_store {lx = 0 : i64, ddr = 0 : i64, rows = 1 : i64, row_bytes = 128 : i64, lx_pitch = 128 : i64, ddr_pitch = 128 : i64, unit = 0 : i64, deps = array<i64>}
  }
}

// -----

// Loops do not nest.
spyrecode.program "k0" attributes {num_cores = 1 : i64} {
  // CHECK: spyrecode.core 0: instruction 1 (spyrecode.loop_begin): loop.begin inside the loop opened at pc 0 (loops do not nest)
  spyrecode.core attributes {id = 0 : i64} {
    spyrecode.loop_begin {trips = 2 : i64, unit = 0 : i64, deps = array<i64>}
    spyrecode.loop_begin {trips = 2 : i64, unit = 0 : i64, deps = array<i64>}
    spyrecode.loop_end {unit = 0 : i64, deps = array<i64>}
    spyrecode.loop_end {unit = 0 : i64, deps = array<i64>}
  }
}

// -----

// loop.incr must name a field the instruction has.
spyrecode.program "k0" attributes {num_cores = 1 : i64} {
  // CHECK: spyrecode.core 0: instruction 1 (spyrecode.loop_incr): loop.incr names field 9 of pc 2 (dma.load has 6 fields)
  spyrecode.core attributes {id = 0 : i64} {
    spyrecode.loop_begin {trips = 2 : i64, unit = 0 : i64, deps = array<i64>}
    spyrecode.loop_incr {pc = 2 : i64, field = 9 : i64, step = 128 : i64, unit = 0 : i64, deps = array<i64>}
    spyrecode.dma_load {ddr = 0 : i64, lx = 0 : i64, rows = 1 : i64, row_bytes = 128 : i64, ddr_pitch = 128 : i64, lx_pitch = 128 : i64, unit = 0 : i64, deps = array<i64>}
    spyrecode.loop_end {unit = 0 : i64, deps = array<i64>}
  }
}
