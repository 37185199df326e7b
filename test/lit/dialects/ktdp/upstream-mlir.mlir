// REQUIRES: upstream-mlir
//
// Cross-check against upstream MLIR (torch-mlir's torch-mlir-opt, the optional `mlir` extra:
// `pip install -e .[mlir]`); without it lit reports this test UNSUPPORTED. Raw KTIR does not
// parse upstream (no ktdp dialect there), but spyrec's generic form does, with
// --allow-unregistered-dialect: ktdp ops, types and attributes stay opaque, and upstream
// parses and verifies every arith, math, linalg, scf, tensor and func op in it.
// For each kernel:
//   1. spyre-opt prints it generic (G) and torch-mlir-opt reads, verifies and prints it (U1);
//   2. spyre-opt reads U1 back (its CHECK-LABELs must match), prints it generic, and
//      torch-mlir-opt prints that again (U2); U1 == U2: nothing upstream can see changed.
// Upstream renames SSA values, so U1 and U2 are compared with each other, not with G.

// Views, a 1-D tile set, scf.for, tensor arith.
// RUN: spyre-opt %S/../../../ktir/conformance/vector_add.mlir --print-op-generic > %t.vadd.g.mlir
// RUN: torch-mlir-opt --allow-unregistered-dialect --mlir-print-op-generic %t.vadd.g.mlir > %t.vadd.u1.mlir
// RUN: spyre-opt %t.vadd.u1.mlir | filecheck %S/../../../ktir/conformance/vector_add.mlir
// RUN: spyre-opt %t.vadd.u1.mlir --print-op-generic | torch-mlir-opt --allow-unregistered-dialect --mlir-print-op-generic | diff %t.vadd.u1.mlir -

// linalg.reduce in both spellings, linalg.generic with a broadcasting map, math.exp.
// RUN: spyre-opt %S/../../../ktir/conformance/softmax.mlir --print-op-generic > %t.softmax.g.mlir
// RUN: torch-mlir-opt --allow-unregistered-dialect --mlir-print-op-generic %t.softmax.g.mlir > %t.softmax.u1.mlir
// RUN: spyre-opt %t.softmax.u1.mlir | filecheck %S/../../../ktir/conformance/softmax.mlir
// RUN: spyre-opt %t.softmax.u1.mlir --print-op-generic | torch-mlir-opt --allow-unregistered-dialect --mlir-print-op-generic | diff %t.softmax.u1.mlir -

// Mixed-precision linalg.matmul, scf.for iter_args, distributed views, inter-tile produce and
// reduce regions, tensor.extract_slice.
// RUN: spyre-opt %S/../../../ktir/conformance/ffn_swiglu.mlir --print-op-generic > %t.ffn.g.mlir
// RUN: torch-mlir-opt --allow-unregistered-dialect --mlir-print-op-generic %t.ffn.g.mlir > %t.ffn.u1.mlir
// RUN: spyre-opt %t.ffn.u1.mlir | filecheck %S/../../../ktir/conformance/ffn_swiglu.mlir
// RUN: spyre-opt %t.ffn.u1.mlir --print-op-generic | torch-mlir-opt --allow-unregistered-dialect --mlir-print-op-generic | diff %t.ffn.u1.mlir -

// Indirect tiles (their hidden block and terminator), floordiv/mod subscripts, symbols.
// RUN: spyre-opt %S/../../../ktir/conformance/gather_scatter.mlir --print-op-generic > %t.gather.g.mlir
// RUN: torch-mlir-opt --allow-unregistered-dialect --mlir-print-op-generic %t.gather.g.mlir > %t.gather.u1.mlir
// RUN: spyre-opt %t.gather.u1.mlir | filecheck %S/../../../ktir/conformance/gather_scatter.mlir
// RUN: spyre-opt %t.gather.u1.mlir --print-op-generic | torch-mlir-opt --allow-unregistered-dialect --mlir-print-op-generic | diff %t.gather.u1.mlir -

// runtime_arg types, dynamic sizes, ?-shaped tiles and tensors.
// RUN: spyre-opt %S/../../../ktir/conformance/symbolic_sizes.mlir --print-op-generic > %t.sym.g.mlir
// RUN: torch-mlir-opt --allow-unregistered-dialect --mlir-print-op-generic %t.sym.g.mlir > %t.sym.u1.mlir
// RUN: spyre-opt %t.sym.u1.mlir | filecheck %S/../../../ktir/conformance/symbolic_sizes.mlir
// RUN: spyre-opt %t.sym.u1.mlir --print-op-generic | torch-mlir-opt --allow-unregistered-dialect --mlir-print-op-generic | diff %t.sym.u1.mlir -
