// RUN: spyre-opt %S/Inputs/mlp64x100.mlir -p spyre-stickify | filecheck %s

// 100 fp16 columns are 200 B: padded to two 128-byte sticks (128 elements), zeros in the pad.
// CHECK-LABEL: func.func @forward(%x: tensor<64x100xf16> {spyre.layout = {stick_dim = 1 : i64, padded_shape = array<i64: 64, 128>, device_dtype = "dl16", pad = "zero"}})
// The matmul contracts over whole sticks, so the weight's K rows (100) are zero-padded to 128 too.
// CHECK: padded_shape = array<i64: 128, 128>, device_dtype = "dl16", pad = "zero"}, param_name = "fc1.weight"
// A 1-D bias is one padded row.
// CHECK: padded_shape = array<i64: 128>, device_dtype = "dl16", pad = "zero"}, param_name = "fc1.bias"
// relu and gelu map 0 to 0, so the padding stays zero through the chain.
// CHECK: spyre.relu {{.*}}pad = "zero"
// CHECK: spyre.gelu {{.*}}pad = "zero"
