// RUN: not spyre-opt %s -p spyre-tile 2>&1 | filecheck %s

// A pass that needs an earlier decision says which pass to run, without a traceback.
// CHECK: error: kernel @k0 has no grid; run spyre-partition-cores first
// CHECK-NOT: Traceback
func.func @f(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {
  %k = spyre.kernel "k0"(%a) : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%p: tensor<64x128xf16>):
    %r = spyre.relu %p : tensor<64x128xf16> -> tensor<64x128xf16>
    spyre.yield %r : tensor<64x128xf16>
  }
  func.return %k : tensor<64x128xf16>
}
