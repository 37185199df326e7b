// RUN: spyre-opt %s -p spyre-legalize | filecheck %s
// RUN: spyre-opt %s -p spyre-legalize | spyre-opt --print-op-generic | spyre-opt | filecheck %s

// Eager attention as Hugging Face's `eager_attention_forward` exports it (core ATen): the
// [1, 2, 16, 32] fp32 heads are flattened to a [2, 16, 32] batch for bmm, the key through
// permute [0, 1, 3, 2] (k^T: [1, 2, 32, 16]), scores * 0.125 + a [1, 1, 16, 16] additive
// mask, softmax over the 16 keys, then P V and the view back to [1, 2, 16, 32]. That is
// softmax(q k^T * 0.125 + mask) v, so the whole chain is one spyre.attention of the
// unflattened q, k, v; the mask loses its two size-1 dims in a free reshape, and the
// permute and both bmms are gone.
// CHECK-LABEL: func.func @eager_mha
// CHECK:      %[[M:.*]] = spyre.reshape %m {{.*}}: tensor<1x1x16x16xf32> -> tensor<16x16xf32>
// CHECK-NEXT: %[[O:.*]] = spyre.attention %q, %k, %v mask %[[M]] {fx_node = "bmm_1", scale = 1.250000e-01 : f64} : tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<16x16xf32> -> tensor<1x2x16x32xf32>
// CHECK-NEXT: func.return %[[O]]
func.func @eager_mha(%q: tensor<1x2x16x32xf32>, %k: tensor<1x2x16x32xf32>, %v: tensor<1x2x16x32xf32>, %m: tensor<1x1x16x16xf32>) -> tensor<1x2x16x32xf32> {
  %kt = spyre.aten "aten.permute.default"(%k) {args = {dims = [0 : i64, 1 : i64, 3 : i64, 2 : i64]}, operand_names = ["self"], fx_node = "permute"} : (tensor<1x2x16x32xf32>) -> tensor<1x2x32x16xf32>
  %qe = spyre.aten "aten.expand.default"(%q) {args = {size = [1 : i64, 2 : i64, 16 : i64, 32 : i64], implicit = false}, operand_names = ["self"], fx_node = "expand"} : (tensor<1x2x16x32xf32>) -> tensor<1x2x16x32xf32>
  %q3 = spyre.aten "aten.view.default"(%qe) {args = {size = [2 : i64, 16 : i64, 32 : i64]}, operand_names = ["self"], fx_node = "view"} : (tensor<1x2x16x32xf32>) -> tensor<2x16x32xf32>
  %ke = spyre.aten "aten.expand.default"(%kt) {args = {size = [1 : i64, 2 : i64, 32 : i64, 16 : i64], implicit = false}, operand_names = ["self"], fx_node = "expand_1"} : (tensor<1x2x32x16xf32>) -> tensor<1x2x32x16xf32>
  %k3 = spyre.aten "aten.view.default"(%ke) {args = {size = [2 : i64, 32 : i64, 16 : i64]}, operand_names = ["self"], fx_node = "view_1"} : (tensor<1x2x32x16xf32>) -> tensor<2x32x16xf32>
  %s3 = spyre.aten "aten.bmm.default"(%q3, %k3) {args = {}, operand_names = ["self", "mat2"], fx_node = "bmm"} : (tensor<2x16x32xf32>, tensor<2x32x16xf32>) -> tensor<2x16x16xf32>
  %s = spyre.aten "aten.view.default"(%s3) {args = {size = [1 : i64, 2 : i64, 16 : i64, 16 : i64]}, operand_names = ["self"], fx_node = "view_2"} : (tensor<2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %ss = spyre.aten "aten.mul.Tensor"(%s) {args = {other = 1.250000e-01 : f64}, operand_names = ["self"], fx_node = "mul"} : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %sm = spyre.aten "aten.add.Tensor"(%ss, %m) {args = {alpha = 1 : i64}, operand_names = ["self", "other"], fx_node = "add"} : (tensor<1x2x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<1x2x16x16xf32>
  %p = spyre.aten "aten.softmax.int"(%sm) {args = {dim = -1 : i64, dtype = "float32"}, operand_names = ["self"], fx_node = "softmax"} : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %pc = spyre.aten "aten.clone.default"(%p) {args = {}, operand_names = ["self"], fx_node = "clone"} : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %pe = spyre.aten "aten.expand.default"(%pc) {args = {size = [1 : i64, 2 : i64, 16 : i64, 16 : i64], implicit = false}, operand_names = ["self"], fx_node = "expand_2"} : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %p3 = spyre.aten "aten.view.default"(%pe) {args = {size = [2 : i64, 16 : i64, 16 : i64]}, operand_names = ["self"], fx_node = "view_3"} : (tensor<1x2x16x16xf32>) -> tensor<2x16x16xf32>
  %ve = spyre.aten "aten.expand.default"(%v) {args = {size = [1 : i64, 2 : i64, 16 : i64, 32 : i64], implicit = false}, operand_names = ["self"], fx_node = "expand_3"} : (tensor<1x2x16x32xf32>) -> tensor<1x2x16x32xf32>
  %v3 = spyre.aten "aten.view.default"(%ve) {args = {size = [2 : i64, 16 : i64, 32 : i64]}, operand_names = ["self"], fx_node = "view_4"} : (tensor<1x2x16x32xf32>) -> tensor<2x16x32xf32>
  %o3 = spyre.aten "aten.bmm.default"(%p3, %v3) {args = {}, operand_names = ["self", "mat2"], fx_node = "bmm_1"} : (tensor<2x16x16xf32>, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %o = spyre.aten "aten.view.default"(%o3) {args = {size = [1 : i64, 2 : i64, 16 : i64, 32 : i64]}, operand_names = ["self"], fx_node = "view_5"} : (tensor<2x16x32xf32>) -> tensor<1x2x16x32xf32>
  func.return %o : tensor<1x2x16x32xf32>
}

// fp16 without a mask: `/ 8.0` is a scale of 1/8 = 0.125; the softmax runs in f32
// (`dtype=float32`) and its result is cast back to f16 before P V, which is what the
// attention kernel does (softmax in f32, P rounded to the input type). The key is
// transposed with transpose.int(-1, -2). Grouped-query heads: two query heads read one
// key/value head, repeated by unsqueeze + expand + clone + view (repeat_kv) in front of
// the pattern; that repeat stays (an expand_rows that spyre-fuse folds into the kernel's
// reads).
// CHECK-LABEL: func.func @eager_gqa_f16
// CHECK:      %[[U:.*]] = spyre.reshape %k {{.*}}: tensor<1x1x16x64xf16> -> tensor<1x1x1x16x64xf16>
// CHECK-NEXT: %[[E:.*]] = spyre.expand_rows %[[U]] {{.*}}: tensor<1x1x1x16x64xf16> -> tensor<1x1x2x16x64xf16>
// CHECK-NEXT: %[[K:.*]] = spyre.reshape %[[E]] {{.*}}: tensor<1x1x2x16x64xf16> -> tensor<1x2x16x64xf16>
// CHECK-NEXT: %[[O:.*]] = spyre.attention %q, %[[K]], %[[K]] {fx_node = "bmm_1", scale = 1.250000e-01 : f64} : tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16> -> tensor<1x2x16x64xf16>
// CHECK-NEXT: func.return %[[O]]
func.func @eager_gqa_f16(%q: tensor<1x2x16x64xf16>, %k: tensor<1x1x16x64xf16>) -> tensor<1x2x16x64xf16> {
  %u = spyre.aten "aten.unsqueeze.default"(%k) {args = {dim = 2 : i64}, operand_names = ["self"], fx_node = "unsqueeze"} : (tensor<1x1x16x64xf16>) -> tensor<1x1x1x16x64xf16>
  %e = spyre.aten "aten.expand.default"(%u) {args = {size = [1 : i64, 1 : i64, 2 : i64, 16 : i64, 64 : i64], implicit = false}, operand_names = ["self"], fx_node = "expand"} : (tensor<1x1x1x16x64xf16>) -> tensor<1x1x2x16x64xf16>
  %c = spyre.aten "aten.clone.default"(%e) {args = {memory_format = "torch.contiguous_format"}, operand_names = ["self"], fx_node = "clone"} : (tensor<1x1x2x16x64xf16>) -> tensor<1x1x2x16x64xf16>
  %kk = spyre.aten "aten.view.default"(%c) {args = {size = [1 : i64, 2 : i64, 16 : i64, 64 : i64]}, operand_names = ["self"], fx_node = "view"} : (tensor<1x1x2x16x64xf16>) -> tensor<1x2x16x64xf16>
  %kt = spyre.aten "aten.transpose.int"(%kk) {args = {dim0 = -1 : i64, dim1 = -2 : i64}, operand_names = ["self"], fx_node = "transpose"} : (tensor<1x2x16x64xf16>) -> tensor<1x2x64x16xf16>
  %q3 = spyre.aten "aten.view.default"(%q) {args = {size = [2 : i64, 16 : i64, 64 : i64]}, operand_names = ["self"], fx_node = "view_1"} : (tensor<1x2x16x64xf16>) -> tensor<2x16x64xf16>
  %k3 = spyre.aten "aten.view.default"(%kt) {args = {size = [2 : i64, 64 : i64, 16 : i64]}, operand_names = ["self"], fx_node = "view_2"} : (tensor<1x2x64x16xf16>) -> tensor<2x64x16xf16>
  %s3 = spyre.aten "aten.bmm.default"(%q3, %k3) {args = {}, operand_names = ["self", "mat2"], fx_node = "bmm"} : (tensor<2x16x64xf16>, tensor<2x64x16xf16>) -> tensor<2x16x16xf16>
  %s = spyre.aten "aten.view.default"(%s3) {args = {size = [1 : i64, 2 : i64, 16 : i64, 16 : i64]}, operand_names = ["self"], fx_node = "view_3"} : (tensor<2x16x16xf16>) -> tensor<1x2x16x16xf16>
  %ss = spyre.aten "aten.div.Tensor"(%s) {args = {other = 8.000000e+00 : f64}, operand_names = ["self"], fx_node = "div"} : (tensor<1x2x16x16xf16>) -> tensor<1x2x16x16xf16>
  %p = spyre.aten "aten.softmax.int"(%ss) {args = {dim = 3 : i64, dtype = "float32"}, operand_names = ["self"], fx_node = "softmax"} : (tensor<1x2x16x16xf16>) -> tensor<1x2x16x16xf32>
  %ph = spyre.aten "aten._to_copy.default"(%p) {args = {dtype = "float16", non_blocking = false}, operand_names = ["self"], fx_node = "_to_copy"} : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf16>
  %p3 = spyre.aten "aten.view.default"(%ph) {args = {size = [2 : i64, 16 : i64, 16 : i64]}, operand_names = ["self"], fx_node = "view_4"} : (tensor<1x2x16x16xf16>) -> tensor<2x16x16xf16>
  %v3 = spyre.aten "aten.view.default"(%kk) {args = {size = [2 : i64, 16 : i64, 64 : i64]}, operand_names = ["self"], fx_node = "view_5"} : (tensor<1x2x16x64xf16>) -> tensor<2x16x64xf16>
  %o3 = spyre.aten "aten.bmm.default"(%p3, %v3) {args = {}, operand_names = ["self", "mat2"], fx_node = "bmm_1"} : (tensor<2x16x16xf16>, tensor<2x16x64xf16>) -> tensor<2x16x64xf16>
  %o = spyre.aten "aten.view.default"(%o3) {args = {size = [1 : i64, 2 : i64, 16 : i64, 64 : i64]}, operand_names = ["self"], fx_node = "view_6"} : (tensor<2x16x64xf16>) -> tensor<1x2x16x64xf16>
  func.return %o : tensor<1x2x16x64xf16>
}
