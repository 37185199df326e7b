// y = x * exp(w) for a 64x256 f32 x over a [2, 1] grid: each tile owns 32 rows and walks
// them 8 at a time; the row operand w is loaded once, before the loop, and exp(w) is
// computed inside it. The exp has w's type and is w's only reader, but w's tile belongs to
// the function's body, not the loop's: computing in place would overwrite w for the next
// iteration (spyre-place-memory keeps in-place steps within one loop body).
#block = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col_of = affine_map<(d0, d1) -> (d1)>
#id1 = affine_map<(d0) -> (d0)>
#w1 = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>
// CHECK-LABEL: func.func @scale_by_exp
func.func @scale_by_exp(%x: index, %w: index, %y: index) attributes {grid = [2, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %vx = ktdp.construct_memory_view %x, sizes: [64, 256], strides: [256, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<64x256xf32>
  %vw = ktdp.construct_memory_view %w, sizes: [256], strides: [1] {coordinate_set = #w1, memory_space = #ktdp.memory_space<global>} : memref<256xf32>
  %vy = ktdp.construct_memory_view %y, sizes: [64, 256], strides: [256, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<64x256xf32>
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %tw = ktdp.construct_access_tile %vw[0] {access_tile_set = #w1, access_tile_order = #id1} : memref<256xf32> -> !ktdp.access_tile<256xindex>
  %wt = ktdp.load %tw : !ktdp.access_tile<256xindex> -> tensor<256xf32>
  %base = arith.muli %id, %c32 : index
  scf.for %i = %c0 to %c32 step %c8 {
    %r = arith.addi %base, %i : index
    %tx = ktdp.construct_access_tile %vx[%r, 0] {access_tile_set = #block, access_tile_order = #id2} : memref<64x256xf32> -> !ktdp.access_tile<8x256xindex>
    %xt = ktdp.load %tx : !ktdp.access_tile<8x256xindex> -> tensor<8x256xf32>
    %e0 = tensor.empty() : tensor<256xf32>
    %ew = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%wt : tensor<256xf32>) outs(%e0 : tensor<256xf32>) {
    ^bb0(%v: f32, %out: f32):
      %e = math.exp %v : f32
      linalg.yield %e : f32
    } -> tensor<256xf32>
    %o0 = tensor.empty() : tensor<8x256xf32>
    %prod = linalg.generic {indexing_maps = [#id2, #col_of, #id2], iterator_types = ["parallel", "parallel"]} ins(%xt, %ew : tensor<8x256xf32>, tensor<256xf32>) outs(%o0 : tensor<8x256xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<8x256xf32>
    %ty = ktdp.construct_access_tile %vy[%r, 0] {access_tile_set = #block, access_tile_order = #id2} : memref<64x256xf32> -> !ktdp.access_tile<8x256xindex>
    ktdp.store %prod, %ty : tensor<8x256xf32>, !ktdp.access_tile<8x256xindex>
  }
  func.return
}
