// RUN: spyre-opt %S/Inputs/mlp64x100.mlir -p 'spyre-stickify,spyre-fuse,spyre-partition-cores{share="none" keep_in_lx=false}' | filecheck %s
// (keep_in_lx=false: each kernel on its own best split; the joint choice of neighbouring
// kernels that keep a tensor in LX is checked in spyre-partition-cores-keep.mlir.)

// The 64x100 fp16 output has 64 rows and 2 column sticks. Even splits (gm | 64, gn | 2,
// gm * gn <= 32): gm in {1,2,4,8,16,32} times gn in {1,2}, less 32x2 (64 cores), gives
// 11 candidates, each scored with its best tiling. The
// kernels are small (1.6 MFLOP each), so splitting mostly replicates the 32 KB weight reads:
// the predicted best uses one or two cores, and the ledger lists the runners-up.
// CHECK: spyre.kernel "k0"{{.*}}grid = [[[GM0:[0-9]+]] : i64, [[GN0:[0-9]+]] : i64], spyre.partition = {choice = "[[GM0]]x[[GN0]]", reason = "fewest predicted cycles of 11 even splits of 64 rows x 2 output sticks
// CHECK-SAME: alternatives = ["{{[0-9]+x[0-9]+}}: {{[0-9]+}} cycles, {{[0-9]+}} B off chip (resident {{a|b|acc}})",
// CHECK: spyre.kernel "k1"{{.*}}grid = [{{[0-9]+}} : i64, {{[0-9]+}} : i64], spyre.partition = {choice =
