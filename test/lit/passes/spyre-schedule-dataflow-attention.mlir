// RUN: spyre-opt %S/Inputs/attention-tiled.mlir -p convert-spyre-to-ktir,spyre-place-memory,spyre-schedule-dataflow | filecheck %s

// Core 3 = (x 1, y 1): query head 1, query rows 50..99, one tile of 50 rows. LPDDR: q at 0
// (100 rows of 256 B: two heads a row), k at 25600, v at 38400 (100 rows of 128 B), the
// output at 51200 (same layout as q).
// CHECK: spyrecode.program "k0" attributes {{.*}}num_cores = 4 : i64
// CHECK: spyrecode.core attributes {id = 3 : i64}
// K and V of key/value head 0, whole, once per head (100 rows, pitch 128); the core has
// one head and one query tile, so K, V and Q are loaded once and get one LX slot each.
// CHECK-NEXT: spyrecode.dma_load {ddr = 25600 : i64, lx = 0 : i64, rows = 100 : i64, row_bytes = 128 : i64, ddr_pitch = 128 : i64, lx_pitch = 128 : i64, unit = 0 : i64, deps = array<i64>}
// CHECK-NEXT: spyrecode.dma_load {ddr = 38400 : i64, lx = 12800 : i64, rows = 100 : i64, row_bytes = 128 : i64, ddr_pitch = 128 : i64, lx_pitch = 128 : i64, unit = 0 : i64, deps = array<i64>}
// The folded head transpose: head 1's query rows 50.. start at 50 * 256 + 64 * 2 = 12928
// and are one stick of every 256-byte row: one DMA with an LPDDR pitch of 256.
// CHECK-NEXT: spyrecode.dma_load {ddr = 12928 : i64, lx = 25600 : i64, rows = 50 : i64, row_bytes = 128 : i64, ddr_pitch = 256 : i64, lx_pitch = 128 : i64, unit = 0 : i64, deps = array<i64>}
// Scores Q K^T, 25 query rows per corelet, K read as stored ([n = 100, k = 64]), into fp32
// rows of round_up(100 * 4, 128) = 512 B; the second half starts 25 * 128 B into Q.
// CHECK-NEXT: spyrecode.pt_matmul_nt {a = 25600 : i64, b = 0 : i64, c = 32000 : i64, m = 25 : i64, k = 64 : i64, n = 100 : i64, a_pitch = 128 : i64, b_pitch = 128 : i64, c_pitch = 512 : i64, in_dtype = 1 : i64, accumulate = 0 : i64, unit = 0 : i64, deps = array<i64: 0, 2>}
// CHECK-NEXT: spyrecode.pt_matmul_nt {a = 28800 : i64, {{.*}}c = 44800 : i64, {{.*}}unit = 1 : i64, deps = array<i64: 0, 2>}
// Scale by 0.125 (fp32 bits 0x3E000000 = 1040187392) in place.
// CHECK-NEXT: spyrecode.sfu_scalar {fn = 2 : i64, src = 32000 : i64, dst = 32000 : i64, rows = 25 : i64, cols = 100 : i64, {{.*}}imm = 1040187392 : i64, reverse = 0 : i64, unit = 0 : i64, deps = array<i64: 3>}
// CHECK-NEXT: spyrecode.sfu_scalar {{.*}}unit = 1 : i64, deps = array<i64: 4>}
// The causal mask: key c > query row 50 + r (first half) and 75 + r (second half) gets
// -30000 (bits 0xC6EA6000 = 3337248768).
// CHECK-NEXT: spyrecode.sfu_mask {src = 32000 : i64, dst = 32000 : i64, rows = 25 : i64, cols = 100 : i64, src_pitch = 512 : i64, dst_pitch = 512 : i64, src_dtype = 0 : i64, dst_dtype = 0 : i64, diag = 50 : i64, imm = 3337248768 : i64, unit = 0 : i64, deps = array<i64: 5>}
// CHECK-NEXT: spyrecode.sfu_mask {src = 44800 : i64, {{.*}}diag = 75 : i64, {{.*}}unit = 1 : i64, deps = array<i64: 6>}
// Softmax over the 100 valid columns: max, subtract, exp, sum, divide into fp16 P (rows of
// round_up(100 * 2, 128) = 256 B).
// CHECK-NEXT: spyrecode.sfu_reduce {fn = 1 : i64, src = 32000 : i64, {{.*}}cols = 100 : i64
// CHECK-NEXT: spyrecode.sfu_reduce {fn = 1 : i64
// CHECK-NEXT: spyrecode.sfu_colwise {fn = 1 : i64
// CHECK-NEXT: spyrecode.sfu_colwise {fn = 1 : i64
// CHECK-NEXT: spyrecode.sfu_unary {fn = 4 : i64
// CHECK-NEXT: spyrecode.sfu_unary {fn = 4 : i64
// CHECK-NEXT: spyrecode.sfu_reduce {fn = 0 : i64
// CHECK-NEXT: spyrecode.sfu_reduce {fn = 0 : i64
// CHECK-NEXT: spyrecode.sfu_colwise {fn = 3 : i64, {{.*}}dst = 147200 : i64, {{.*}}dst_pitch = 256 : i64, {{.*}}dst_dtype = 1 : i64, {{.*}}unit = 0 : i64
// CHECK-NEXT: spyrecode.sfu_colwise {fn = 3 : i64, {{.*}}dst = 153600 : i64
// O = P V: k = 100 key rows (P's padding columns 100..127 are never read), V from its slot.
// It waits for V's load (pc 1) and its half of P.
// CHECK-NEXT: spyrecode.pt_matmul {a = 147200 : i64, b = 12800 : i64, c = 172800 : i64, m = 25 : i64, k = 100 : i64, n = 64 : i64, a_pitch = 256 : i64, b_pitch = 128 : i64, {{.*}}deps = array<i64: 1, 17>}
// CHECK-NEXT: spyrecode.pt_matmul {a = 153600 : i64, {{.*}}deps = array<i64: 1, 18>}
// CHECK-NEXT: spyrecode.sfu_unary {fn = 0 : i64, {{.*}}dst_dtype = 1 : i64
// CHECK-NEXT: spyrecode.sfu_unary {fn = 0 : i64, {{.*}}dst_dtype = 1 : i64
// The folded transpose back: rows 50.. of head 1 go to 51200 + 12928 = 64128, pitch 256.
// The fp16 output tile (50 rows of one 128 B stick) takes the slot of the row max and row
// sum (the same geometry), free once P is divided out: spyre-place-memory's liveness reuse.
// CHECK-NEXT: spyrecode.dma_store {lx = 83200 : i64, ddr = 64128 : i64, rows = 50 : i64, row_bytes = 128 : i64, lx_pitch = 128 : i64, ddr_pitch = 256 : i64, unit = 0 : i64, deps = array<i64: 21, 22>}
