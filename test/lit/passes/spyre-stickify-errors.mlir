// RUN: not spyre-opt %s -p spyre-stickify 2>&1 | filecheck %s

// exp(0) = 1 puts ones into the padding of %e's second stick; a matmul contracting over it
// would add them into the result, so stickify refuses and names the op. (Without a bias it
// would contract exactly over the 100 columns as a spyre.batch_matmul instead.)
// CHECK: error: m.py:9: spyre.matmul (node mm): the matmul reads K = 100 columns padded to whole sticks, but its lhs is produced by an op that does not keep the padding zero
func.func @bad(%x: tensor<64x100xf16>) -> tensor<64x64xf16> {
  %w = spyre.param {param_name = "w"} : tensor<100x64xf16>
  %b = spyre.param {param_name = "b"} : tensor<64xf16>
  %e = spyre.exp %x : tensor<64x100xf16> -> tensor<64x100xf16>
  %y = spyre.matmul %e, %w bias %b {fx_node = "mm", source = "m.py:9"} : tensor<64x100xf16>, tensor<100x64xf16>, tensor<64xf16> -> tensor<64x64xf16>
  func.return %y : tensor<64x64xf16>
}
