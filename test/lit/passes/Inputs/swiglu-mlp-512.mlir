func.func @forward(%x: tensor<1x512x256xf16>) -> tensor<1x512x256xf16> attributes {spyre.output_names = ["linear_2"]} {
  %p_g_weight = spyre.param {param_name = "g.weight"} : tensor<1024x256xf16>
  %p_u_weight = spyre.param {param_name = "u.weight"} : tensor<1024x256xf16>
  %p_d_weight = spyre.param {param_name = "d.weight"} : tensor<256x1024xf16>
  %linear = spyre.aten "aten.linear.default"(%x, %p_g_weight) {fx_node = "linear", args = {}, operand_names = ["input", "weight"]} : (tensor<1x512x256xf16>, tensor<1024x256xf16>) -> tensor<1x512x1024xf16>
  %silu = spyre.aten "aten.silu.default"(%linear) {fx_node = "silu", args = {}, operand_names = ["self"]} : (tensor<1x512x1024xf16>) -> tensor<1x512x1024xf16>
  %linear_1 = spyre.aten "aten.linear.default"(%x, %p_u_weight) {fx_node = "linear_1", args = {}, operand_names = ["input", "weight"]} : (tensor<1x512x256xf16>, tensor<1024x256xf16>) -> tensor<1x512x1024xf16>
  %mul = spyre.aten "aten.mul.Tensor"(%silu, %linear_1) {fx_node = "mul", args = {}, operand_names = ["self", "other"]} : (tensor<1x512x1024xf16>, tensor<1x512x1024xf16>) -> tensor<1x512x1024xf16>
  %linear_2 = spyre.aten "aten.linear.default"(%mul, %p_d_weight) {fx_node = "linear_2", args = {}, operand_names = ["input", "weight"]} : (tensor<1x512x1024xf16>, tensor<256x1024xf16>) -> tensor<1x512x256xf16>
  func.return %linear_2 : tensor<1x512x256xf16>
}
