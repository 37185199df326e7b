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
