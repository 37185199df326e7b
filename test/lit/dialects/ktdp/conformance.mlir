// RUN: %python %S/../../../ktir/roundtrip.py %S/../../../ktir/conformance | filecheck %s

// The KTIR conformance kernels (test/ktir/conformance, run against NumPy by
// test/python/ktir/test_conformance.py) are also compiler input: each must parse, verify
// and round-trip in spyre-opt. roundtrip.py checks, per file, that the custom and the
// generic form are fixed points of print(parse(.)), that the generic form parses back to the
// same module, and that FileCheck passes on the file's own CHECK-LABEL lines (one per
// function, enforced). It prints the functions of every file it checked, listed here so
// that a kernel that goes missing fails this test too.

// CHECK: distributed_view.mlir: @distributed_view
// CHECK-NEXT: errors.mlir: @load_out_of_bounds, @scatter_out_of_bounds, @distributed_hole, @tile_overflows_lx, @lx_buffer_overflows
// CHECK-NEXT: ffn_swiglu.mlir: @ffn_swiglu_1core, @ffn_swiglu_4core
// CHECK-NEXT: gather_scatter.mlir: @gather, @scatter, @paged_kv_read, @paged_kv_append
// CHECK-NEXT: layernorm.mlir: @layernorm
// CHECK-NEXT: matmul.mlir: @matmul
// CHECK-NEXT: rmsnorm.mlir: @rmsnorm_rows, @rmsnorm_hidden_sharded
// CHECK-NEXT: rope.mlir: @rope
// CHECK-NEXT: row_operand_outside_loop.mlir: @scale_by_exp
// CHECK-NEXT: sdpa.mlir: @sdpa
// CHECK-NEXT: softmax.mlir: @softmax
// CHECK-NEXT: symbolic_sizes.mlir: @scale_rows
// CHECK-NEXT: vector_add.mlir: @vector_add
