// RUN: spyre-opt %S/Inputs/mlp64x100-tiled.mlir -p spyre-partition-cores,spyre-tile | filecheck %s
// RUN: sed 's/grid = \[2 : i64, 1 : i64\]/grid = [3 : i64, 1 : i64]/' %S/Inputs/mlp64x100-tiled.mlir | not spyre-opt -p spyre-partition-cores 2>&1 | filecheck %s --check-prefix=BAD

// A grid and tile already on a kernel are the user's: checked, kept, and recorded as such.
// Without a `resident`, K in one tile keeps A resident (as before loop orders were chosen);
// its one row block is loaded once, so it takes one LX slot: 114944 - 16384 = 98560 B.
// CHECK: spyre.kernel "k0"{{.*}}grid = [1 : i64, 1 : i64], tile = [64 : i64, 64 : i64, 128 : i64]
// CHECK-SAME: spyre.partition = {choice = "1x1", reason = "set by the user"}
// CHECK-SAME: resident = "a", spyre.tiling = {choice = "64x64x128", reason = "set by the user", lx_bytes = 98560 : i64}
// CHECK: spyre.kernel "k1"{{.*}}grid = [2 : i64, 1 : i64], tile = [32 : i64, 64 : i64, 128 : i64]

// 64 rows do not split evenly over 3 cores.
// BAD: error: kernel @k1: grid [3, 1] must divide its 64 rows and 2 output sticks evenly and use at most 32 cores
