// RUN: spyre-opt %s | spyre-opt | filecheck %s
// RUN: spyre-opt %s --print-op-generic | spyre-opt | filecheck %s
// Printing is a fixed point: parsing the output and printing again changes nothing.
// RUN: spyre-opt %s > %t.custom.mlir && spyre-opt %t.custom.mlir | diff %t.custom.mlir -
// RUN: spyre-opt %s --print-op-generic > %t.generic.mlir && spyre-opt %t.generic.mlir --print-op-generic | diff %t.generic.mlir -

// Every ktdp op and syntax variant survives print -> parse -> print, in the custom and in the
// generic form. xDSL prints affine sets in its own normal form (`-d0 + 95` becomes
// `((d0 * -1) + 95)`), which the CHECK lines follow.

//===--- get_compute_tile_id -----------------------------------------------------------===//

// One result is the x coordinate; two give x and y; `%g:2` is the grouped spelling of two.
// CHECK-LABEL: func.func @tile_ids
func.func @tile_ids() -> (index, index, index, index, index) {
  // CHECK-NEXT: %[[X:.*]] = ktdp.get_compute_tile_id : index
  %x = ktdp.get_compute_tile_id : index
  // CHECK-NEXT: %[[PX:.*]], %[[PY:.*]] = ktdp.get_compute_tile_id : index, index
  %px, %py = ktdp.get_compute_tile_id : index, index
  // CHECK-NEXT: %[[G0:.*]], %[[G1:.*]] = ktdp.get_compute_tile_id : index, index
  %g:2 = ktdp.get_compute_tile_id : index, index
  // CHECK-NEXT: func.return %[[X]], %[[PX]], %[[PY]], %[[G0]], %[[G1]]
  func.return %x, %px, %py, %g#0, %g#1 : index, index, index, index, index
}

//===--- construct_memory_view ---------------------------------------------------------===//

// A row-major 96x64 f16 tensor in global memory, all static.
// CHECK-LABEL: func.func @view_static
func.func @view_static(%off: index) -> memref<96x64xf16> {
  // CHECK-NEXT: %[[V:.*]] = ktdp.construct_memory_view %{{.*}}, sizes: [96, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, ((d0 * -1) + 95) >= 0, d1 >= 0, ((d1 * -1) + 63) >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  %v = ktdp.construct_memory_view %off, sizes: [96, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 95 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  func.return %v : memref<96x64xf16>
}

// Dynamic column count %n, which also binds s0 of the coordinate set, and a dynamic stride.
// CHECK-LABEL: func.func @view_dynamic
// CHECK-SAME: (%[[OFF:.*]]: index, %[[N:.*]]: index)
func.func @view_dynamic(%off: index, %n: index) -> memref<96x?xf16> {
  // CHECK-NEXT: ktdp.construct_memory_view %[[OFF]], sizes: [96, %[[N]]], strides: [%[[N]], 1] {coordinate_set = affine_set<(d0, d1)[s0] : (d0 >= 0, ((d0 * -1) + 95) >= 0, d1 >= 0, (((d1 * -1) + s0) + -1) >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<96x?xf16>
  %v = ktdp.construct_memory_view %off, sizes: [96, %n], strides: [%n, 1] {coordinate_set = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + 95 >= 0, d1 >= 0, -d1 + s0 - 1 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<96x?xf16>
  func.return %v : memref<96x?xf16>
}

// Rows 96..127 of a 128-row tensor live in compute tile 5's LX, stored column-major
// (strides [1, 32]); the set is in global coordinates while the memref is local 32x64.
// CHECK-LABEL: func.func @view_ct_local
func.func @view_ct_local(%off: index) -> memref<32x64xf16> {
  // CHECK-NEXT: ktdp.construct_memory_view %{{.*}}, sizes: [32, 64], strides: [1, 32] {coordinate_set = affine_set<(d0, d1) : ((d0 + -96) >= 0, ((d0 * -1) + 127) >= 0, d1 >= 0, ((d1 * -1) + 63) >= 0)>, memory_space = #ktdp.memory_space<ct_local, ct_id = 5>} : memref<32x64xf16>
  %v = ktdp.construct_memory_view %off, sizes: [32, 64], strides: [1, 32] {coordinate_set = affine_set<(d0, d1) : (d0 - 96 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<ct_local, ct_id = 5>} : memref<32x64xf16>
  func.return %v : memref<32x64xf16>
}

// A rank-0 view (one scalar) and a memref type that carries the memory space too.
// CHECK-LABEL: func.func @view_scalar_and_typed_space
func.func @view_scalar_and_typed_space(%off: index) -> (memref<f32>, memref<64xf32, #ktdp.memory_space<global>>) {
  // CHECK-NEXT: ktdp.construct_memory_view %{{.*}}, sizes: [], strides: [] {coordinate_set = affine_set<() : ()>, memory_space = #ktdp.memory_space<ct_local, ct_id = 0>} : memref<f32>
  %s = ktdp.construct_memory_view %off, sizes: [], strides: [] {coordinate_set = affine_set<() : ()>, memory_space = #ktdp.memory_space<ct_local, ct_id = 0>} : memref<f32>
  // CHECK-NEXT: ktdp.construct_memory_view %{{.*}}, sizes: [64], strides: [1] {{{.*}}memory_space = #ktdp.memory_space<global>} : memref<64xf32, #ktdp.memory_space<global>>
  %v = ktdp.construct_memory_view %off, sizes: [64], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<64xf32, #ktdp.memory_space<global>>
  func.return %s, %v : memref<f32>, memref<64xf32, #ktdp.memory_space<global>>
}

//===--- construct_distributed_memory_view ---------------------------------------------===//

// 96 rows in global memory plus 32 rows in LX form one 128x64 tensor; no space before `(`.
// CHECK-LABEL: func.func @distributed
// CHECK-SAME: (%[[HBM:.*]]: memref<96x64xf16>, %[[LX:.*]]: memref<32x64xf16>)
func.func @distributed(%hbm: memref<96x64xf16>, %lx: memref<32x64xf16>) -> memref<128x64xf16> {
  // CHECK-NEXT: ktdp.construct_distributed_memory_view(%[[HBM]], %[[LX]] : memref<96x64xf16>, memref<32x64xf16>) : memref<128x64xf16>
  %d = ktdp.construct_distributed_memory_view(%hbm, %lx : memref<96x64xf16>, memref<32x64xf16>) : memref<128x64xf16>
  func.return %d : memref<128x64xf16>
}

//===--- construct_access_tile ---------------------------------------------------------===//

// Row %r + %i, columns 0..63: a 1x64 tile. The bracket's distinct SSA values (%r, %i, %c0)
// become the indices, in first-use order.
// CHECK-LABEL: func.func @tile_row
// CHECK-SAME: (%[[VIEW:.*]]: memref<96x64xf16>, %[[R:.*]]: index, %[[I:.*]]: index, %[[C0:.*]]: index)
func.func @tile_row(%view: memref<96x64xf16>, %r: index, %i: index, %c0: index) -> !ktdp.access_tile<1x64xindex> {
  // CHECK-NEXT: %[[TILE:.*]] = ktdp.construct_access_tile %[[VIEW]][%[[R]] + %[[I]], %[[C0]]] {access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, ((d1 * -1) + 63) >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<96x64xf16> -> !ktdp.access_tile<1x64xindex>
  // CHECK-NEXT: func.return %[[TILE]]
  %t = ktdp.construct_access_tile %view[%r + %i, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<96x64xf16> -> !ktdp.access_tile<1x64xindex>
  func.return %t : !ktdp.access_tile<1x64xindex>
}

// Subscript expressions: scaling, subtraction, negation, floordiv/mod of a sum (kept in
// parentheses), and integer literals. A repeated SSA value is one index.
// CHECK-LABEL: func.func @tile_subscripts
// CHECK-SAME: (%[[V4:.*]]: memref<8x8x8x8xf16>, %[[A:.*]]: index, %[[B:.*]]: index)
func.func @tile_subscripts(%v: memref<8x8x8x8xf16>, %a: index, %b: index) -> !ktdp.access_tile<1x1x1x1xindex> {
  // CHECK-NEXT: ktdp.construct_access_tile %[[V4]][%[[A]] * 2 - %[[B]], (%[[A]] + %[[B]]) floordiv 4, -%[[A]] + 7, %[[B]] mod 8] {{{.*}}} : memref<8x8x8x8xf16> -> !ktdp.access_tile<1x1x1x1xindex>
  %t = ktdp.construct_access_tile %v[%a * 2 - %b, (%a + %b) floordiv 4, 7 - %a, %b mod 8] {access_tile_set = affine_set<(d0, d1, d2, d3) : (d0 == 0, d1 == 0, d2 == 0, d3 == 0)>, access_tile_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>} : memref<8x8x8x8xf16> -> !ktdp.access_tile<1x1x1x1xindex>
  func.return %t : !ktdp.access_tile<1x1x1x1xindex>
}

// A symbolic row count %m binds s0 through symbols(...); the rows dim is then `?`.
// CHECK-LABEL: func.func @tile_symbols
// CHECK-SAME: (%[[SV:.*]]: memref<96x64xf16>, %[[M:.*]]: index)
func.func @tile_symbols(%v: memref<96x64xf16>, %m: index) -> !ktdp.access_tile<?x64xindex> {
  // CHECK-NEXT: ktdp.construct_access_tile %[[SV]][0, 0] symbols(%[[M]]) {access_tile_set = affine_set<(d0, d1)[s0] : (d0 >= 0, (((d0 * -1) + s0) + -1) >= 0, d1 >= 0, ((d1 * -1) + 63) >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<96x64xf16> -> !ktdp.access_tile<?x64xindex>
  %t = ktdp.construct_access_tile %v[0, 0] symbols(%m) {access_tile_set = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<96x64xf16> -> !ktdp.access_tile<?x64xindex>
  func.return %t : !ktdp.access_tile<?x64xindex>
}

// A 16x32 set walked column by column, order (d1, d0): the tile is 32x16.
// CHECK-LABEL: func.func @tile_transposed
func.func @tile_transposed(%v: memref<96x64xf16>) -> !ktdp.access_tile<32x16xindex> {
  // CHECK-NEXT: ktdp.construct_access_tile %{{.*}}[0, 0] {{{.*}}access_tile_order = affine_map<(d0, d1) -> (d1, d0)>} : memref<96x64xf16> -> !ktdp.access_tile<32x16xindex>
  %t = ktdp.construct_access_tile %v[0, 0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d1, d0)>} : memref<96x64xf16> -> !ktdp.access_tile<32x16xindex>
  func.return %t : !ktdp.access_tile<32x16xindex>
}

// The base may be a tensor, a tile may carry extra attributes, and a rank-0 base takes `[]`.
// CHECK-LABEL: func.func @tile_tensor_and_scalar
func.func @tile_tensor_and_scalar(%s: tensor<4x64xf16>, %x: memref<f32>) -> (!ktdp.access_tile<4x64xindex>, !ktdp.access_tile<index>) {
  // CHECK-NEXT: ktdp.construct_access_tile %{{.*}}[0, 0] {access_tile_set = {{.*}}, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>, note = "whole tensor"} : tensor<4x64xf16> -> !ktdp.access_tile<4x64xindex>
  %t = ktdp.construct_access_tile %s[0, 0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>, note = "whole tensor"} : tensor<4x64xf16> -> !ktdp.access_tile<4x64xindex>
  // CHECK-NEXT: ktdp.construct_access_tile %{{.*}}[] {access_tile_set = affine_set<() : ()>, access_tile_order = affine_map<() -> ()>} : memref<f32> -> !ktdp.access_tile<index>
  %p = ktdp.construct_access_tile %x[] {access_tile_set = affine_set<() : ()>, access_tile_order = affine_map<() -> ()>} : memref<f32> -> !ktdp.access_tile<index>
  func.return %t, %p : !ktdp.access_tile<4x64xindex>, !ktdp.access_tile<index>
}

//===--- construct_indirect_access_tile ------------------------------------------------===//

// Paged KV gather: 4 sequences (%b) x 8 heads (%h) x 2048 tokens (%t) x 128 features (%d).
// Page numbers come from the 4x32 table %pages at [%b + %seq0, %t floordiv 64]; within a page
// the token is %t mod 64 (64 tokens per page). Identity order, so the tile is 4x8x2048x128.
// CHECK-LABEL: func.func @indirect_paged
// CHECK-SAME: (%[[CACHE:.*]]: memref<10000x8x64x128xf16>, %[[PAGES:.*]]: memref<4x32xi32>, %[[SEQ0:.*]]: index)
func.func @indirect_paged(%cache: memref<10000x8x64x128xf16>, %pages: memref<4x32xi32>, %seq0: index) -> tensor<4x8x2048x128xf16> {
  // CHECK-NEXT: %[[KV:.*]] = ktdp.construct_indirect_access_tile intermediate_variables(%[[B:.*]], %[[H:.*]], %[[T:.*]], %[[D:.*]]) %[[CACHE]][ind(%[[PAGES]][%[[B]] + %[[SEQ0]], %[[T]] floordiv 64]), (%[[H]]), (%[[T]] mod 64), (%[[D]])] {variables_space_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, ((d0 * -1) + 3) >= 0, d1 >= 0, ((d1 * -1) + 7) >= 0, d2 >= 0, ((d2 * -1) + 2047) >= 0, d3 >= 0, ((d3 * -1) + 127) >= 0)>, variables_space_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>} : memref<10000x8x64x128xf16>, memref<4x32xi32> -> !ktdp.access_tile<4x8x2048x128xindex>
  %kv = ktdp.construct_indirect_access_tile intermediate_variables(%b, %h, %t, %d) %cache[ind(%pages[%b + %seq0, %t floordiv 64]), (%h), (%t mod 64), (%d)] {variables_space_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 2047 >= 0, d3 >= 0, -d3 + 127 >= 0)>, variables_space_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>} : memref<10000x8x64x128xf16>, memref<4x32xi32> -> !ktdp.access_tile<4x8x2048x128xindex>
  // CHECK-NEXT: ktdp.load %[[KV]] : !ktdp.access_tile<4x8x2048x128xindex> -> tensor<4x8x2048x128xf16>
  %x = ktdp.load %kv : !ktdp.access_tile<4x8x2048x128xindex> -> tensor<4x8x2048x128xf16>
  func.return %x : tensor<4x8x2048x128xf16>
}

// Two index views (one table read twice), a symbolic count %n bound by symbols(...), a
// direct subscript mixing the intermediate %i with captured %n, and a bare result type.
// CHECK-LABEL: func.func @indirect_two_views
// CHECK-SAME: (%[[SRC:.*]]: memref<64x64x64xf16>, %[[IDX:.*]]: memref<2x16xi64>, %[[N:.*]]: index)
func.func @indirect_two_views(%src: memref<64x64x64xf16>, %idx: memref<2x16xi64>, %n: index) -> !ktdp.access_tile<?xindex> {
  // CHECK-NEXT: ktdp.construct_indirect_access_tile intermediate_variables(%[[I:.*]]) %[[SRC]][ind(%[[IDX]][0, %[[I]]]), (%[[I]] * 2 - %[[N]]), ind(%[[IDX]][1, %[[I]]])] symbols(%[[N]]) {variables_space_set = affine_set<(d0)[s0] : (d0 >= 0, (((d0 * -1) + s0) + -1) >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>, note} : memref<64x64x64xf16>, memref<2x16xi64>, memref<2x16xi64> -> !ktdp.access_tile<?xindex>
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %src[ind(%idx[0, %i]), (%i * 2 - %n), ind(%idx[1, %i])] symbols(%n) {variables_space_set = affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>, note} : memref<64x64x64xf16>, memref<2x16xi64>, memref<2x16xi64> -> <?xindex>
  func.return %t : !ktdp.access_tile<?xindex>
}

// Intermediate variables are local to the op: a numbered name (as printed for ops built in
// Python) parses, and reusing an outer name (%k) shadows it only inside the subscripts.
// CHECK-LABEL: func.func @indirect_names
// CHECK-SAME: %[[K:[a-z0-9_]+]]: index)
func.func @indirect_names(%x: memref<64x64xf16>, %idx: memref<16xi32>, %k: index) {
  // CHECK-NEXT: intermediate_variables(%[[V:.*]]) %{{.*}}[ind(%{{.*}}[%[[V]]]), (%[[V]] + %[[K]])]
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%0) %x[ind(%idx[%0]), (%0 + %k)] {variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>} : memref<64x64xf16>, memref<16xi32> -> !ktdp.access_tile<16xindex>
  // CHECK-NEXT: intermediate_variables(%k_1) %{{.*}}[ind(%{{.*}}[%k_1]), (%k_1)]
  %u = ktdp.construct_indirect_access_tile intermediate_variables(%k) %x[ind(%idx[%k]), (%k)] {variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>} : memref<64x64xf16>, memref<16xi32> -> !ktdp.access_tile<16xindex>
  func.return
}

//===--- load / store ------------------------------------------------------------------===//

// Qualified and bare (`<...>`, as MLIR prints it) tile types; both print qualified.
// CHECK-LABEL: func.func @load_store
// CHECK-SAME: (%[[T:.*]]: !ktdp.access_tile<32x64xindex>)
func.func @load_store(%t: !ktdp.access_tile<32x64xindex>) {
  // CHECK-NEXT: %[[D:.*]] = ktdp.load %[[T]] : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
  %d = ktdp.load %t : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
  // CHECK-NEXT: %[[E:.*]] = ktdp.load %[[T]] : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
  %e = ktdp.load %t : <32x64xindex> -> tensor<32x64xf16>
  // CHECK-NEXT: ktdp.store %[[D]], %[[T]] : tensor<32x64xf16>, !ktdp.access_tile<32x64xindex>
  ktdp.store %d, %t : tensor<32x64xf16>, !ktdp.access_tile<32x64xindex>
  // CHECK-NEXT: ktdp.store %[[E]], %[[T]] {note} : tensor<32x64xf16>, !ktdp.access_tile<32x64xindex>
  ktdp.store %e, %t {note} : tensor<32x64xf16>, <32x64xindex>
  func.return
}

//===--- runtime_arg / runtime_arg_extract ---------------------------------------------===//

// A row count known only at launch: a multiple of 32, at most 96. Keywords parse in any order
// and print granularity first; the extracted value sizes a view and binds its set's s0.
// CHECK-LABEL: func.func @runtime_rows
// CHECK-SAME: (%[[ROWS:.*]]: !ktdp.runtime_arg<index, granularity = 32, upperbound = 96>, %[[OFF:.*]]: index, %[[SCALE:.*]]: !ktdp.runtime_arg<f32>)
func.func @runtime_rows(%rows: !ktdp.runtime_arg<index, upperbound = 96, granularity = 32>, %off: index, %scale: !ktdp.runtime_arg<f32>) -> (index, index, f32) {
  // CHECK-NEXT: %[[M:.*]] = ktdp.runtime_arg_extract value from %[[ROWS]] : !ktdp.runtime_arg<index, granularity = 32, upperbound = 96> -> index
  %m = ktdp.runtime_arg_extract value from %rows : !ktdp.runtime_arg<index, granularity = 32, upperbound = 96> -> index
  // CHECK-NEXT: %[[G:.*]] = ktdp.runtime_arg_extract granularity from %[[ROWS]] : !ktdp.runtime_arg<index, granularity = 32, upperbound = 96> -> index
  %g = ktdp.runtime_arg_extract granularity from %rows : <index, granularity = 32, upperbound = 96> -> index
  // An attribute dictionary prints after the type, where the reference dialect has it; the
  // older position before the `:` still parses.
  // CHECK-NEXT: %[[U:.*]] = ktdp.runtime_arg_extract upperbound from %[[ROWS]] : !ktdp.runtime_arg<index, granularity = 32, upperbound = 96> {note} -> index
  %u = ktdp.runtime_arg_extract upperbound from %rows {note} : !ktdp.runtime_arg<index, granularity = 32, upperbound = 96> -> index
  // CHECK-NEXT: ktdp.runtime_arg_extract upperbound from %[[ROWS]] : !ktdp.runtime_arg<index, granularity = 32, upperbound = 96> {note} -> index
  %u2 = ktdp.runtime_arg_extract upperbound from %rows : !ktdp.runtime_arg<index, granularity = 32, upperbound = 96> {note} -> index
  // The kind is a property, an i32 enum as the reference dialect defines it (the older
  // generic spellings: older-generic-spellings.mlir).
  // CHECK-NEXT: ktdp.runtime_arg_extract granularity from %[[ROWS]] : !ktdp.runtime_arg<index, granularity = 32, upperbound = 96> -> index
  %g2 = "ktdp.runtime_arg_extract"(%rows) <{kind = 1 : i32}> : (!ktdp.runtime_arg<index, granularity = 32, upperbound = 96>) -> index
  // CHECK-NEXT: %[[S:.*]] = ktdp.runtime_arg_extract value from %[[SCALE]] : !ktdp.runtime_arg<f32> -> f32
  %s = ktdp.runtime_arg_extract value from %scale : <f32> -> f32
  // CHECK-NEXT: ktdp.construct_memory_view %[[OFF]], sizes: [%[[M]], 64], strides: [64, 1] {{.*}} : memref<?x64xf16>
  %v = ktdp.construct_memory_view %off, sizes: [%m, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<?x64xf16>
  func.return %g, %u, %s : index, index, f32
}

//===--- a whole kernel ----------------------------------------------------------------===//

// c = a + b for 96x64 f16 tensors at element offsets %a, %b, %c in global memory. The grid
// has 32 tiles along x, so tile %id owns rows 3*%id .. 3*%id + 2 (96 / 32 = 3) and loops over
// them one 64-element (128 B, one stick) row at a time.
// CHECK-LABEL: func.func @add
// CHECK-SAME: attributes {grid = [32 : i64, 1 : i64]}
// CHECK:      %[[ID:.*]] = ktdp.get_compute_tile_id : index
// CHECK:      %[[VA:.*]] = ktdp.construct_memory_view
// CHECK:      %[[VB:.*]] = ktdp.construct_memory_view
// CHECK:      %[[VC:.*]] = ktdp.construct_memory_view
// CHECK:      scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:   %[[TA:.*]] = ktdp.construct_access_tile %[[VA]][%[[ID]] * 3 + %[[ROW]], 0]
// CHECK-NEXT:   %[[TB:.*]] = ktdp.construct_access_tile %[[VB]][%[[ID]] * 3 + %[[ROW]], 0]
// CHECK-NEXT:   %[[TC:.*]] = ktdp.construct_access_tile %[[VC]][%[[ID]] * 3 + %[[ROW]], 0]
// CHECK-NEXT:   %[[XA:.*]] = ktdp.load %[[TA]] : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
// CHECK-NEXT:   %[[XB:.*]] = ktdp.load %[[TB]] : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
// CHECK-NEXT:   %[[SUM:.*]] = arith.addf %[[XA]], %[[XB]] : tensor<1x64xf16>
// CHECK-NEXT:   ktdp.store %[[SUM]], %[[TC]] : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
// CHECK-NEXT: }
func.func @add(%a: index, %b: index, %c: index) attributes {grid = [32, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %va = ktdp.construct_memory_view %a, sizes: [96, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 95 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  %vb = ktdp.construct_memory_view %b, sizes: [96, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 95 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  %vc = ktdp.construct_memory_view %c, sizes: [96, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 95 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  scf.for %row = %c0 to %c3 step %c1 {
    %ta = ktdp.construct_access_tile %va[%id * 3 + %row, 0] {access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<96x64xf16> -> !ktdp.access_tile<1x64xindex>
    %tb = ktdp.construct_access_tile %vb[%id * 3 + %row, 0] {access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<96x64xf16> -> !ktdp.access_tile<1x64xindex>
    %tc = ktdp.construct_access_tile %vc[%id * 3 + %row, 0] {access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<96x64xf16> -> !ktdp.access_tile<1x64xindex>
    %xa = ktdp.load %ta : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    %xb = ktdp.load %tb : <1x64xindex> -> tensor<1x64xf16>
    %sum = arith.addf %xa, %xb : tensor<1x64xf16>
    ktdp.store %sum, %tc : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
  }
  func.return
}
