// The public ring-reduce examples' rank-reduced inter-tile reduce (design note 83): partials
// tensor<1x64xf32>, the result tensor<64xf32>, reshaped back by tensor.expand_shape for the
// store. The verifier accepts a result that drops only unit dims of its partial; the
// compiler takes the partial's type and drops the reshape; the binary matches the
// interpreter, and the check fails when the reference differs (identity 1.0: every sum
// one more). Any other use of the rank-reduced result is refused with the rewrite.
// RUN: spyrec compile %s -o %t.spyre 2>/dev/null
// RUN: spyrec run %t.spyre --check %s --numerics ieee 2>&1 | FileCheck --check-prefix=CHECKED %s
// RUN: sed 's/arith.constant 0.0 : f32/arith.constant 1.0 : f32/' %s > %t.bug.mlir
// RUN: not spyrec run %t.spyre --check %t.bug.mlir --numerics ieee 2>&1 | FileCheck --check-prefix=BUG %s
// RUN: sed "s/^    %%first = /    %%bad = arith.addf %%sum, %%sum : tensor<64xf32>\n    %%first = /" %s > %t.use.mlir
// RUN: not spyrec compile %t.use.mlir -o %t.use.spyre 2>&1 | FileCheck --check-prefix=USE %s

// CHECKED: out_ptr: ok
// BUG: out_ptr: FAILED
// USE: error: {{.*}}@ring_sum: ktdp.inter_tile_reduce (%sum) delivers tensor<64xf32> from partials tensor<1x64xf32> and arith.addf reads it; the compiler takes the partial's type: write `-> tensor<1x64xf32>` and use the result as the partial's shape (drop the reshape)

#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#tiles = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
module {
  func.func @ring_sum(%in_ptr: index, %out_ptr: index) attributes {grid = [4, 1]} {
    %c0 = arith.constant 0 : index
    %pid = ktdp.get_compute_tile_id : index
    %vin = ktdp.construct_memory_view %in_ptr, sizes: [4, 64], strides: [64, 1] {
      coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<4x64xf32>
    %t = ktdp.construct_access_tile %vin[%pid, %c0] {access_tile_set = #row, access_tile_order = #id}
        : memref<4x64xf32> -> !ktdp.access_tile<1x64xindex>
    %partial = ktdp.load %t : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf32>
    %fut = ktdp.inter_tile_produce producer_tiles_per_group = #tiles
        : tensor<1x64xf32> -> !ktdp.tile_future<tensor<1x64xf32>, groups = affine_set<(g) : (g == 0)>> {
      ^bb0(%gid: index):
        ktdp.yield_partial %partial : tensor<1x64xf32>
    }
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x64xf32>
    %ident = linalg.fill ins(%zero : f32) outs(%e : tensor<1x64xf32>) -> tensor<1x64xf32>
    %sum = ktdp.inter_tile_reduce(%fut) consumer_tiles_per_group = #tiles, identity(%ident : tensor<1x64xf32>)
        : !ktdp.tile_future<tensor<1x64xf32>, groups = affine_set<(g) : (g == 0)>> -> tensor<64xf32> {
      ^bb0(%l: tensor<1x64xf32>, %r: tensor<1x64xf32>):
        %s = arith.addf %l, %r : tensor<1x64xf32>
        ktdp.yield_reduced %s : tensor<1x64xf32>
    }
    %first = arith.cmpi eq, %pid, %c0 : index
    scf.if %first {
      %sum2 = tensor.expand_shape %sum [[0, 1]] output_shape [1, 64] : tensor<64xf32> into tensor<1x64xf32>
      %vout = ktdp.construct_memory_view %out_ptr, sizes: [1, 64], strides: [64, 1] {
        coordinate_set = #row, memory_space = #ktdp.memory_space<global>} : memref<1x64xf32>
      %to = ktdp.construct_access_tile %vout[%c0, %c0] {access_tile_set = #row, access_tile_order = #id}
          : memref<1x64xf32> -> !ktdp.access_tile<1x64xindex>
      ktdp.store %sum2, %to : tensor<1x64xf32>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
