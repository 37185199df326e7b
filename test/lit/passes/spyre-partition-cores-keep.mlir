// RUN: spyre-opt %S/Inputs/swiglu-mlp.mlir -p 'spyre-legalize,spyre-stickify,spyre-fuse,spyre-partition-cores' | filecheck %s
// RUN: spyre-opt %S/Inputs/swiglu-mlp.mlir -p 'spyre-legalize,spyre-stickify,spyre-fuse,spyre-partition-cores{keep_in_lx=false}' | filecheck %s --check-prefix=APART
// RUN: spyre-opt %S/Inputs/swiglu-mlp-512.mlir -p 'spyre-legalize,spyre-stickify,spyre-fuse,spyre-partition-cores' | filecheck %s --check-prefix=CHAIN

// A result kept in LX for the next kernel (design note 61). The SwiGLU MLP at 64 tokens,
// hidden 256, MLP 1024 (fp16) is three kernels: k0 = gate matmul + silu, k1 = up matmul
// whose epilogue multiplies by k0's %silu (64 x 1024, read elementwise: the same element
// of the output tile), k2 = down matmul reading k1's %mul as its A operand.
//
// Alone, each kernel takes its own best split. k0: 4x4, 5424 predicted cycles, 688128 B
// off chip; k1: 4x8, 6345 cycles, 819200 B. Together 11769 cycles and 1507328 B.
// APART: spyre.kernel "k0"{{.*}}spyre.partition = {choice = "4x4", {{.*}}predicted_cycles = 5.424000e+03 : f64, offchip_bytes = 688128
// APART: spyre.kernel "k1"{{.*}}spyre.partition = {choice = "4x8", {{.*}}predicted_cycles = 6.345000e+03 : f64, offchip_bytes = 819200
// APART-NOT: spyre.lx_results
//
// Scored together on each split both allow, with %silu kept in the cores' LX: k0 rounds
// its tiles into its core's slice instead of storing them, k1 reads them there instead of
// loading them. On 4x4 a core owns 64/4 = 16 rows and 1024/4 = 256 columns of %silu: a
// slice of 16 x 256 x 2 B = 8192 B, taken from both kernels' LX budget (1677696 B).
// k0 now moves 557056 B (688128 - 131072: no store of the 64 x 1024 x 2 B = 131072 B
// tensor) in 4448 cycles (and no store to wait for at its end), k1 688128 B (819200 -
// 131072, and on 4x4 rather than 4x8) in 5376 cycles: 9824 cycles and 1245184 B for both,
// 1945 cycles and 262144 B less than apart (k2, 5388 cycles alone, is in both sums: 15212
// against 17157 for the three). So both take the common split and k0 records which result
// it keeps.
// The three kernels are one chain (k1 reads k0's result, k2 reads k1's), scored by a
// dynamic program over their splits and which tensors they keep. Here keeping %mul for k2
// would need whole rows on every core (k2 reads it as its matmul's A) and does not pay:
// k2 stays on its own split, and its ledger is unchanged.
// CHECK: spyre.kernel "k0"{{.*}}spyre.partition = {choice = "4x4", reason = "kept in LX: %silu (@k0 -> @k1, 8192 B a core); 15212 predicted cycles and 1933312 B off chip for @k0, @k1, @k2, against 17157 and 2195456 B on their own best splits with every tensor through LPDDR; on its own: 4x4,
// CHECK-SAME: predicted_cycles = 4.448000e+03 : f64, offchip_bytes = 557056
// CHECK-SAME: spyre.lx_results = array<i64: 0>
// CHECK: spyre.kernel "k1"
// CHECK-SAME: spyre.partition = {choice = "4x4", reason = "kept in LX: %silu {{.*}}; on its own: 4x8,
// CHECK-SAME: predicted_cycles = 5.376000e+03 : f64, offchip_bytes = 688128
// k1's %mul feeds k2's matmul as A, whose core reads whole rows of it: no pair, it goes
// through LPDDR, and k1 keeps nothing.
// CHECK: spyre.kernel "k2"
// CHECK-SAME: spyre.partition = {choice = "4x4", reason = "fewest predicted cycles
// CHECK-NOT: spyre.lx_results
// CHECK: func.return

// The same MLP at 512 tokens. Apart: k0 2x16 (14445 cycles, 1835008 B), k1 2x16 (22017,
// 2883584 B), k2 8x4 (14300, 1835008 B): 50762 cycles and 6553600 B. On 32x1 each core owns
// 16 whole rows, so k2's core finds the rows of %mul its matmul reads as A in its own LX,
// and both tensors stay there: %silu's slice is 16 x 1024 x 2 B = 32768 B, and %mul takes
// the same place in k1 (each product tile overwrites the silu tile it was computed from).
// Each kernel then reads its 256 x 1024 x 2 = 524288 B of weights and either x's 16 rows a
// core (512 x 256 x 2 = 262144 B in all: k0, k1) or writes its 512 x 256 output (262144 B:
// k2): 786432 B each, 2359296 B for the chain, 4194304 B less than apart (two 1 MB tensors,
// each stored and loaded once), in 31136 predicted cycles.
// CHAIN: spyre.kernel "k0"{{.*}}spyre.partition = {choice = "32x1", reason = "kept in LX: %silu (@k0 -> @k1, 32768 B a core), %mul (@k1 -> @k2, 32768 B a core); 31136 predicted cycles and 2359296 B off chip for @k0, @k1, @k2, against 50762 and 6553600 B on their own best splits with every tensor through LPDDR; on its own: 2x16,
// CHAIN-SAME: offchip_bytes = 786432 : i64
// CHAIN-SAME: spyre.lx_results = array<i64: 0>
// CHAIN: spyre.kernel "k1"{{.*}}spyre.partition = {choice = "32x1", {{.*}}; on its own: 2x16,
// CHAIN-SAME: offchip_bytes = 786432 : i64
// CHAIN-SAME: spyre.lx_results = array<i64: 0>
// CHAIN: spyre.kernel "k2"{{.*}}spyre.partition = {choice = "32x1", {{.*}}; on its own: 8x4,
// CHAIN-SAME: offchip_bytes = 786432 : i64
