// RUN: spyre-opt %S/../../ktir/conformance/row_operand_outside_loop.mlir -p spyre-set-options,spyre-legalize-ktir,spyre-place-memory | filecheck %s

// An elementwise step runs in place only over a tile of its own loop body. Here w (1 row of
// 256 f32: 1024 B) is loaded once, before the row loop, and exp(w) is computed in the loop:
// exp(w) has w's type and is its only reader, yet it must not take w's slot, which the
// next iteration reads again.
//
// w runs once per core: one slot at 0.
// CHECK: %wt = ktdp.load {{.*}}lx_slots = array<i64: 0, 0>
// The x tile (8 rows of 1024 B) runs four times: two slots, 1024 and 9216.
// CHECK: %xt = ktdp.load {{.*}}lx_slots = array<i64: 1024, 9216>
// exp(w): a pair of its own after the x tile's, 17408 and 18432 (in place it took 0, 0).
// CHECK: %ew = linalg.generic {{.*}}lx_slots = array<i64: 17408, 18432>
