// RUN: spyre-opt %S/Inputs/swiglu-mlp.mlir -p 'spyre-set-options{double_buffer=false resident="b"}' | filecheck %s
// RUN: spyre-opt %S/Inputs/swiglu-mlp.mlir -p 'spyre-set-options' | filecheck %s --check-prefix=DEFAULT
// RUN: spyre-opt %S/Inputs/swiglu-mlp.mlir -p 'spyre-set-options{double_buffer=false},spyre-set-options{resident="a"},spyre-legalize,spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile' | filecheck %s --check-prefix=PLANNED

// The switches that differ from their defaults become one record on the module, which
// every planning pass reads (design note 68).
// CHECK: builtin.module attributes {spyre.options = {double_buffer = false, resident = "b"}}

// Every default: no record, the module unchanged.
// DEFAULT: builtin.module {
// DEFAULT-NOT: spyre.options

// A later spyre-set-options writes over the record; spyre-tile then gives every matmul
// kernel the loop order the record names.
// PLANNED: builtin.module attributes {spyre.options = {double_buffer = false, resident = "a"}}
// PLANNED: spyre.kernel "k0"
// PLANNED-SAME: resident = "a"
