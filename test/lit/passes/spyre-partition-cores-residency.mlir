// RUN: spyre-opt %s -p 'spyre-partition-cores{share="none"}' | filecheck %s

// A skinny, memory-bound matmul: 4096x512 @ 512x128 fp16 (2 column sticks). Minimum off
// chip: A 4194304 + B 131072 + output 1048576 = 5373952 B. Each split is scored with its
// best tile and loop order. On 8x1 each core keeps its B block (512x128, 131072 B) resident
// and streams its 512 rows of A once: 131072 + 524288 + 131072 (output) = 786432 B per core,
// 6291456 B in all. More cores do not make LPDDR faster, and every extra core re-reads B:
// 32x1 moves 4194304 + 32 x 131072 + 1048576 = 9437184 B, so the split stays at 8 cores
// (the ledger says what 32 would have moved). The split is not capped: every even split up
// to 32 cores is scored, 11 here (gm | 4096 up to 32, gn | 2, gm * gn <= 32).
// CHECK: spyre.kernel "k0"{{.*}}grid = [8 : i64, 1 : i64], spyre.partition = {choice = "8x1", reason = "fewest predicted cycles of 11 even splits of 4096 rows x 2 output sticks; bound by dma; {{[0-9.]+}}x faster than one core; 32 cores (32x1) would move 9437184 B off chip against 6291456 B"
// CHECK-SAME: offchip_bytes = 6291456 : i64

func.func @skinny(%x: tensor<4096x512xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 4096, 512>, device_dtype = "dl16", pad = "zero"}}) -> tensor<4096x128xf16> {
  %w = spyre.param {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 512, 128>, device_dtype = "dl16", pad = "zero"}, param_name = "w"} : tensor<512x128xf16>
  %y = spyre.kernel "k0"(%x, %w) {fused = ["mm"], reason = "single op", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 4096, 128>, device_dtype = "dl16", pad = "zero"}} : (tensor<4096x512xf16>, tensor<512x128xf16>) -> tensor<4096x128xf16> {
  ^bb0(%x_1: tensor<4096x512xf16>, %w_1: tensor<512x128xf16>):
    %y_1 = spyre.matmul %x_1, %w_1 {fx_node = "mm", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 4096, 128>, device_dtype = "dl16", pad = "zero"}} : tensor<4096x512xf16>, tensor<512x128xf16> -> tensor<4096x128xf16>
    spyre.yield %y_1 : tensor<4096x128xf16>
  }
  func.return %y : tensor<4096x128xf16>
}
