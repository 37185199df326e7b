// Sizes known only at launch: y[r, :] = alpha * x[r, :] for the first %m rows of x, where
// %m is a runtime argument (a multiple of 16, at most 64) and alpha an f32 runtime argument.
// %y is allocated for the upper bound: its view takes its row count from the runtime_arg's
// upperbound, x's view from its value; each view's coordinate set binds s0 to its dynamic
// size. On a [4, 1] grid tile %id owns rows %id * (m / 4) .. + m / 4 - 1, so the tile's row
// extent is the symbol s0 of the tile set (bound through symbols(%per_tile)) and the tile
// and tensor types are ?x64.
#rows = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @scale_rows
func.func @scale_rows(%m: !ktdp.runtime_arg<index, granularity = 16, upperbound = 64>, %alpha: !ktdp.runtime_arg<f32>, %x: index, %y: index) attributes {grid = [4, 1]} {
  %id = ktdp.get_compute_tile_id : index
  %n = ktdp.runtime_arg_extract value from %m : !ktdp.runtime_arg<index, granularity = 16, upperbound = 64> -> index
  %cap = ktdp.runtime_arg_extract upperbound from %m : !ktdp.runtime_arg<index, granularity = 16, upperbound = 64> -> index
  %a = ktdp.runtime_arg_extract value from %alpha : !ktdp.runtime_arg<f32> -> f32
  %c4 = arith.constant 4 : index
  %per_tile = arith.divui %n, %c4 : index
  %first = arith.muli %id, %per_tile : index
  %vx = ktdp.construct_memory_view %x, sizes: [%n, 64], strides: [64, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<?x64xf16>
  %vy = ktdp.construct_memory_view %y, sizes: [%cap, 64], strides: [64, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<?x64xf16>
  %tx = ktdp.construct_access_tile %vx[%first, 0] symbols(%per_tile) {access_tile_set = #rows, access_tile_order = #id2} : memref<?x64xf16> -> !ktdp.access_tile<?x64xindex>
  %ty = ktdp.construct_access_tile %vy[%first, 0] symbols(%per_tile) {access_tile_set = #rows, access_tile_order = #id2} : memref<?x64xf16> -> !ktdp.access_tile<?x64xindex>
  %x16 = ktdp.load %tx : !ktdp.access_tile<?x64xindex> -> tensor<?x64xf16>
  %xf = arith.extf %x16 : tensor<?x64xf16> to tensor<?x64xf32>
  %e = tensor.empty(%per_tile) : tensor<?x64xf32>
  %alphas = linalg.fill ins(%a : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %scaled = arith.mulf %xf, %alphas : tensor<?x64xf32>
  %y16 = arith.truncf %scaled : tensor<?x64xf32> to tensor<?x64xf16>
  ktdp.store %y16, %ty : tensor<?x64xf16>, !ktdp.access_tile<?x64xindex>
  func.return
}
