// RUN: spyre-opt %s | spyre-opt | filecheck %s
// RUN: spyre-opt %s --print-op-generic | spyre-opt | filecheck %s

// Every spyre op in its custom form; the second RUN line goes through the generic form.

// CHECK-LABEL: func.func @imported
// CHECK: %[[W:.*]] = spyre.param {param_name = "fc.weight"} : tensor<32x100xf16>
// CHECK: %[[WT:.*]] = spyre.param {param_name = "fc.weight", permutation = array<i64: 1, 0>} : tensor<100x32xf16>
// CHECK: %[[S:.*]] = spyre.param {param_name = "cat.columns0", value = dense<{{\[}}[0.000000e+00, 1.000000e+00], [1.000000e+00, 0.000000e+00]]> : tensor<2x2xf16>} : tensor<2x2xf16>
// CHECK: %[[Y:.*]] = spyre.aten "aten.linear.default"(%x, %[[W]]) {fx_node = "linear", source = "m.py:3", args = {}, operand_names = ["input", "weight"]} : (tensor<64x100xf16>, tensor<32x100xf16>) -> tensor<64x32xf16>
func.func @imported(%x: tensor<64x100xf16>) -> tensor<64x32xf16> {
  %w = spyre.param {param_name = "fc.weight"} : tensor<32x100xf16>
  %wt = spyre.param {param_name = "fc.weight", permutation = array<i64: 1, 0>} : tensor<100x32xf16>
  %s = spyre.param {param_name = "cat.columns0", value = dense<[[0.0, 1.0], [1.0, 0.0]]> : tensor<2x2xf16>} : tensor<2x2xf16>
  %y = spyre.aten "aten.linear.default"(%x, %w) {fx_node = "linear", source = "m.py:3", args = {}, operand_names = ["input", "weight"]} : (tensor<64x100xf16>, tensor<32x100xf16>) -> tensor<64x32xf16>
  func.return %y : tensor<64x32xf16>
}

// CHECK-LABEL: func.func @selected
// CHECK: %[[M:.*]] = spyre.matmul %a, %b bias %bias : tensor<64x128xf32>, tensor<128x32xf32>, tensor<32xf32> -> tensor<64x32xf32>
// CHECK: %[[N:.*]] = spyre.matmul %a, %b : tensor<64x128xf32>, tensor<128x32xf32> -> tensor<64x32xf32>
// CHECK: %[[R:.*]] = spyre.relu %[[M]] : tensor<64x32xf32> -> tensor<64x32xf32>
// CHECK: spyre.gelu %[[R]]
// CHECK: spyre.gelu_tanh
// CHECK: spyre.silu
// CHECK: spyre.sigmoid
// CHECK: spyre.tanh
// CHECK: spyre.exp
// CHECK: spyre.neg
// CHECK: spyre.sqrt
// CHECK: spyre.rsqrt
// CHECK: spyre.reciprocal
// CHECK: spyre.abs
// CHECK: %[[S:.*]] = spyre.add %[[R]], %bias : tensor<64x32xf32>, tensor<32xf32> -> tensor<64x32xf32>
// CHECK: spyre.sub
// CHECK: spyre.mul
// CHECK: spyre.div
// CHECK: spyre.maximum
// CHECK: spyre.minimum
func.func @selected(%a: tensor<64x128xf32>, %b: tensor<128x32xf32>, %bias: tensor<32xf32>) -> tensor<64x32xf32> {
  %m = spyre.matmul %a, %b bias %bias : tensor<64x128xf32>, tensor<128x32xf32>, tensor<32xf32> -> tensor<64x32xf32>
  %n = spyre.matmul %a, %b : tensor<64x128xf32>, tensor<128x32xf32> -> tensor<64x32xf32>
  %r = spyre.relu %m : tensor<64x32xf32> -> tensor<64x32xf32>
  %u1 = spyre.gelu %r : tensor<64x32xf32> -> tensor<64x32xf32>
  %u2 = spyre.gelu_tanh %u1 : tensor<64x32xf32> -> tensor<64x32xf32>
  %u3 = spyre.silu %u2 : tensor<64x32xf32> -> tensor<64x32xf32>
  %u4 = spyre.sigmoid %u3 : tensor<64x32xf32> -> tensor<64x32xf32>
  %u5 = spyre.tanh %u4 : tensor<64x32xf32> -> tensor<64x32xf32>
  %u6 = spyre.exp %u5 : tensor<64x32xf32> -> tensor<64x32xf32>
  %u7 = spyre.neg %u6 : tensor<64x32xf32> -> tensor<64x32xf32>
  %u8 = spyre.sqrt %u7 : tensor<64x32xf32> -> tensor<64x32xf32>
  %u9 = spyre.rsqrt %u8 : tensor<64x32xf32> -> tensor<64x32xf32>
  %u10 = spyre.reciprocal %u9 : tensor<64x32xf32> -> tensor<64x32xf32>
  %u11 = spyre.abs %u10 : tensor<64x32xf32> -> tensor<64x32xf32>
  %s = spyre.add %r, %bias : tensor<64x32xf32>, tensor<32xf32> -> tensor<64x32xf32>
  %t1 = spyre.sub %s, %n : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<64x32xf32>
  %t2 = spyre.mul %t1, %u11 : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<64x32xf32>
  %t3 = spyre.div %t2, %t1 : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<64x32xf32>
  %t4 = spyre.maximum %t3, %t2 : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<64x32xf32>
  %t5 = spyre.minimum %t4, %t3 : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<64x32xf32>
  func.return %t5 : tensor<64x32xf32>
}

// CHECK-LABEL: func.func @kernels
// CHECK: %[[K:.*]] = spyre.kernel "k0"(%a, %b) {grid = [2 : i64, 1 : i64]} : (tensor<64x128xf16>, tensor<128x64xf16>) -> tensor<64x64xf16> {
// CHECK-NEXT: ^{{.*}}(%[[P:.*]]: tensor<64x128xf16>, %[[Q:.*]]: tensor<128x64xf16>):
// CHECK-NEXT:   %[[Z:.*]] = spyre.matmul %[[P]], %[[Q]]
// CHECK-NEXT:   spyre.yield %[[Z]] : tensor<64x64xf16>
// CHECK: spyre.launch @k0(%a, %b) : (tensor<64x128xf16>, tensor<128x64xf16>) -> tensor<64x64xf16>
func.func @kernels(%a: tensor<64x128xf16>, %b: tensor<128x64xf16>) -> tensor<64x64xf16> {
  %k = spyre.kernel "k0"(%a, %b) {grid = [2 : i64, 1 : i64]} : (tensor<64x128xf16>, tensor<128x64xf16>) -> tensor<64x64xf16> {
  ^bb0(%p: tensor<64x128xf16>, %q: tensor<128x64xf16>):
    %z = spyre.matmul %p, %q : tensor<64x128xf16>, tensor<128x64xf16> -> tensor<64x64xf16>
    spyre.yield %z : tensor<64x64xf16>
  }
  %l = spyre.launch @k0(%a, %b) : (tensor<64x128xf16>, tensor<128x64xf16>) -> tensor<64x64xf16>
  func.return %l : tensor<64x64xf16>
}

// CHECK-LABEL: func.func @rows_and_attention
// CHECK: %[[V:.*]] = spyre.reshape %x : tensor<2x16x128xf16> -> tensor<2x16x2x64xf16>
// CHECK: %[[P:.*]] = spyre.permute_rows %[[V]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x16x2x64xf16> -> tensor<2x2x16x64xf16>
// CHECK: %[[E:.*]] = spyre.expand_rows %k : tensor<2x1x1x16x64xf16> -> tensor<2x1x2x16x64xf16>
// CHECK: %[[K:.*]] = spyre.reshape %[[E]] : tensor<2x1x2x16x64xf16> -> tensor<2x2x16x64xf16>
// CHECK: %[[A:.*]] = spyre.attention %[[P]], %[[K]], %[[K]] {scale = 1.250000e-01 : f64, causal} : tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16> -> tensor<2x2x16x64xf16>
// CHECK: spyre.attention %[[P]], %[[K]], %[[K]] mask %m {scale = 5.000000e-01 : f64} : tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<16x16xf16> -> tensor<2x2x16x64xf16>
func.func @rows_and_attention(%x: tensor<2x16x128xf16>, %k: tensor<2x1x1x16x64xf16>, %m: tensor<16x16xf16>) -> (tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>) {
  %v = spyre.reshape %x : tensor<2x16x128xf16> -> tensor<2x16x2x64xf16>
  %p = spyre.permute_rows %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x16x2x64xf16> -> tensor<2x2x16x64xf16>
  %e = spyre.expand_rows %k : tensor<2x1x1x16x64xf16> -> tensor<2x1x2x16x64xf16>
  %kk = spyre.reshape %e : tensor<2x1x2x16x64xf16> -> tensor<2x2x16x64xf16>
  %a = spyre.attention %p, %kk, %kk {scale = 0.125 : f64, causal} : tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16> -> tensor<2x2x16x64xf16>
  %b = spyre.attention %p, %kk, %kk mask %m {scale = 0.5 : f64} : tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<16x16xf16> -> tensor<2x2x16x64xf16>
  func.return %a, %b : tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>
}

// A slice of a leading dim keeps the rank; its bounds are properties.
// CHECK-LABEL: func.func @slice_rows
// CHECK: spyre.slice_rows %x {dim = 1 : i64, start = 15 : i64, step = 1 : i64} : tensor<2x16x64xf16> -> tensor<2x1x64xf16>
// CHECK: spyre.slice_rows %x {dim = 0 : i64, start = 1 : i64, step = 1 : i64} : tensor<2x16x64xf16> -> tensor<1x16x64xf16>
func.func @slice_rows(%x: tensor<2x16x64xf16>) -> (tensor<2x1x64xf16>, tensor<1x16x64xf16>) {
  %a = spyre.slice_rows %x {dim = 1 : i64, start = 15 : i64, step = 1 : i64} : tensor<2x16x64xf16> -> tensor<2x1x64xf16>
  %b = spyre.slice_rows %x {dim = 0 : i64, start = 1 : i64, step = 1 : i64} : tensor<2x16x64xf16> -> tensor<1x16x64xf16>
  func.return %a, %b : tensor<2x1x64xf16>, tensor<1x16x64xf16>
}

// CHECK-LABEL: func.func @gather
// CHECK: %[[E:.*]] = spyre.gather %t, %ids : tensor<256x64xf32>, tensor<2x16xi64> -> tensor<2x16x64xf32>
// CHECK: spyre.gather %t, %i : tensor<256x64xf32>, tensor<8xi32> -> tensor<8x64xf32>
func.func @gather(%t: tensor<256x64xf32>, %ids: tensor<2x16xi64>, %i: tensor<8xi32>) -> (tensor<2x16x64xf32>, tensor<8x64xf32>) {
  %e = spyre.gather %t, %ids : tensor<256x64xf32>, tensor<2x16xi64> -> tensor<2x16x64xf32>
  %f = spyre.gather %t, %i : tensor<256x64xf32>, tensor<8xi32> -> tensor<8x64xf32>
  func.return %e, %f : tensor<2x16x64xf32>, tensor<8x64xf32>
}

// CHECK-LABEL: func.func @scatter
// CHECK: spyre.scatter %c, %pos, %k : tensor<1x2x256x64xf16>, tensor<1xi64>, tensor<1x2x1x64xf16> -> tensor<1x2x256x64xf16>
func.func @scatter(%c: tensor<1x2x256x64xf16>, %pos: tensor<1xi64>, %k: tensor<1x2x1x64xf16>) -> tensor<1x2x256x64xf16> {
  %u = spyre.scatter %c, %pos, %k : tensor<1x2x256x64xf16>, tensor<1xi64>, tensor<1x2x1x64xf16> -> tensor<1x2x256x64xf16>
  func.return %u : tensor<1x2x256x64xf16>
}

// CHECK-LABEL: func.func @batch_matmul
// CHECK: spyre.batch_matmul %q, %k {transpose_rhs} : tensor<4x16x64xf16>, tensor<4x32x64xf16> -> tensor<4x16x32xf16>
// CHECK: spyre.batch_matmul %q, %v : tensor<4x16x64xf16>, tensor<4x64x8xf16> -> tensor<4x16x8xf16>
func.func @batch_matmul(%q: tensor<4x16x64xf16>, %k: tensor<4x32x64xf16>, %v: tensor<4x64x8xf16>) -> (tensor<4x16x32xf16>, tensor<4x16x8xf16>) {
  %s = spyre.batch_matmul %q, %k {transpose_rhs} : tensor<4x16x64xf16>, tensor<4x32x64xf16> -> tensor<4x16x32xf16>
  %o = spyre.batch_matmul %q, %v : tensor<4x16x64xf16>, tensor<4x64x8xf16> -> tensor<4x16x8xf16>
  func.return %s, %o : tensor<4x16x32xf16>, tensor<4x16x8xf16>
}
