// RUN: spyre-opt %s --split-input-file --verify-diagnostics | filecheck %s

// xDSL 0.74's --verify-diagnostics prints each chunk's first error instead of matching
// expected-error annotations, so filecheck matches the messages, one CHECK per case.

func.func @k_mismatch(%a: tensor<64x100xf16>, %b: tensor<128x64xf16>) {
  // CHECK: spyre.matmul: lhs has K = 100 columns but rhs has 128 rows
  %m = spyre.matmul %a, %b : tensor<64x100xf16>, tensor<128x64xf16> -> tensor<64x64xf16>
  func.return
}

// -----

func.func @bad_result(%a: tensor<64x128xf16>, %b: tensor<128x64xf16>) {
  // CHECK: spyre.matmul: result shape [64, 32] is not [64, 64]
  %m = spyre.matmul %a, %b : tensor<64x128xf16>, tensor<128x64xf16> -> tensor<64x32xf16>
  func.return
}

// -----

func.func @bad_bias(%a: tensor<64x128xf16>, %b: tensor<128x64xf16>, %c: tensor<32xf16>) {
  // CHECK: spyre.matmul: bias shape [32] does not match N = 64
  %m = spyre.matmul %a, %b bias %c : tensor<64x128xf16>, tensor<128x64xf16>, tensor<32xf16> -> tensor<64x64xf16>
  func.return
}

// -----

func.func @bad_broadcast(%a: tensor<64x128xf16>, %b: tensor<3x128xf16>) {
  // CHECK: spyre.add: operand shape [3, 128] does not broadcast to the result shape [64, 128]
  %m = spyre.add %a, %b : tensor<64x128xf16>, tensor<3x128xf16> -> tensor<64x128xf16>
  func.return
}

// -----

func.func @bad_unary(%a: tensor<64x128xf16>) {
  // CHECK: spyre.relu: result shape [64, 64] differs from the operand shape [64, 128]
  %m = spyre.relu %a : tensor<64x128xf16> -> tensor<64x64xf16>
  func.return
}

// -----

func.func @bad_kernel(%a: tensor<64x128xf16>) {
  // CHECK: spyre.kernel @k0: 2 block arguments for 1 inputs
  %k = spyre.kernel "k0"(%a) : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%p: tensor<64x128xf16>, %q: tensor<64x128xf16>):
    spyre.yield %p : tensor<64x128xf16>
  }
  func.return
}
