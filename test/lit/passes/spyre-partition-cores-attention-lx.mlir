// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse | not spyre-opt -p spyre-partition-cores 2>&1 | filecheck %s

// A head's whole K and V stay in LX. With 4096 fp32 key rows of 128 elements (512 B) they
// take 4096 x 512 = 2 MiB each, doubled for ping-pong: 8 MiB against 1677696 B usable, for
// every split and every query tile. The error names the kernel, the work and the budget.
// CHECK: error: kernel @k0: no split of 1 heads x 4096 query rows fits 1677696 B of LX per core; reduce the sequence length or the head dim of this kernel
func.func @long(%q: tensor<1x1x4096x128xf32>) -> tensor<1x1x4096x128xf32> {
  %o = spyre.aten "aten.scaled_dot_product_attention.default"(%q, %q, %q) {args = {dropout_p = 0.000000e+00 : f64, is_causal = true}, operand_names = ["query", "key", "value"], fx_node = "sdpa"} : (tensor<1x1x4096x128xf32>, tensor<1x1x4096x128xf32>, tensor<1x1x4096x128xf32>) -> tensor<1x1x4096x128xf32>
  func.return %o : tensor<1x1x4096x128xf32>
}
