// RUN: xdsl-opt %s -p spyre-stickify | filecheck %s

// Stock xdsl-opt finds spyrec's dialects and passes through the xdsl.universe entry point.
// CHECK: spyre.relu %x {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 8, 64>
func.func @f(%x: tensor<8x64xf16>) -> tensor<8x64xf16> {
  %y = spyre.relu %x : tensor<8x64xf16> -> tensor<8x64xf16>
  func.return %y : tensor<8x64xf16>
}
