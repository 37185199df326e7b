// RUN: spyre-opt %S/Inputs/mlp64x100.mlir -p 'spyre-stickify,spyre-fuse,spyre-partition-cores{share="none"},spyre-tile{share="none"}' | filecheck %s

// k0 (64x100 @ 100x100 + bias, relu; padded to 64x128, K 128) is split 2x2 by
// spyre-partition-cores: each core owns 32 rows and one 64-column stick. B resident with
// 16x64x128 tiles: the core's 128x64 B block (16384 B) is loaded once, one LX slot; A tiles
// 16x128 (4096 B), the f32 accumulator 16x64 (4096 B) and the fp16 output 16x64 (2048 B)
// doubled, the bias row 2 x 128: 16384 + 8192 + 8192 + 4096 + 256 = 37120 B, well inside
// the 1677696 B (80 % of 2 MiB, stick aligned) usable. Off chip per core: B 16384 + A 2 x
// 4096 + bias 2 x 128 + output 2 x 2048 = 28928 B; 4 cores: 115712 B.
// CHECK: spyre.kernel "k0"{{.*}}tile = [16 : i64, 64 : i64, 128 : i64], resident = "b", spyre.tiling = {choice = "16x64x128", reason = "fewest predicted cycles of {{[0-9]+}} tilings that fit LX; bound by {{[a-z]+}}; B column block resident over the row loop", lx_bytes = 37120 : i64, lx_budget = 1677696 : i64
// CHECK-SAME: offchip_bytes = 115712 : i64
// CHECK-SAME: alternatives = [{{.*}}resident a: {{[0-9]+}} cycles, {{[0-9]+}} B off chip, {{[0-9]+}} B LX"
// k1 gets a tiling of its own split (whatever spyre-partition-cores chose).
// CHECK: spyre.kernel "k1"{{.*}}tile = [{{[0-9]+}} : i64, {{[0-9]+}} : i64, {{[0-9]+}} : i64], resident = "{{a|b|acc}}", spyre.tiling = {choice =
