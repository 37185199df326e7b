// RUN: spyre-opt %S/Inputs/swiglu-mlp.mlir -p 'spyre-legalize,spyre-stickify,spyre-fuse,spyre-partition-cores' | filecheck %s
// RUN: spyre-opt %S/Inputs/swiglu-mlp.mlir -p 'spyre-legalize,spyre-stickify,spyre-fuse,spyre-partition-cores{keep_in_lx=false}' | filecheck %s --check-prefix=APART

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
// tensor) in 4492 cycles, k1 688128 B (819200 - 131072, and on 4x4 rather than 4x8) in
// 5376 cycles: 9868 cycles and 1245184 B for both, 1901 cycles and 262144 B less than
// apart. So both kernels take the common split and k0 records which result it keeps.
// CHECK: spyre.kernel "k0"{{.*}}spyre.partition = {choice = "4x4", reason = "%silu kept in LX between @k0 and @k1 on a common 4x4 split (8192 B a core): 9868 predicted cycles and 1245184 B off chip for both, against 11769 and 1507328 B on their own best splits with it through LPDDR; on its own: 4x4,
// CHECK-SAME: predicted_cycles = 4.492000e+03 : f64, offchip_bytes = 557056
// CHECK-SAME: spyre.lx_results = array<i64: 0>
// CHECK: spyre.kernel "k1"
// CHECK-SAME: spyre.partition = {choice = "4x4", reason = "%silu kept in LX between @k0 and @k1 {{.*}}; on its own: 4x8,
// CHECK-SAME: predicted_cycles = 5.376000e+03 : f64, offchip_bytes = 688128
// k1's %mul feeds k2's matmul as A, whose core reads whole rows of it: no pair, it goes
// through LPDDR, and k1 keeps nothing.
// CHECK: spyre.kernel "k2"
// CHECK-NOT: spyre.lx_results
// CHECK: func.return
