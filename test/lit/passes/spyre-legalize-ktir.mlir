// RUN: spyre-opt %S/../../ktir/conformance/softmax.mlir -p spyre-legalize-ktir | filecheck %s
// RUN: spyre-opt %S/../../ktir/conformance/matmul.mlir -p spyre-legalize-ktir | filecheck %s --check-prefix=MM
// RUN: not spyre-opt %s -p spyre-legalize-ktir 2>&1 | filecheck %s --check-prefix=ERR

// Row softmax: each scalar op of the broadcasting generic is its own SFU op; the row max
// and sum start from fills of their identities and are columns (8x1 in LX); the widening
// extf folds into its readers (the SFU reads f16 and computes in fp32) and the final
// truncf into the divide's destination type: no copies are left.
// CHECK-NOT:  spyre.fn = "copy"
// CHECK:      linalg.fill {spyre.tile = array<i64: 8, 1>} ins(%{{.*}} : f32)
// CHECK:      %max = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]{{.*}} ins(%x16 : tensor<8x256xf16>) {{.*}}spyre.fn = "reduce_max", spyre.valid_cols = 256 : index, spyre.tile = array<i64: 8, 1>
// CHECK:      linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>]{{.*}}ins(%x16, %max {{.*}} {spyre.fn = "sub"}
// CHECK-NEXT: ^bb0(%{{.*}}: f16, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:   arith.extf
// CHECK:      %ex = linalg.generic {{.*}} {spyre.fn = "exp"}
// CHECK:      %sum = linalg.generic {{.*}} {spyre.fn = "reduce_sum"
// CHECK:      %p16 = linalg.generic {{.*}} ins(%ex, %sum {{.*}} outs(%{{.*}} : tensor<8x256xf16>) {{.*}} {spyre.fn = "div"}
// CHECK:        arith.truncf %{{.*}} : f32 to f16
// CHECK-NOT:  tensor.splat
// CHECK-NOT:  linalg.broadcast
// CHECK-NOT:  linalg.reduce

// The K loop's matmul accumulates into the loop-carried zero fill; the cost counts its FLOPs
// (2 * 32 * 32 * 64 per step, 4 steps, 8 cores).
// MM:         spyre.cost = {flops = 4194304 : i64
// MM:         %init = linalg.fill ins(%zero : f32)
// MM:         %next = linalg.generic {{.*}} ins(%ablk, %wblk {{.*}} outs(%part {{.*}} {spyre.fn = "matmul"}

// A body op no SFU function implements is refused, naming the kernel and the op.
// ERR: error: kernel @sine: linalg.generic (%s): its body holds math.sin, which no SFU operation implements
#id1 = affine_map<(d0) -> (d0)>
func.func @sine(%a: index) attributes {grid = [1, 1]} {
  %t = tensor.empty() : tensor<64xf32>
  %e = tensor.empty() : tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%t : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.sin %x : f32
    linalg.yield %y : f32
  } -> tensor<64xf32>
  func.return
}
