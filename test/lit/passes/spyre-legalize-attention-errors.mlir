// RUN: not spyre-opt %s -p spyre-legalize 2>&1 | filecheck %s

// Attention variants without a lowering are reported all at once, each with its node, line
// and what to do instead.
// CHECK: error: {{.*}}3 op(s) have no Spyre lowering yet:
// CHECK-NEXT: m.py:5: aten.scaled_dot_product_attention.default (node sdpa): dropout_p=0.1 (attention dropout is training-time only; export the model in eval mode with dropout_p=0)
// CHECK-NEXT: m.py:6: aten.scaled_dot_product_attention.default (node sdpa_1): attn_mask of shape [2, 3, 16, 16] (it must broadcast to the scores [2, 2, 16, 16]: S columns, every other dim 1 or the scores' own)
// CHECK-NEXT: m.py:7: aten.scaled_dot_product_attention.default (node sdpa_2): a i32 attn_mask (a boolean mask is lowered when it is an input or a comparison computed in the program; pass an additive float mask: 0 where allowed, a large finite negative value such as -30000 where not)
func.func @unsupported(%q: tensor<2x2x16x64xf16>, %m: tensor<2x3x16x16xf16>, %b: tensor<16x16xi32>) -> (tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>) {
  %a = spyre.aten "aten.scaled_dot_product_attention.default"(%q, %q, %q) {args = {dropout_p = 1.000000e-01 : f64, is_causal = false}, operand_names = ["query", "key", "value"], fx_node = "sdpa", source = "m.py:5"} : (tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>) -> tensor<2x2x16x64xf16>
  %c = spyre.aten "aten.scaled_dot_product_attention.default"(%q, %q, %q, %m) {args = {dropout_p = 0.000000e+00 : f64, is_causal = false}, operand_names = ["query", "key", "value", "attn_mask"], fx_node = "sdpa_1", source = "m.py:6"} : (tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x3x16x16xf16>) -> tensor<2x2x16x64xf16>
  %d = spyre.aten "aten.scaled_dot_product_attention.default"(%q, %q, %q, %b) {args = {dropout_p = 0.000000e+00 : f64, is_causal = false}, operand_names = ["query", "key", "value", "attn_mask"], fx_node = "sdpa_2", source = "m.py:7"} : (tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<16x16xi32>) -> tensor<2x2x16x64xf16>
  func.return %a, %c, %d : tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>
}
