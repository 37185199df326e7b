// RUN: spyre-opt %S/Inputs/mlp64x100.mlir -p spyre-stickify,spyre-fuse | filecheck %s

// Each matmul absorbs its single-use elementwise epilogue: two kernels, and the matmul
// results %y1 and %y2 never leave LX.
// CHECK-LABEL: func.func @forward
// CHECK:      %[[K0:.*]] = spyre.kernel "k0"(%x, %w1, %b1) {fused = ["linear", "relu"], reason = "matmul with tile-op epilogue"
// CHECK:        spyre.matmul
// CHECK-NEXT:   %[[R:.*]] = spyre.relu
// CHECK-NEXT:   spyre.yield %[[R]]
// CHECK:      %[[K1:.*]] = spyre.kernel "k1"(%[[K0]], %w2, %b2) {fused = ["linear_1", "gelu"]
// CHECK:        spyre.matmul
// CHECK-NEXT:   spyre.gelu
// CHECK:      func.return %[[K1]]
