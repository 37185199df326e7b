// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse,spyre-partition-cores | filecheck %s
// RUN: spyre-opt %s -p spyre-legalize,spyre-stickify,spyre-fuse | sed 's/reason = "single op"/reason = "single op", grid = [1 : i64, 1 : i64]/' | not spyre-opt -p spyre-partition-cores 2>&1 | filecheck %s --check-prefix=BAD

// A 512 MiB f32 tensor [64, 2097152]: no core may span more than 256 MiB of it, so the
// split has at least two row blocks (design note 102), and a grid the user sets on one core
// is refused naming the span.
// CHECK: spyre.kernel "k0"{{.*}}grid = [{{[0-9]+}} : i64, {{[0-9]+}} : i64]
// CHECK-NOT: grid = [1 : i64, {{[0-9]+}} : i64]
// BAD: error: kernel @k0: grid [1, 1] leaves a core spanning 512.0 MiB of one tensor, beyond the 256 MiB a core may address in one tensor; use more cores along the rows
func.func @wide(%x: tensor<64x2097152xf32>) -> tensor<64x2097152xf32> {
  %y = spyre.aten "aten.mul.Tensor"(%x) {args = {other = 2.0 : f64}, operand_names = ["self"], fx_node = "mul"} : (tensor<64x2097152xf32>) -> tensor<64x2097152xf32>
  func.return %y : tensor<64x2097152xf32>
}
