// RUN: not spyre-opt %s -p spyre-stickify 2>&1 | filecheck %s

// The PT contracts over whole sticks, so a weight's K rows are zero-padded when the binary
// is written; an activation as rhs cannot be, and stickify refuses and names the op.
// CHECK: error: m.py:9: spyre.matmul (node mm): K = 100 is not a multiple of the stick (28 elements short) and the rhs is an activation
func.func @bad(%x: tensor<64x100xf16>, %v: tensor<100x64xf16>) -> tensor<64x64xf16> {
  %r = spyre.relu %v : tensor<100x64xf16> -> tensor<100x64xf16>
  %y = spyre.matmul %x, %r {fx_node = "mm", source = "m.py:9"} : tensor<64x100xf16>, tensor<100x64xf16> -> tensor<64x64xf16>
  func.return %y : tensor<64x64xf16>
}
