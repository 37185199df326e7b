// RUN: spyre-opt %S/Inputs/swiglu-mlp.mlir -p 'spyre-legalize,spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile,convert-spyre-to-ktir,spyre-place-memory' | filecheck %s

// A tensor kept in LX between two kernels (design note 61): placement. k0 keeps %silu
// (64 x 1024 fp16) in the LX of its 16 cores for k1 (spyre-partition-cores-keep.mlir). It
// gets no LPDDR buffer: its `spyre.addr` is its slices' LX byte offset, 1669504, the top
// 8192 B of the 1677696 usable (convert-spyre-to-ktir-lx.mlir). The input %x has bytes
// 0 .. 32767 (64 x 256 x 2); k1's %mul (131072 B) is the first activation after it, at 32768,
// where %silu would have gone; k2's result (32768 B) follows %mul, which is live until k2
// has run: 196608 B of activations, where %silu in LPDDR would have made it 294912 (k2's
// result taking %silu's place once k1 has read it).
// CHECK: func.func @forward{{.*}}spyre.lpddr_bytes = {activations = 196608 : i64
// CHECK: %silu = spyre.launch @k0({{.*}}spyre.lx_results = array<i64: 0>, spyre.addr = [1669504 : i64]}
// CHECK: %mul = spyre.launch @k1({{.*}}spyre.addr = [32768 : i64]}
// CHECK: spyre.launch @k2({{.*}}spyre.addr = [163840 : i64]}

// In both kernels the tiles stay below the slice: k0 needs 36864 B of LX, k1 45056 B, far
// under 1669504. k1's loads of %silu read it where it is: no LX slots of their own.
// CHECK-LABEL: func.func @k0
// CHECK-SAME: spyre.lx_reserved = array<i64: 1669504, 8192>
// CHECK-SAME: spyre.lx_bytes = 36864
// CHECK-LABEL: func.func @k1
// CHECK-SAME: spyre.lx_reserved = array<i64: 1669504, 8192>
// CHECK-SAME: spyre.lx_bytes = 45056
// CHECK: ktdp.load %{{[0-9]+}} {lx_slots = array<i64: {{[0-9]+}}, {{[0-9]+}}>} : !ktdp.access_tile<64x64xindex>
// CHECK: ktdp.load %{{[0-9]+}} : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
