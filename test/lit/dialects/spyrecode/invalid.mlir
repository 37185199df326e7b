// RUN: spyre-opt %s --split-input-file --verify-diagnostics

// An instruction may wait only for earlier instructions of its own core.
spyrecode.program "k0" attributes {num_cores = 1 : i64} {
  // expected-error @+1 {{spyrecode.core 0: instruction 0 (spyrecode.dma_store) waits for [3], which are not earlier instructions}}
  spyrecode.core attributes {id = 0 : i64} {
    spyrecode.dma_store {lx = 0 : i64, ddr = 0 : i64, rows = 1 : i64, row_bytes = 128 : i64, lx_pitch = 128 : i64, ddr_pitch = 128 : i64, unit = 0 : i64, deps = array<i64: 3>}
  }
}
