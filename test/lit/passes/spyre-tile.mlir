// RUN: spyre-opt %S/Inputs/mlp64x100.mlir -p 'spyre-stickify,spyre-fuse,spyre-partition-cores{share="none" keep_in_lx=false},spyre-tile{share="none"}' | filecheck %s
// (keep_in_lx=false: each kernel on its own best split; the joint choice of neighbouring
// kernels that keep a tensor in LX is checked in spyre-partition-cores-keep.mlir.)

// k0 (64x100 @ 100x100 + bias, relu; padded to 64x128, K 128) is split 1x2 by
// spyre-partition-cores: each of 2 cores owns all 64 rows and one 64-column stick (a 2x2
// split reads B twice and gives each core half the rows, but its cores set up their DMAs in
// lockstep, so halving the descriptors per core saves less than the extra bytes cost). B
// resident with 32x64x128 tiles: the core's 128x64 B block (16384 B) is loaded once, one LX
// slot; A tiles 32x128 (8192 B), the f32 accumulator 32x64 (8192 B) and the fp16 output
// 32x64 (4096 B) doubled, the bias row 2 x 128: 16384 + 16384 + 16384 + 8192 + 256 = 57600 B,
// well inside the 1677696 B (80 % of 2 MiB, stick aligned) usable. Off chip per core: B
// 16384 + A 2 x 8192 + bias 128 (one column tile: loaded once, before the row loop) +
// output 2 x 4096 = 41088 B; 2 cores: 82176 B.
// CHECK: spyre.kernel "k0"{{.*}}tile = [32 : i64, 64 : i64, 128 : i64], resident = "b", spyre.tiling = {choice = "32x64x128", reason = "fewest predicted cycles of {{[0-9]+}} tilings that fit LX; bound by {{[a-z]+}}; B column block resident over the row loop", lx_bytes = 57600 : i64, lx_budget = 1677696 : i64
// CHECK-SAME: offchip_bytes = 82176 : i64
// CHECK-SAME: alternatives = [{{.*}}resident a: {{[0-9]+}} cycles, {{[0-9]+}} B off chip, {{[0-9]+}} B LX"
// k1 gets a tiling of its own split (whatever spyre-partition-cores chose).
// CHECK: spyre.kernel "k1"{{.*}}tile = [{{[0-9]+}} : i64, {{[0-9]+}} : i64, {{[0-9]+}} : i64], resident = "{{a|b|acc}}", spyre.tiling = {choice =
