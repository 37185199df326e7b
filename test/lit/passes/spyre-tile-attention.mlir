// RUN: spyre-opt %S/Inputs/attention-tiled.mlir -p spyre-partition-cores,spyre-tile | filecheck %s
// RUN: sed 's/grid = \[2 : i64, 2 : i64\], tile = \[50 : i64, 64 : i64, 100 : i64\], //' %S/Inputs/attention-tiled.mlir | spyre-opt -p spyre-partition-cores,spyre-tile | filecheck %s --check-prefix=MODEL
// RUN: sed 's/tile = \[50 : i64/tile = [30 : i64/' %S/Inputs/attention-tiled.mlir | not spyre-opt -p spyre-partition-cores,spyre-tile 2>&1 | filecheck %s --check-prefix=BAD

// An attention kernel's tile is [query rows, padded value width, key rows]: the head's whole
// K and V stay in LX while the core walks its query tiles. The user's [50, 64, 100] in fp16:
// Q 50 x 128 B = 6400, K and V 100 x 128 B = 12800 each, fp32 scores 50 x 512 B = 25600
// (scaled and masked in place), row max 50 x 128 = 6400 (one stick a row), shifted scores
// 25600 (exp in place), row sum 6400, P in fp16 50 x 256 = 12800, fp32 output 50 x 256 =
// 12800, fp16 output 50 x 128 = 6400: 128000 B, doubled for ping-pong 256000 B. On the
// 2x2 grid a core has one head and one query tile, so K, V and Q are loaded once and take
// one slot each: 256000 - 12800 - 12800 - 6400 = 224000 B, the figure spyre-place-memory
// reaches too.
// CHECK: spyre.kernel "k0"{{.*}}grid = [2 : i64, 2 : i64], tile = [50 : i64, 64 : i64, 100 : i64]
// CHECK-SAME: spyre.partition = {choice = "2x2", reason = "set by the user"}
// CHECK-SAME: spyre.tiling = {choice = "50x64x100", reason = "set by the user", lx_bytes = 224000 : i64}

// Left to the cost model, the 2 heads x 100 query rows split evenly and the tile keeps the
// padded value width (64) and all 100 key rows. K and V of a head are 100 x 128 B each,
// 25600 B together; Q and the output 2 x 100 x 128 B = 25600 B each. On the 2x5 grid every
// core reading its head's K and V itself moves 10 x 25600 + 25600 + 25600 = 307200 B off
// chip. Both query heads read the one K/V head (grouped-query, design note 58), so shared
// over the ring one core reads them and the other 9 (the 5 of each grid row, the 2 heads'
// cores) receive them: 25600 + 25600 + 25600 = 76800 B. The shared kernel's first query
// tile waits for 1 loader's K and V (not 10 cores'), so it is predicted faster, and chosen.
// MODEL: spyre.kernel "k0"{{.*}}grid = [{{1|2}} : i64, {{[0-9]+}} : i64]
// MODEL-SAME: spyre.partition = {choice = "{{[0-9]+}}x{{[0-9]+}}", reason = "fewest predicted cycles of {{[0-9]+}} even splits of 2 heads x 100 query rows
// MODEL-SAME: tile = [{{[0-9]+}} : i64, 64 : i64, 100 : i64], share = "ring", spyre.tiling = {choice = "{{[0-9]+}}x64x100", reason = "fewest predicted cycles of {{[0-9]+}} tilings that fit LX
// MODEL-SAME: K and V of each head shared over the ring by the {{[0-9]+}} cores of its grid row
// MODEL-SAME: offchip_bytes = 76800 : i64

// 30 query rows do not divide a core's 50 (the tile would need 2 x 87040 = 174080 B of LX,
// less the second slots of K, V and the 30-row Q: 174080 - 12800 - 12800 - 3840 = 144640 B).
// BAD: error: kernel @k0: tile [30, 64, 100] must divide the core's query rows (with the padded value width and all key rows), and fit 1677696 B of LX with double buffering (it needs 144640 B)
