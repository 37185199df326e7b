// RUN: spyre-opt %S/Inputs/mlp64x100.mlir -p spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile | filecheck %s

// k0 runs on one core: the whole 64x128 padded output in 64x64 tiles with K = 128 in one
// step, A resident: its one 64-row block is loaded once, so it needs one slot, 64*128*2 =
// 16384; every streamed buffer doubled: B 2*128*64*2 = 32768, f32 accumulator 2*64*64*4 =
// 32768, fp16 output 2*64*64*2 = 16384, bias 2*64*2 = 256: 98560 B, well inside the
// 1677696 B (80 % of 2 MiB, stick aligned) usable.
// Off chip: A 64*128*2 = 16384 once, B 128*64*2 = 16384 per column tile (2), the bias row
// 128 B per tile, the output 64*64*2 per tile: 16384 + 32768 + 256 + 16384 = 65792 B.
// B resident (columns outer) needs the A block per tile: 82176 B, so it loses.
// CHECK: spyre.kernel "k0"{{.*}}tile = [64 : i64, 64 : i64, 128 : i64], resident = "a", spyre.tiling = {choice = "64x64x128", reason = "fewest predicted cycles of {{[0-9]+}} tilings that fit LX; bound by {{[a-z]+}}; A row block resident over the column loop", lx_bytes = 98560 : i64, lx_budget = 1677696 : i64
// CHECK-SAME: offchip_bytes = 65792 : i64
// CHECK-SAME: alternatives = [{{.*}}resident b: {{[0-9]+}} cycles, {{[0-9]+}} B off chip, {{[0-9]+}} B LX"
// k1 gets a tiling of its own split (whatever spyre-partition-cores chose).
// CHECK: spyre.kernel "k1"{{.*}}tile = [{{[0-9]+}} : i64, {{[0-9]+}} : i64, {{[0-9]+}} : i64], resident = "{{a|b|acc}}", spyre.tiling = {choice =
