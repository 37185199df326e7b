// RUN: spyre-opt %s | filecheck %s
// RUN: spyre-opt %s | spyre-opt | filecheck %s
// RUN: spyre-opt %s | filecheck %s --check-prefix=CURRENT

// Every memory-space spelling KTIR has used parses; only the current one is printed.
// The pre-rename `#ktdp.spyre_memory_space` named devices (HBM off-chip, LX and L0 on-chip
// per core); the current attribute names visibility: `global` for all tiles, `ct_local` for
// one compute tile. HBM -> global, LX/L0 with `core = N` -> ct_local with `ct_id = N`.

// Nothing in the output uses the old attribute name.
// CURRENT-NOT: spyre_memory_space

// CHECK-LABEL: func.func @spellings
// CHECK-SAME: attributes {current_global = #ktdp.memory_space<global>, current_local = #ktdp.memory_space<ct_local, ct_id = 3>, hbm = #ktdp.memory_space<global>, lx = #ktdp.memory_space<ct_local, ct_id = 7>, l0 = #ktdp.memory_space<ct_local, ct_id = 2>, lx_tight = #ktdp.memory_space<ct_local, ct_id = 31>}
func.func @spellings() attributes {
    current_global = #ktdp.memory_space<global>,
    current_local = #ktdp.memory_space<ct_local, ct_id = 3>,
    hbm = #ktdp.spyre_memory_space<HBM>,
    lx = #ktdp.spyre_memory_space<LX, core = 7>,
    l0 = #ktdp.spyre_memory_space<L0, core = 2>,
    lx_tight = #ktdp.spyre_memory_space<LX,core=31>} {
  func.return
}

// The old spelling as a view's memory_space and as a memref type's memory space.
// CHECK-LABEL: func.func @on_views
// CHECK-SAME: (%{{.*}}: index, %{{.*}}: memref<64xf16, #ktdp.memory_space<global>>)
// CHECK-NEXT: ktdp.construct_memory_view {{.*}}memory_space = #ktdp.memory_space<global>} : memref<64xf16>
// CHECK-NEXT: ktdp.construct_memory_view {{.*}}memory_space = #ktdp.memory_space<ct_local, ct_id = 7>} : memref<64xf16, #ktdp.memory_space<ct_local, ct_id = 7>>
func.func @on_views(%off: index, %arg: memref<64xf16, #ktdp.spyre_memory_space<HBM>>) {
  %g = ktdp.construct_memory_view %off, sizes: [64], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64xf16>
  %l = ktdp.construct_memory_view %off, sizes: [64], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<LX, core = 7>} : memref<64xf16, #ktdp.spyre_memory_space<LX, core = 7>>
  func.return
}
