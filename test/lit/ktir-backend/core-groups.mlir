// Core groups through the back end (design note 94; kernel:
// test/python/ktir/kernels/core_groups.mlir; injected bug: test_ktir_core_groups.py):
// a store's view at y_ptr + (pid / 4) * 64 becomes a view of the whole of Y whose tile's
// leading subscript is that offset divided by the row stride (exact on every core), and
// spyre-schedule-dataflow folds the divui / remui per core; the CHECKED lines run the
// emulator against the interpreter. A partial loaded before a loop and reduced in every
// iteration is reduced as an SFU copy made in the loop (the sum overwrites the reduced
// tile's slot), and the named linalg.add accumulating the sums is an SFU add.
// RUN: spyrec compile %S/../../python/ktir/kernels/core_groups.mlir --function group_rows --emit=ktir 2>/dev/null | FileCheck --check-prefix=KTIR %s
// RUN: spyrec compile %S/../../python/ktir/kernels/core_groups.mlir --function looped_sum --emit=ktir 2>/dev/null | FileCheck --check-prefix=LOOP %s
// RUN: spyrec compile %S/../../python/ktir/kernels/core_groups.mlir --function group_rows -o %t.spyre 2>/dev/null
// RUN: spyrec run %t.spyre --check %S/../../python/ktir/kernels/core_groups.mlir --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED %s

// KTIR-LABEL: func.func @group_rows
// KTIR:       %lane = arith.remui %pid, %c4 : index
// KTIR:       scf.if %first {
// KTIR:         %group = arith.divui %pid, %c4 : index
// KTIR:         %yv = ktdp.construct_memory_view %y_ptr, sizes: [2, 64], strides: [64, 1]
// KTIR:         %[[STRIDE:.*]] = arith.constant 64 : index
// KTIR-NEXT:    %[[ROW:.*]] = arith.divui %y_offs, %[[STRIDE]] : index
// KTIR-NEXT:    %yt = ktdp.construct_access_tile %yv[%c0 + %[[ROW]], %c0]

// CHECKED: y_ptr: ok
// CHECKED-NEXT: worst element {{.*}} error 0,

// LOOP-LABEL: func.func @looped_sum
// LOOP:       scf.for
// LOOP:         %[[COPY:.*]] = linalg.generic {{.*}} ins(%x : tensor<1x64xf16>) {{.*}} {spyre.fn = "copy"
// LOOP:         ktdp.inter_tile_produce
// LOOP:           ktdp.yield_partial %[[COPY]] : tensor<1x64xf16>
// LOOP:         %sum = ktdp.inter_tile_reduce(%fut)
// LOOP:         %next = linalg.generic {{.*}} ins(%acc, %sum : {{.*}} {spyre.fn = "add"
