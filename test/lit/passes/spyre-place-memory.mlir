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

// LX in k0 (64x64x128 tiles, A resident): the A block (16 KiB fp16) first, in one slot,
// since the core's single row tile loads it once (its loop runs one trip); then the
// accumulator (2 x 16 KiB f32) and B (2 x 16 KiB); the matmul and the in-place bias add
// and relu reuse the accumulator's slots; the fp16 output copy gets its own pair.
// Total = the tiling's 114944 B less the unused second A slot = 98560 B.
// CHECK-LABEL: func.func @k0
// CHECK-SAME: spyre.lx_bytes = 98560 : i64
// CHECK: ktdp.load {{.*}}lx_slots = array<i64: 0, 0>
// CHECK: linalg.fill {{.*}}lx_slots = array<i64: 16384, 32768>
// CHECK: ktdp.load {{.*}}lx_slots = array<i64: 49152, 65536>
// CHECK: {spyre.fn = "matmul", lx_slots = array<i64: 16384, 32768>}
// CHECK: {spyre.fn = "add", lx_slots = array<i64: 16384, 32768>}
// CHECK: {spyre.fn = "relu", lx_slots = array<i64: 16384, 32768>}
// CHECK: spyre.fn = "copy"
