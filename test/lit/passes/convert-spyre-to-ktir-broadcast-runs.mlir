// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile,convert-spyre-to-ktir | filecheck %s

// q * cos with a rotary table cos [64, 128] broadcast over the 4 heads of q [1, 4, 64, 128]
// (fp16): the broadcast is a row-move kernel whose 4 runs (heads) of 64 rows all read the
// same 64 stored rows (the row map does not move along the heads). Each tile of the table
// is loaded once and stored to every run: reads 64 x 256 B = 16384 B (the table once), writes
// 4 x 16384 = 65536 B. Loading per run, as the other moves do, would read the table 4 times
// (65536 B, 48 KiB more). One core (1x1; the kernel is this small), one 64-row tile, 16384 B
// of LX per buffer.
// CHECK-LABEL: func.func @k0(
// CHECK:      %[[IN:.*]] = ktdp.construct_memory_view %{{.*}}, sizes: [64, 128]
// CHECK:      %[[OUT:.*]] = ktdp.construct_memory_view %{{.*}}, sizes: [256, 128]
// CHECK:      scf.for
// CHECK:        %[[ROW:.*]] = arith.addi
// CHECK-NEXT:   %[[T:.*]] = ktdp.construct_access_tile %[[IN]][%[[ROW]], 0]
// CHECK-NEXT:   %[[ROWS:.*]] = ktdp.load %[[T]] : !ktdp.access_tile<64x128xindex> -> tensor<64x128xf16>
// CHECK:        scf.for
// CHECK-NEXT:     %[[HEAD:.*]] = arith.addi
// CHECK-NEXT:     %[[O:.*]] = ktdp.construct_access_tile %[[OUT]][%[[HEAD]] * 64 + %[[ROW]], 0]
// CHECK-NEXT:     ktdp.store %[[ROWS]], %[[O]]
// CHECK-NOT:      ktdp.load
// CHECK:      func.return
func.func @forward(%q: tensor<1x4x64x128xf16>, %cos: tensor<64x128xf16>) -> tensor<1x4x64x128xf16> {
  %m = spyre.aten "aten.mul.Tensor"(%q, %cos) {fx_node = "mul", args = {}, operand_names = ["self", "other"]} : (tensor<1x4x64x128xf16>, tensor<64x128xf16>) -> tensor<1x4x64x128xf16>
  func.return %m : tensor<1x4x64x128xf16>
}
