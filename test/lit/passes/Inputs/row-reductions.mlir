func.func @forward(%a: tensor<4x65536xf16>, %b: tensor<2x4096xf16>, %c: tensor<2x4096xf16>, %d: tensor<2x4000xf16>) -> (tensor<4x1xf16>, tensor<2x4096xf16>, tensor<2x4096xf16>, tensor<2x1xf16>) {
  %sum = spyre.reduce_sum %a {fx_node = "sum"} : tensor<4x65536xf16> -> tensor<4x1xf16>
  %2 = spyre.mul %b, %b {fx_node = "rms_norm"} : tensor<2x4096xf16>, tensor<2x4096xf16> -> tensor<2x4096xf16>
  %3 = spyre.reduce_sum %2 {fx_node = "rms_norm"} : tensor<2x4096xf16> -> tensor<2x1xf16>
  %4 = spyre.mul_scalar %3 {fx_node = "rms_norm", value = 0.000244140625 : f64} : tensor<2x1xf16> -> tensor<2x1xf16>
  %5 = spyre.add_scalar %4 {fx_node = "rms_norm", value = 1.000000e-06 : f64} : tensor<2x1xf16> -> tensor<2x1xf16>
  %6 = spyre.rsqrt %5 {fx_node = "rms_norm"} : tensor<2x1xf16> -> tensor<2x1xf16>
  %rms_norm = spyre.mul %b, %6 {fx_node = "rms_norm"} : tensor<2x4096xf16>, tensor<2x1xf16> -> tensor<2x4096xf16>
  %7 = spyre.reduce_max %c {fx_node = "softmax"} : tensor<2x4096xf16> -> tensor<2x1xf16>
  %8 = spyre.sub %c, %7 {fx_node = "softmax"} : tensor<2x4096xf16>, tensor<2x1xf16> -> tensor<2x4096xf16>
  %9 = spyre.exp %8 {fx_node = "softmax"} : tensor<2x4096xf16> -> tensor<2x4096xf16>
  %10 = spyre.reduce_sum %9 {fx_node = "softmax"} : tensor<2x4096xf16> -> tensor<2x1xf16>
  %softmax = spyre.div %9, %10 {fx_node = "softmax"} : tensor<2x4096xf16>, tensor<2x1xf16> -> tensor<2x4096xf16>
  %padded = spyre.reduce_sum %d {fx_node = "padded_sum"} : tensor<2x4000xf16> -> tensor<2x1xf16>
  func.return %sum, %rms_norm, %softmax, %padded : tensor<4x1xf16>, tensor<2x4096xf16>, tensor<2x4096xf16>, tensor<2x1xf16>
}
