"""spyrec's own KTIR output runs in the KTIR interpreter: @k0 of the demo MLP.

The compiler lowers `relu(x @ fc1.weight^T + fc1.bias)` to the KTIR function @k0. Its index
parameters are element offsets of stick-padded tensors: x is 64x100 f16 padded to 64x128,
the pre-transposed weight 100x100 padded to 128x128, the bias to 1x128 and the output to
64x128. The test lays the tensors out that way, runs @k0 and compares the 64x100 result.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import export_mlp

from spyrec.driver import compile_program, module_text
from spyrec.runtime.ktir_interpreter import parse_ktir, run_kernel


@pytest.fixture(scope="module")
def mlp_ktir():
    model, x, program = export_mlp(100, torch.float16)
    result = compile_program(program, stop_after="ktir")
    assert result.module is not None
    return model, x, module_text(result.module)


def _padded(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(shape, array.dtype)
    out[tuple(slice(0, n) for n in array.shape)] = array
    return out


def test_mlp_k0_matches_numpy(mlp_ktir):
    model, x, text = mlp_ktir
    module = parse_ktir(text)  # the printed compiler output, parsed back
    weight_t = model.fc1.weight.detach().numpy().T
    bias = model.fc1.bias.detach().numpy()
    x16 = x.numpy()
    run = run_kernel(
        module,
        "k0",
        {
            "x": _padded(x16, (64, 128)),
            "p_fc1_weight_t": _padded(weight_t, (128, 128)),
            "p_fc1_bias": _padded(bias.reshape(1, -1), (1, 128)),
            "relu": np.zeros((64, 128), np.float16),
        },
    )
    out = run.outputs["relu"]
    # The kernel accumulates in f32 and rounds once to f16: compare with an f32 reference
    # within half an f16 ulp (2**-11 relative) plus a small absolute slack near zero.
    reference = np.maximum(
        x16.astype(np.float32) @ weight_t.astype(np.float32) + bias.astype(np.float32), 0
    )
    np.testing.assert_allclose(out[:, :100].astype(np.float32), reference, rtol=2**-11, atol=1e-3)
    # The padding columns stay zero: padded weights and bias are zero and relu(0) = 0.
    assert not out[:, 100:].any()
    # The cores' tiles together compute the whole 64x128 output once, over K = 128:
    # 2 * 64 * 128 * 128 flops on the PT arrays, whatever the split.
    assert sum(s.matmul_flops for s in run.stats) == 2 * 64 * 128 * 128
    assert run.latency.cycles > 0
    assert run.races == []
