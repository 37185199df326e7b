// RUN: rm -f %t.spyre %t.npz
// RUN: %python -c "import numpy as np; r = np.random.default_rng(0); np.savez('%t.npz', **{n: r.standard_normal(s).astype(np.float16) for n, s in [('fc1.weight', (100, 100)), ('fc1.bias', (100,)), ('fc2.weight', (100, 100)), ('fc2.bias', (100,))]})"
// RUN: spyre-opt %S/Inputs/mlp64x100-tiled.mlir -p 'convert-spyre-to-ktir,spyre-place-memory,spyre-schedule-dataflow,spyre-emit-spyrecode{output="%t.spyre" weights="%t.npz"}' > /dev/null
// RUN: %python -c "from spyrec.target.container import read_spyre; b = read_spyre('%t.spyre'); print([(t.name, t.layout.shape) for t in b.inputs + b.outputs]); print([(w.name, a.shape) for w, a in b.weights]); print([(k.name, k.num_cores, k.flops) for k in b.kernels])" | filecheck %s

// The signature keeps the logical shapes; weights are stored transposed (the param's
// permutation) with K zero-padded to whole sticks (100 -> 128 rows).
// CHECK: [('x', (64, 100)), ('output0', (64, 100))]
// CHECK: [('fc1.weight^T', (128, 100)), ('fc1.bias', (100,)), ('fc2.weight^T', (128, 100)), ('fc2.bias', (100,))]
// Each kernel's flops: 2 * 64 * 100 * 100 for the matmul plus one SFU op per output
// element for each of the bias add and the activation (gelu counts 4 passes): 1292800 + ...
// CHECK: [('k0', 1, {{[0-9]+}}), ('k1', 2, {{[0-9]+}})]
