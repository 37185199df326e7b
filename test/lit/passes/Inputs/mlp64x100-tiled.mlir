// The MLP of mlp64x100.mlir after spyre-stickify and spyre-fuse, with the core split and
// tiles fixed by hand (as a user override would): k0 on one core in 64x64x128 tiles, k1 on
// two cores (rows) in 32x64x128 tiles. Tests of the later passes start here so they do not
// move when the cost model is retuned.
builtin.module {
  func.func @forward(%x: tensor<64x100xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 64, 128>, device_dtype = "dl16", pad = "zero"}}) -> tensor<64x100xf16> {
    %w1 = spyre.param {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 128, 128>, device_dtype = "dl16", pad = "zero"}, param_name = "fc1.weight", permutation = array<i64: 1, 0>} : tensor<100x100xf16>
    %b1 = spyre.param {spyre.layout = {stick_dim = 0 : i64, padded_shape = array<i64: 128>, device_dtype = "dl16", pad = "zero"}, param_name = "fc1.bias"} : tensor<100xf16>
    %w2 = spyre.param {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 128, 128>, device_dtype = "dl16", pad = "zero"}, param_name = "fc2.weight", permutation = array<i64: 1, 0>} : tensor<100x100xf16>
    %b2 = spyre.param {spyre.layout = {stick_dim = 0 : i64, padded_shape = array<i64: 128>, device_dtype = "dl16", pad = "zero"}, param_name = "fc2.bias"} : tensor<100xf16>
    %r1 = spyre.kernel "k0"(%x, %w1, %b1) {grid = [1 : i64, 1 : i64], tile = [64 : i64, 64 : i64, 128 : i64], fused = ["linear", "relu"], reason = "matmul with tile-op epilogue", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 64, 128>, device_dtype = "dl16", pad = "zero"}} : (tensor<64x100xf16>, tensor<100x100xf16>, tensor<100xf16>) -> tensor<64x100xf16> {
    ^bb0(%x_1: tensor<64x100xf16>, %w1_1: tensor<100x100xf16>, %b1_1: tensor<100xf16>):
      %y1 = spyre.matmul %x_1, %w1_1 bias %b1_1 {fx_node = "linear", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 64, 128>, device_dtype = "dl16", pad = "zero"}} : tensor<64x100xf16>, tensor<100x100xf16>, tensor<100xf16> -> tensor<64x100xf16>
      %r1_1 = spyre.relu %y1 {fx_node = "relu", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 64, 128>, device_dtype = "dl16", pad = "zero"}} : tensor<64x100xf16> -> tensor<64x100xf16>
      spyre.yield %r1_1 : tensor<64x100xf16>
    }
    %g2 = spyre.kernel "k1"(%r1, %w2, %b2) {grid = [2 : i64, 1 : i64], tile = [32 : i64, 64 : i64, 128 : i64], fused = ["linear_1", "gelu"], reason = "matmul with tile-op epilogue", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 64, 128>, device_dtype = "dl16", pad = "zero"}} : (tensor<64x100xf16>, tensor<100x100xf16>, tensor<100xf16>) -> tensor<64x100xf16> {
    ^bb0(%r1_2: tensor<64x100xf16>, %w2_1: tensor<100x100xf16>, %b2_1: tensor<100xf16>):
      %y2 = spyre.matmul %r1_2, %w2_1 bias %b2_1 {fx_node = "linear_1", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 64, 128>, device_dtype = "dl16", pad = "zero"}} : tensor<64x100xf16>, tensor<100x100xf16>, tensor<100xf16> -> tensor<64x100xf16>
      %g2_1 = spyre.gelu %y2 {fx_node = "gelu", spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 64, 128>, device_dtype = "dl16", pad = "zero"}} : tensor<64x100xf16> -> tensor<64x100xf16>
      spyre.yield %g2_1 : tensor<64x100xf16>
    }
    func.return %g2 : tensor<64x100xf16>
  }
}

