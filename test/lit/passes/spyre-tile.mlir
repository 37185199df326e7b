// RUN: spyre-opt %S/Inputs/mlp64x100.mlir -p spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile | filecheck %s

// k0 runs on one core: the whole 64x128 padded output in 64x64 tiles with K = 128 in one
// step. LX with every streamed buffer doubled: A 2*64*128*2 = 32768, B 2*128*64*2 = 32768,
// f32 accumulator 2*64*64*4 = 32768, fp16 output 2*64*64*2 = 16384, bias 2*64*2 = 256:
// 114944 B, well inside the 1677696 B (80 % of 2 MiB, stick aligned) usable.
// CHECK: spyre.kernel "k0"{{.*}}tile = [64 : i64, 64 : i64, 128 : i64], spyre.tiling = {choice = "64x64x128", reason = "fewest predicted cycles of {{[0-9]+}} tilings that fit LX; bound by {{[a-z]+}}", lx_bytes = 114944 : i64, lx_budget = 1677696 : i64
// k1 gets a tiling of its own split (whatever spyre-partition-cores chose).
// CHECK: spyre.kernel "k1"{{.*}}tile = [{{[0-9]+}} : i64, {{[0-9]+}} : i64, {{[0-9]+}} : i64], spyre.tiling = {choice =
