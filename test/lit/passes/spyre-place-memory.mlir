// RUN: spyre-opt %S/Inputs/mlp64x100-tiled.mlir -p convert-spyre-to-ktir,spyre-place-memory | filecheck %s

// LPDDR: the 64x128 fp16 input (16 KiB) at 0 in segment 0; weights in segment 1
// (1 << 34 = 17179869184); k0's output after the input; k1's output cannot reuse k0's,
// which it reads, so the activations need 3 x 16 KiB.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: spyre.addr = 0 : i64
// CHECK-SAME: spyre.lpddr_bytes = {activations = 49152 : i64, weights = 66048 : i64}
// CHECK: spyre.addr = 17179869184 : i64, param_name = "fc1.weight"
// CHECK: spyre.launch @k0{{.*}}spyre.addr = [16384 : i64]
// CHECK: spyre.launch @k1{{.*}}spyre.addr = [32768 : i64]

// LX in k0 (64x64x128 tiles): the resident A block (2 x 16 KiB fp16) first, then the
// accumulator (2 x 16 KiB f32) and B (2 x 16 KiB); the matmul and the in-place bias add
// and relu reuse the accumulator's slots; the fp16 output copy gets its own pair.
// Total = the tiling's 114944 B.
// CHECK-LABEL: func.func @k0
// CHECK-SAME: spyre.lx_bytes = 114944 : i64
// CHECK: ktdp.load {{.*}}lx_slots = array<i64: 0, 16384>
// CHECK: linalg.fill {{.*}}lx_slots = array<i64: 32768, 49152>
// CHECK: ktdp.load {{.*}}lx_slots = array<i64: 65536, 81920>
// CHECK: {spyre.fn = "matmul", lx_slots = array<i64: 32768, 49152>}
// CHECK: {spyre.fn = "add", lx_slots = array<i64: 32768, 49152>}
// CHECK: {spyre.fn = "relu", lx_slots = array<i64: 32768, 49152>}
// CHECK: spyre.fn = "copy"
