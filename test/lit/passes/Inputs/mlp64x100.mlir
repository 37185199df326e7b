func.func @forward(%x: tensor<64x100xf16>) -> tensor<64x100xf16> {
  %w1 = spyre.param {param_name = "fc1.weight", permutation = array<i64: 1, 0>} : tensor<100x100xf16>
  %b1 = spyre.param {param_name = "fc1.bias"} : tensor<100xf16>
  %w2 = spyre.param {param_name = "fc2.weight", permutation = array<i64: 1, 0>} : tensor<100x100xf16>
  %b2 = spyre.param {param_name = "fc2.bias"} : tensor<100xf16>
  %y1 = spyre.matmul %x, %w1 bias %b1 {fx_node = "linear"} : tensor<64x100xf16>, tensor<100x100xf16>, tensor<100xf16> -> tensor<64x100xf16>
  %r1 = spyre.relu %y1 {fx_node = "relu"} : tensor<64x100xf16> -> tensor<64x100xf16>
  %y2 = spyre.matmul %r1, %w2 bias %b2 {fx_node = "linear_1"} : tensor<64x100xf16>, tensor<100x100xf16>, tensor<100xf16> -> tensor<64x100xf16>
  %g2 = spyre.gelu %y2 {fx_node = "gelu"} : tensor<64x100xf16> -> tensor<64x100xf16>
  func.return %g2 : tensor<64x100xf16>
}
