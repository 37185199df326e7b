// RUN: sed 's/grid = \[2 : i64, 1 : i64\]/grid = [0 : i64, 3 : i64]/' %S/Inputs/mlp64x100-tiled.mlir | not spyre-opt -p spyre-tile 2>&1 | filecheck %s --check-prefix=GRID
// RUN: sed 's/grid = \[2 : i64, 1 : i64\]/grid = [2 : i64, 1 : i64], resident = "x"/' %S/Inputs/mlp64x100-tiled.mlir | not spyre-opt -p spyre-tile 2>&1 | filecheck %s --check-prefix=RESIDENT
// RUN: sed 's/grid = \[2 : i64, 1 : i64\]/grid = [2 : i64, 1 : i64], tail = 0 : i64/' %S/Inputs/mlp64x100-tiled.mlir | not spyre-opt 2>&1 | filecheck %s --check-prefix=TAIL
// RUN: sed "s/grid = \[4, 1\]/grid = [4, 0]/" %S/Inputs/ktir-bounds-store.mlir | not spyre-opt -p spyre-legalize-ktir 2>&1 | filecheck %s --check-prefix=KTIR

// A planning decision a user writes into the IR (design note 15) is checked against its
// declaration (dialects/spyre_plan.py) before the first pass and after every pass: the
// error names the kernel and its function, the key, the value, what values are allowed,
// and that removing it lets the pass decide.
// GRID: error: kernel @k1 in func @forward: `grid = [0 : i64, 3 : i64]` is not allowed: grid must be [gm, gn], two positive integers (gm cores over rows, gn over output sticks; core = y * gm + x), e.g. `grid = [2, 4]`; correct it, or remove it and spyre-partition-cores decides it
// RESIDENT: error: kernel @k1 in func @forward: `resident = "x"` is not allowed: resident must be "a" (the row block of A kept in LX), "b" (the column block of B) or "acc" (K blocked, the accumulator kept); correct it, or remove it and spyre-tile decides it
// TAIL: error: kernel @k1 in func @forward: `tail = 0 : i64` is not allowed: tail must be an integer >= 1
// TAIL-SAME: (the last column tile in that many row pieces; 1: whole); correct it, or remove it and spyre-tile decides it
// A hand-written KTIR kernel's grid is checked the same way.
// KTIR: error: func @shifted_store: `grid = [4 : i64, 0 : i64]` is not allowed: grid must be [gm, gn], two positive integers (gm cores over rows, gn over output sticks; core = y * gm + x), e.g. `grid = [2, 4]`; correct it in the kernel's KTIR
