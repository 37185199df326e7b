// A scalar argument left to run time (`--arg n_rows=?`, design note 83): the row count of a
// Triton-style row loop becomes the binary's run-time argument, a symbolic size of the
// tensors it indexes by rows (compiled at their 64 rows, padded and cropped per call);
// `run --arg n_rows=N --check` passes N to the interpreter; a value out of the compiled
// range is refused by name, and so is a use the host cannot correct per call.
// RUN: spyrec compile %s --arg n_rows=? -o %t.spyre 2>/dev/null
// RUN: spyrec inspect %t.spyre | FileCheck --check-prefix=INSPECT %s
// RUN: spyrec run %t.spyre --arg n_rows=21 --check %s --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED %s
// RUN: not spyrec run %t.spyre --arg n_rows=65 2>&1 | FileCheck --check-prefix=RANGE %s
// RUN: not spyrec compile %s --arg n_rows=1..128 -o %t.bad.spyre 2>&1 | FileCheck --check-prefix=BOUND %s

// INSPECT: run-time argument n_rows: 1..64 (spyrec run ... --arg n_rows=N; a symbolic size, compiled at 64)
// INSPECT: input a: [n_rows, 64] float16
// INSPECT: input b: [n_rows, 64] float16
// INSPECT: output c: [n_rows, 64] float16
// INSPECT: {'op': 'ComputeOnHost', 'fn': 'pad_inputs', 'symbols': {'n_rows': [1, 64]}}
// CHECKED: run-time arguments: n_rows=21
// CHECKED: c: ok
// RANGE: --arg n_rows=65: outside the range 1..64 the binary was compiled for
// BOUND: error: {{.*}}@row_add: --arg n_rows=1..128: the range must be LO..64 with 1 <= LO

#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @row_add(%a: index, %b: index, %c: index, %n_rows: i32)
      attributes {grid = [2, 1]} {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %pid = ktdp.get_compute_tile_id : index
    %n = arith.index_cast %n_rows : i32 to index
    %va = ktdp.construct_memory_view %a, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %vb = ktdp.construct_memory_view %b, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %vc = ktdp.construct_memory_view %c, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    scf.for %r = %pid to %n step %c2 {
      %ta = ktdp.construct_access_tile %va[%r, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
      %tb = ktdp.construct_access_tile %vb[%r, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
      %tc = ktdp.construct_access_tile %vc[%r, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
      %x = ktdp.load %ta : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
      %y = ktdp.load %tb : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
      %s = arith.addf %x, %y : tensor<1x64xf16>
      ktdp.store %s, %tc : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
