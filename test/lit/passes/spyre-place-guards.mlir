// RUN: %python %S/Inputs/symbolic_affine.py > %t.mlir
// RUN: spyre-opt %t.mlir -p 'spyre-schedule-dataflow,spyre-place-guards' | filecheck %s
// RUN: spyre-opt %t.mlir -p 'spyre-schedule-dataflow' | filecheck %s --check-prefix=UNGUARDED

// Trip-count guards of a symbolic size (design note 49), placed on spyrecode.
// `x * 2 + 1` on x: [seq, 128] fp16, seq = Dim(min=1, max=64), compiled at 64 rows: the
// frontend records the symbol on the module. The 64 x 128 tile splits over the 32 cores as
// 16 row blocks x 2 column halves: core c (c < 16) and core c + 16 hold rows 4c .. 4c+3.
// A row r is real from seq = r + 1 on, so core c's work is needed from seq = 4c + 1:
// cores 0 and 16 (needed at the lower bound, 1) stay unguarded; core 1 runs from 5,
// core 15 from 4 * 15 + 1 = 61, core 17 (rows 4-7) from 5.

// CHECK: builtin.module attributes {spyre.symbols = {symbols = [["x.dim0", 1 : i64, 64 : i64]], inputs = [{"0" = "x.dim0"}], outputs = [{"0" = "x.dim0"}]}

// The guards, on the program (what spyre-emit-spyrecode writes as the patch table):
// CHECK: spyrecode.program "k0"
// CHECK-SAME: spyre.guards = [{core = 1 : i64, pc = 0 : i64, symbol = "x.dim0", thresholds = array<i64: 5>}
// CHECK-SAME: {core = 15 : i64, pc = 0 : i64, symbol = "x.dim0", thresholds = array<i64: 61>}, {core = 17 : i64, pc = 0 : i64, symbol = "x.dim0", thresholds = array<i64: 5>}

// CHECK:      spyrecode.core attributes {id = 0 : i64} {
// CHECK-NEXT:   spyrecode.dma_load {ddr = 0 : i64
// CHECK:      spyrecode.core attributes {id = 1 : i64} {
// CHECK-NEXT:   spyrecode.loop_begin {trips = 1 : i64
// Rows 4-7 start 4 x 256 B (a 128-element fp16 row is two sticks) into x.
// CHECK-NEXT:   spyrecode.dma_load {ddr = 1024 : i64
// CHECK-NEXT:   spyrecode.sfu_scalar
// CHECK-NEXT:   spyrecode.sfu_scalar
// CHECK-NEXT:   spyrecode.sfu_unary
// CHECK-NEXT:   spyrecode.dma_store
// CHECK-NEXT:   spyrecode.loop_end
// CHECK-NEXT: }

// Without the pass: no guard, no record.
// UNGUARDED-NOT: spyre.guards
// UNGUARDED-NOT: loop_begin
