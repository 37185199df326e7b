// RUN: spyre-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// One case per verifier or parser rule of the ktdp dialect.
//
// xDSL 0.74's --verify-diagnostics does not read `expected-error` annotations: it prints the
// first error of each chunk and exits 0 (--parsing-diagnostics does the same for parse
// errors). So every case is checked by a CHECK on that printed message. Verifier messages
// are anchored at the start of the line, where only the top-level message (not the IR dump
// that follows it) begins; parse errors print the message indented under a caret.

//===--- !ktdp.access_tile -------------------------------------------------------------===//

// The element type of an access tile is always index.
func.func @tile_element_not_index(%t: !ktdp.access_tile<4x4xf16>) {
  func.return
}
// CHECK: {{^}}tile element type must be 'index', but got: f16

// -----

//===--- #ktdp.memory_space -----------------------------------------------------------===//

// The current spelling takes only the current kinds; HBM is a pre-rename kind.
func.func @current_spelling_old_kind(%a: index) {
  %v = ktdp.construct_memory_view %a, sizes: [64], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.memory_space<HBM>} : memref<64xf16>
  func.return
}
// CHECK: {{^ *}}unknown memory space 'HBM', expected global or ct_local

// -----

// ct_local memory belongs to one compute tile, which must be named.
func.func @ct_local_without_id(%a: index) {
  %v = ktdp.construct_memory_view %a, sizes: [64], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.memory_space<ct_local>} : memref<64xf16>
  func.return
}
// CHECK: {{^ *}}ct_local memory needs ', ct_id = N' naming its compute tile

// -----

// Off-chip memory is shared by all cores: a core affinity on HBM is meaningless.
func.func @legacy_hbm_with_core(%a: index) {
  %v = ktdp.construct_memory_view %a, sizes: [64], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM, core = 2>} : memref<64xf16>
  func.return
}
// CHECK: {{^ *}}core affinity is only valid for LX or L0 memory spaces, but got memory space 'HBM' with core = 2

// -----

// LX without a core has no current spelling (ct_local needs a tile id).
func.func @legacy_lx_without_core(%a: index) {
  %v = ktdp.construct_memory_view %a, sizes: [64], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<LX>} : memref<64xf16>
  func.return
}
// CHECK: {{^ *}}memory space 'LX' needs core = N (N >= 0) to name its compute tile

// -----

// The old enum's `unspecified` was dropped by the rename.
func.func @legacy_unspecified(%a: index) {
  %v = ktdp.construct_memory_view %a, sizes: [64], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<unspecified>} : memref<64xf16>
  func.return
}
// CHECK: {{^ *}}unsupported spyre memory space 'unspecified', expected HBM, LX or L0

// -----

//===--- ktdp.get_compute_tile_id ------------------------------------------------------===//

// A grid has at least one dimension, so the op has at least one result.
func.func @tile_id_no_results() {
  "ktdp.get_compute_tile_id"() : () -> ()
  func.return
}
// CHECK: {{^}}get_compute_tile_id needs at least 1 result, got 0

// -----

// Grid coordinates are index values.
func.func @tile_id_not_index() {
  %x, %y = ktdp.get_compute_tile_id : index, i32
  func.return
}
// CHECK: {{^}}get_compute_tile_id result 1 is i32, expected index

// -----

//===--- ktdp.construct_memory_view ----------------------------------------------------===//

// Two sizes but three strides.
func.func @view_sizes_strides_length(%a: index) {
  %v = ktdp.construct_memory_view %a, sizes: [4, 64], strides: [256, 64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, d1 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<4x64xf16>
  func.return
}
// CHECK: {{^}}sizes has 2 entries but strides has 3

// -----

// static_sizes marks one entry dynamic but no size operand is given.
func.func @view_dynamic_count(%a: index) {
  %v = "ktdp.construct_memory_view"(%a) <{static_sizes = array<i64: -9223372036854775808, 64>, static_strides = array<i64: 64, 1>, coordinate_set = affine_set<(d0, d1) : (d0 >= 0, d1 >= 0)>, memory_space = #ktdp.memory_space<global>, operandSegmentSizes = array<i32: 1, 0, 0>}> : (index) -> memref<?x64xf16>
  func.return
}
// CHECK: {{^}}sizes has 1 dynamic entries but 0 dynamic operands

// -----

// A size cannot be negative.
func.func @view_negative_size(%a: index) {
  %v = ktdp.construct_memory_view %a, sizes: [-4, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, d1 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<4x64xf16>
  func.return
}
// CHECK: {{^}}sizes[0] is -4, must be >= 0

// -----

// Two sizes describe a rank-2 view, not a rank-3 memref.
func.func @view_rank(%a: index) {
  %v = ktdp.construct_memory_view %a, sizes: [4, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, d1 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<4x64x1xf16>
  func.return
}
// CHECK: {{^}}result memref<4x64x1xf16> has rank 3 but sizes has 2 entries

// -----

// The memref type says 64 columns, the view says 32.
func.func @view_static_extent(%a: index) {
  %v = ktdp.construct_memory_view %a, sizes: [96, 32], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, d1 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  func.return
}
// CHECK: {{^}}memref dim 1 is 64 but sizes[1] is 32

// -----

// A rank-2 view needs a 2-d coordinate set.
func.func @view_set_rank(%a: index) {
  %v = ktdp.construct_memory_view %a, sizes: [96, 64], strides: [64, 1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 95 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  func.return
}
// CHECK: {{^}}coordinate_set has 1 dims but the view has rank 2

// -----

// Set symbols bind to dynamic sizes; a fully static view has nothing to bind s0 to.
func.func @view_set_symbols(%a: index) {
  %v = ktdp.construct_memory_view %a, sizes: [96, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 >= 0, d1 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<96x64xf16>
  func.return
}
// CHECK: {{^}}coordinate_set has 1 symbols but only 0 dynamic sizes bind them

// -----

// Every view says which part of the global tensor it owns.
func.func @view_no_coordinate_set(%a: index) {
  %v = ktdp.construct_memory_view %a, sizes: [64], strides: [1] {memory_space = #ktdp.memory_space<global>} : memref<64xf16>
  func.return
}
// CHECK: {{^}}property 'coordinate_set' expected in operation 'ktdp.construct_memory_view'

// -----

// Every view says where it lives.
func.func @view_no_memory_space(%a: index) {
  %v = ktdp.construct_memory_view %a, sizes: [64], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>} : memref<64xf16>
  func.return
}
// CHECK: {{^}}property 'memory_space' expected in operation 'ktdp.construct_memory_view'

// -----

// A memory space on the memref type must agree with the op's memory_space.
func.func @view_type_memory_space(%a: index) {
  %v = ktdp.construct_memory_view %a, sizes: [64], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<64xf16, #ktdp.memory_space<ct_local, ct_id = 1>>
  func.return
}
// CHECK: {{^}}result memory space #ktdp.memory_space<ct_local, ct_id = 1> differs from memory_space #ktdp.memory_space<global>

// -----

//===--- ktdp.construct_distributed_memory_view ----------------------------------------===//

// A distributed view needs at least one part.
func.func @distributed_no_parts() {
  %d = "ktdp.construct_distributed_memory_view"() : () -> memref<64xf16>
  func.return
}
// CHECK: {{^}}construct_distributed_memory_view needs at least 1 part

// -----

// Parts must share the result's element type.
func.func @distributed_element_type(%a: memref<96x64xf16>, %b: memref<32x64xf32>) {
  %d = ktdp.construct_distributed_memory_view(%a, %b : memref<96x64xf16>, memref<32x64xf32>) : memref<128x64xf16>
  func.return
}
// CHECK: {{^}}part 1 has element type f32 but the result has f16

// -----

// Parts must share the result's rank.
func.func @distributed_rank(%a: memref<6144xf16>, %b: memref<32x64xf16>) {
  %d = ktdp.construct_distributed_memory_view(%a, %b : memref<6144xf16>, memref<32x64xf16>) : memref<128x64xf16>
  func.return
}
// CHECK: {{^}}part 0 has rank 1 but the result has rank 2

// -----

//===--- ktdp.construct_access_tile ----------------------------------------------------===//

// The set of points is required.
func.func @tile_no_set(%v: memref<96x64xf16>) {
  %t = ktdp.construct_access_tile %v[0, 0] {access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<96x64xf16> -> !ktdp.access_tile<1x64xindex>
  func.return
}
// CHECK: {{^ *}}construct_access_tile needs access_tile_set

// -----

// The traversal order is required (identity unless a transposed walk is meant).
func.func @tile_no_order(%v: memref<96x64xf16>) {
  %t = ktdp.construct_access_tile %v[0, 0] {access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>} : memref<96x64xf16> -> !ktdp.access_tile<1x64xindex>
  func.return
}
// CHECK: {{^ *}}construct_access_tile needs access_tile_order

// -----

// base_map's dims are the index operands: two dims, one index.
func.func @tile_base_map_dims(%v: memref<96x64xf16>, %i: index) {
  %t = "ktdp.construct_access_tile"(%v, %i) <{base_map = affine_map<(d0, d1) -> (d0, d1)>, access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>, operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<96x64xf16>, index) -> !ktdp.access_tile<1x64xindex>
  func.return
}
// CHECK: {{^}}base_map has 2 dims and 0 symbols but there are 1 indices (and symbols are not allowed)

// -----

// One subscript per base dimension.
func.func @tile_base_rank(%v: memref<96x64xf16>, %i: index) {
  %t = ktdp.construct_access_tile %v[%i] {access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, access_tile_order = affine_map<(d0) -> (d0)>} : memref<96x64xf16> -> !ktdp.access_tile<64xindex>
  func.return
}
// CHECK: {{^}}base_map has 1 results but the base has rank 2

// -----

// The set is relative to the base point, so it has one dim per subscript.
func.func @tile_set_dims(%v: memref<96x64xf16>, %i: index) {
  %t = ktdp.construct_access_tile %v[%i, 0] {access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, access_tile_order = affine_map<(d0) -> (d0)>} : memref<96x64xf16> -> !ktdp.access_tile<64xindex>
  func.return
}
// CHECK: {{^}}access_tile_set has 1 dims but base_map has 2 results

// -----

// The set uses s0 but no symbols(...) operand binds it.
func.func @tile_set_symbols(%v: memref<96x64xf16>, %i: index) {
  %t = ktdp.construct_access_tile %v[%i, 0] {access_tile_set = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<96x64xf16> -> !ktdp.access_tile<?x64xindex>
  func.return
}
// CHECK: {{^}}access_tile_set has 1 symbols but 0 symbol operands

// -----

// The order must map the set's two dims to two results.
func.func @tile_order_arity(%v: memref<96x64xf16>, %i: index) {
  %t = ktdp.construct_access_tile %v[%i, 0] {access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d1)>} : memref<96x64xf16> -> !ktdp.access_tile<1x64xindex>
  func.return
}
// CHECK: {{^}}access_tile_order maps 2 dims to 1 results but access_tile_set has 2 dims

// -----

// The tile has one dim per set dim.
func.func @tile_result_rank(%v: memref<96x64xf16>, %i: index) {
  %t = ktdp.construct_access_tile %v[%i, 0] {access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<96x64xf16> -> !ktdp.access_tile<64xindex>
  func.return
}
// CHECK: {{^}}result !ktdp.access_tile<64xindex> has rank 1 but access_tile_set has 2 dims

// -----

// Rows 0..1 and columns 0..63: the set is a 2x64 box, so a 1x64 tile drops a row.
func.func @tile_extent(%v: memref<96x64xf16>, %i: index) {
  %t = ktdp.construct_access_tile %v[%i, 0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<96x64xf16> -> !ktdp.access_tile<1x64xindex>
  func.return
}
// CHECK: {{^}}access tile dim 0 is 1 but access_tile_set spans 2 there (set extents 2x64 permuted by the order)

// -----

// A 16x32 set walked in (d1, d0) order gives a 32x16 tile, not 16x32.
func.func @tile_extent_transposed(%v: memref<96x64xf16>, %i: index) {
  %t = ktdp.construct_access_tile %v[%i, 0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d1, d0)>} : memref<96x64xf16> -> !ktdp.access_tile<16x32xindex>
  func.return
}
// CHECK: {{^}}access tile dim 0 is 16 but access_tile_set spans 32 there (set extents 16x32 permuted by the order)

// -----

//===--- ktdp.load / ktdp.store --------------------------------------------------------===//

// The loaded tensor has exactly the tile's shape.
func.func @load_shape(%t: !ktdp.access_tile<32x64xindex>) {
  %d = ktdp.load %t : !ktdp.access_tile<32x64xindex> -> tensor<32x32xf16>
  func.return
}
// CHECK: {{^}}load tensor shape 32x32 does not match access tile shape 32x64

// -----

// The view holds f16, so the load yields f16.
func.func @load_element_type(%v: memref<96x64xf16>, %i: index) {
  %t = ktdp.construct_access_tile %v[%i, 0] {access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<96x64xf16> -> !ktdp.access_tile<1x64xindex>
  %d = ktdp.load %t : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf32>
  func.return
}
// CHECK: {{^}}load tensor element type f32 does not match the viewed element type f16

// -----

// The stored tensor has exactly the tile's shape.
func.func @store_shape(%t: !ktdp.access_tile<32x64xindex>, %d: tensor<64x32xf16>) {
  ktdp.store %d, %t : tensor<64x32xf16>, !ktdp.access_tile<32x64xindex>
  func.return
}
// CHECK: {{^}}store tensor shape 64x32 does not match access tile shape 32x64

// -----

// Storing f32 values into an f16 view.
func.func @store_element_type(%v: memref<96x64xf16>, %i: index, %d: tensor<1x64xf32>) {
  %t = ktdp.construct_access_tile %v[%i, 0] {access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<96x64xf16> -> !ktdp.access_tile<1x64xindex>
  ktdp.store %d, %t : tensor<1x64xf32>, <1x64xindex>
  func.return
}
// CHECK: {{^}}store tensor element type f32 does not match the viewed element type f16

// -----

// The tile operand's type must be an access tile.
func.func @load_not_a_tile(%t: tensor<4xindex>) {
  %d = ktdp.load %t : tensor<4xindex> -> tensor<4xf16>
  func.return
}
// CHECK: {{^ *}}expected !ktdp.access_tile, got tensor<4xindex>

// -----

//===--- !ktdp.runtime_arg / ktdp.runtime_arg_extract ----------------------------------===//

// "A multiple of 0" says nothing; granularity must be positive.
func.func @runtime_arg_zero_granularity(%a: !ktdp.runtime_arg<index, granularity = 0>) {
  func.return
}
// CHECK: {{^}}runtime_arg granularity must be positive, got 0

// -----

// An upper bound below 1 leaves no legal value.
func.func @runtime_arg_negative_upperbound(%a: !ktdp.runtime_arg<index, upperbound = -4>) {
  func.return
}
// CHECK: {{^}}runtime_arg upperbound must be positive, got -4

// -----

// A runtime argument is a scalar: index, integer or float.
func.func @runtime_arg_tensor(%a: !ktdp.runtime_arg<tensor<4xf16>>) {
  func.return
}
// CHECK: {{^}}runtime_arg value type must be index, an integer or a float, got tensor<4xf16>

// -----

// Each keyword at most once.
func.func @runtime_arg_repeated_keyword(%a: !ktdp.runtime_arg<index, granularity = 2, granularity = 4>) {
  func.return
}
// CHECK: {{^ *}}expected granularity or upperbound (each at most once), got granularity

// -----

// Only value, granularity and upperbound can be extracted.
func.func @extract_unknown_field(%a: !ktdp.runtime_arg<index>) {
  %v = ktdp.runtime_arg_extract size from %a : !ktdp.runtime_arg<index> -> index
  func.return
}
// CHECK: {{^ *}}expected value, granularity or upperbound, got size

// -----

// The value of an f32 argument is an f32.
func.func @extract_value_type(%a: !ktdp.runtime_arg<f32>) {
  %v = ktdp.runtime_arg_extract value from %a : !ktdp.runtime_arg<f32> -> index
  func.return
}
// CHECK: {{^}}runtime_arg_extract value yields f32, but the result is index

// -----

// Granularity and upper bound come out as index, whatever the value type.
func.func @extract_granularity_type(%a: !ktdp.runtime_arg<i32, granularity = 8>) {
  %v = ktdp.runtime_arg_extract granularity from %a : !ktdp.runtime_arg<i32, granularity = 8> -> i32
  func.return
}
// CHECK: {{^}}runtime_arg_extract granularity yields index, but the result is i32

// -----

// The type states no upper bound, so there is none to extract.
func.func @extract_missing_upperbound(%a: !ktdp.runtime_arg<index, granularity = 32>) {
  %v = ktdp.runtime_arg_extract upperbound from %a : !ktdp.runtime_arg<index, granularity = 32> -> index
  func.return
}
// CHECK: {{^}}runtime_arg_extract upperbound: !ktdp.runtime_arg<index, granularity = 32> has no upperbound

// -----

// The generic form can give any kind; the verifier still rejects unknown ones.
func.func @extract_unknown_kind_generic(%a: !ktdp.runtime_arg<index>) {
  %v = "ktdp.runtime_arg_extract"(%a) <{kind = 3 : i32}> : (!ktdp.runtime_arg<index>) -> index
  func.return
}
// CHECK: {{^}}runtime_arg_extract kind must be 0 (value), 1 (granularity) or 2 (upperbound), got 3

// -----

// The older generic spelling `field = "name"` reads only the three names; another leaves the
// op without its kind.
func.func @extract_unknown_field_generic(%a: !ktdp.runtime_arg<index>) {
  %v = "ktdp.runtime_arg_extract"(%a) <{field = "size"}> : (!ktdp.runtime_arg<index>) -> index
  func.return
}
// CHECK: property 'kind' expected in operation 'ktdp.runtime_arg_extract'

// -----

//===--- ktdp.construct_indirect_access_tile ------------------------------------------===//

// The set of intermediate-variable values is required.
func.func @indirect_no_set(%x: memref<64x64xf16>, %idx: memref<16xi32>) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %x[ind(%idx[%i]), (0)] {variables_space_order = affine_map<(d0) -> (d0)>} : memref<64x64xf16>, memref<16xi32> -> !ktdp.access_tile<16xindex>
  func.return
}
// CHECK: {{^ *}}construct_indirect_access_tile needs variables_space_set

// -----

// The enumeration order is required.
func.func @indirect_no_order(%x: memref<64x64xf16>, %idx: memref<16xi32>) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %x[ind(%idx[%i]), (0)] {variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>} : memref<64x64xf16>, memref<16xi32> -> !ktdp.access_tile<16xindex>
  func.return
}
// CHECK: {{^ *}}construct_indirect_access_tile needs variables_space_order

// -----

// Each intermediate variable is a distinct block argument.
func.func @indirect_duplicate_variable(%x: memref<64x64xf16>) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i, %i) %x[(%i), (%i)] {variables_space_set = affine_set<(d0, d1) : (d0 == 0, d1 == 0)>, variables_space_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x64xf16> -> !ktdp.access_tile<1x1xindex>
  func.return
}
// CHECK: {{^ *}}intermediate variables must be distinct, got ['i', 'i']

// -----

// The set and the order are an affine set and an affine map, not the other way round.
func.func @indirect_swapped_set_order(%x: memref<64x64xf16>, %idx: memref<16xi32>) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %x[ind(%idx[%i]), (0)] {variables_space_set = affine_map<(d0) -> (d0)>, variables_space_order = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>} : memref<64x64xf16>, memref<16xi32> -> !ktdp.access_tile<16xindex>
  func.return
}
// CHECK: {{^ *}}variables_space_set must be an affine_set and variables_space_order an affine_map

// -----

// One `ind` subscript, so the type list is the base type plus one index view type.
func.func @indirect_type_count(%x: memref<64x64xf16>, %idx: memref<16xi32>) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %x[ind(%idx[%i]), (0)] {variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>} : memref<64x64xf16> -> !ktdp.access_tile<16xindex>
  func.return
}
// CHECK: {{^ *}}expected the base type and 1 index view types, got 1 types

// -----

// Subscripts are affine: a product of two variables is not.
func.func @indirect_semi_affine(%x: memref<64x64xf16>, %k: index) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %x[(%i * %k), (0)] {variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>} : memref<64x64xf16> -> !ktdp.access_tile<16xindex>
  func.return
}
// CHECK: {{^ *}}subscripts must be affine: Multiplication with non-constant

// -----

// One intermediate variable but a 2-d set.
func.func @indirect_set_dims(%x: memref<64x64xf16>, %idx: memref<16xi32>) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %x[ind(%idx[%i]), (0)] {variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 == 0)>, variables_space_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x64xf16>, memref<16xi32> -> !ktdp.access_tile<16x1xindex>
  func.return
}
// CHECK: {{^}}variables_space_set has 2 dims but there are 1 intermediate variables

// -----

// The order must map the one variable to one result.
func.func @indirect_order_arity(%x: memref<64x64xf16>, %idx: memref<16xi32>) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %x[ind(%idx[%i]), (0)] {variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>, variables_space_order = affine_map<(d0) -> (d0, d0)>} : memref<64x64xf16>, memref<16xi32> -> !ktdp.access_tile<16xindex>
  func.return
}
// CHECK: {{^}}variables_space_order maps 1 dims to 2 results but there are 1 intermediate variables

// -----

// The set uses s0 but no symbols(...) operand binds it.
func.func @indirect_set_symbols(%x: memref<64x64xf16>, %idx: memref<16xi32>) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %x[ind(%idx[%i]), (0)] {variables_space_set = affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>} : memref<64x64xf16>, memref<16xi32> -> !ktdp.access_tile<?xindex>
  func.return
}
// CHECK: {{^}}variables_space_set has 1 symbols but 0 symbol operands

// -----

// A rank-2 base needs two subscripts.
func.func @indirect_subscript_count(%x: memref<64x64xf16>, %idx: memref<16xi32>) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %x[ind(%idx[%i])] {variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>} : memref<64x64xf16>, memref<16xi32> -> !ktdp.access_tile<16xindex>
  func.return
}
// CHECK: {{^}}1 subscript kinds and 1 subscript maps for a base of rank 2; there must be one of each per base dim

// -----

// Both subscripts are marked indirect but only one index view is given.
func.func @indirect_kind_count(%x: memref<64x64xf16>, %idx: memref<16xi32>) {
  %t = "ktdp.construct_indirect_access_tile"(%x, %idx) <{per_dim_subscript_kinds = [true, true], per_dim_subscript_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> ({
  ^bb0(%i: index):
    "ktdp.region_terminator"() : () -> ()
  }) : (memref<64x64xf16>, memref<16xi32>) -> !ktdp.access_tile<16xindex>
  func.return
}
// CHECK: {{^}}2 subscripts are indirect but there are 1 index views

// -----

// With no captured values and one intermediate variable, every map has exactly 1 dim.
func.func @indirect_map_dims(%x: memref<64x64xf16>, %idx: memref<16xi32>) {
  %t = "ktdp.construct_indirect_access_tile"(%x, %idx) <{per_dim_subscript_kinds = [true, false], per_dim_subscript_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0, d1) -> (d1)>], variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> ({
  ^bb0(%i: index):
    "ktdp.region_terminator"() : () -> ()
  }) : (memref<64x64xf16>, memref<16xi32>) -> !ktdp.access_tile<16xindex>
  func.return
}
// CHECK: {{^}}subscript map 1 has 2 dims and 0 symbols; expected 1 dims (captured, then intermediate) and no symbols

// -----

// A 2-d index view takes two subscripts inside ind(...).
func.func @indirect_view_rank(%x: memref<64x64xf16>, %idx: memref<4x16xi32>) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %x[ind(%idx[%i]), (0)] {variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>} : memref<64x64xf16>, memref<4x16xi32> -> !ktdp.access_tile<16xindex>
  func.return
}
// CHECK: {{^}}subscript map 0 has 1 results but needs 2 (one per index view dim)

// -----

// A direct subscript is a single expression.
func.func @indirect_direct_results(%x: memref<64x64xf16>, %idx: memref<16xi32>) {
  %t = "ktdp.construct_indirect_access_tile"(%x, %idx) <{per_dim_subscript_kinds = [true, false], per_dim_subscript_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0, 0)>], variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> ({
  ^bb0(%i: index):
    "ktdp.region_terminator"() : () -> ()
  }) : (memref<64x64xf16>, memref<16xi32>) -> !ktdp.access_tile<16xindex>
  func.return
}
// CHECK: {{^}}subscript map 1 has 2 results but needs 1 (a direct subscript)

// -----

// Index views hold integers (i32 or i64 in practice), not f16.
func.func @indirect_view_element(%x: memref<64x64xf16>, %idx: memref<16xf16>) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %x[ind(%idx[%i]), (0)] {variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>} : memref<64x64xf16>, memref<16xf16> -> !ktdp.access_tile<16xindex>
  func.return
}
// CHECK: {{^}}index view of subscript 0 holds f16, expected integers

// -----

// The tile has one dim per intermediate variable.
func.func @indirect_result_rank(%x: memref<64x64xf16>, %idx: memref<16xi32>) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %x[ind(%idx[%i]), (0)] {variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>} : memref<64x64xf16>, memref<16xi32> -> !ktdp.access_tile<16x1xindex>
  func.return
}
// CHECK: {{^}}result !ktdp.access_tile<16x1xindex> has rank 2 but variables_space_set has 1 dims

// -----

// %i runs over 0..15: 16 points, not 8.
func.func @indirect_extent(%x: memref<64x64xf16>, %idx: memref<16xi32>) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %x[ind(%idx[%i]), (0)] {variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>} : memref<64x64xf16>, memref<16xi32> -> !ktdp.access_tile<8xindex>
  func.return
}
// CHECK: {{^}}access tile dim 0 is 8 but variables_space_set spans 16 there (set extents 16 permuted by the order)

// -----

// Loading through an indirect tile also yields the base's element type.
func.func @indirect_load_element(%x: memref<64x64xf16>, %idx: memref<16xi32>) {
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%i) %x[ind(%idx[%i]), (0)] {variables_space_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>} : memref<64x64xf16>, memref<16xi32> -> !ktdp.access_tile<16xindex>
  %d = ktdp.load %t : !ktdp.access_tile<16xindex> -> tensor<16xf32>
  func.return
}
// CHECK: {{^}}load tensor element type f32 does not match the viewed element type f16
