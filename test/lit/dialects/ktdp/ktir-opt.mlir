// REQUIRES: ktir-opt
//
// The reference KTIR dialect (torch-spyre/ktir-mlir-frontend's ktir-opt, when it is on PATH;
// UNSUPPORTED otherwise) reads the kernels `spyrec compile --emit=ktir` writes as they are:
// standard dialects and ktdp only, no host launch graph (docs/ktir.md §1). `%ktir-spelling`
// maps the memory-space spelling for a ktir-opt that knows only the older one (lit.cfg.py).
// Each kernel is read, verified and printed by ktir-opt, and its output read again.

// RUN: spyrec compile %S/../../../ktir/conformance/vector_add.mlir --emit=ktir -o %t.vadd.mlir
// RUN: %ktir-spelling < %t.vadd.mlir | ktir-opt | ktir-opt | filecheck %s --check-prefix=VADD
// VADD: func.func @vector_add
// VADD-NOT: spyre.launch

// RUN: spyrec compile %S/../../../ktir/conformance/softmax.mlir --emit=ktir -o %t.softmax.mlir
// RUN: %ktir-spelling < %t.softmax.mlir | ktir-opt | ktir-opt | filecheck %s --check-prefix=SOFTMAX
// SOFTMAX: func.func @softmax
// SOFTMAX: math.exp

// RUN: spyrec compile %S/../../../ktir/conformance/matmul.mlir --emit=ktir -o %t.matmul.mlir
// RUN: %ktir-spelling < %t.matmul.mlir | ktir-opt | ktir-opt | filecheck %s --check-prefix=MATMUL
// MATMUL: ktdp.load
// MATMUL: ktdp.store

// RUN: spyrec compile %S/../../../ktir/conformance/layernorm.mlir --emit=ktir -o %t.layernorm.mlir
// RUN: %ktir-spelling < %t.layernorm.mlir | ktir-opt | ktir-opt | filecheck %s --check-prefix=LAYERNORM
// LAYERNORM: func.func @layernorm
