// RUN: not spyre-opt %s 2>&1 | filecheck %s

// Found by the IR fuzzer: a func.func whose function_type property is misspelt crashes
// xDSL's verifier of func.return (it reads the parent's type); spyre-opt blames the input.
// CHECK: error: {{.*}}spyre-opt-malformed-func.mlir: malformed input, the verifier failed on it (KeyError: 'function_type')
// CHECK-NOT: Traceback

"builtin.module"() ({
  "func.func"() <{sy6e = () -> (index)}> ({
    %x = "ktdp.get_compute_tile_id"() : () -> index
    "func.return"(%x) : (index) -> ()
  }) : () -> ()
}) : () -> ()
