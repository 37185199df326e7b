"""The KTIR conformance suite: hand-written kernels (test/ktir/conformance) in the interpreter.

Each kernel runs over its whole grid on seeded random inputs and is compared with a NumPy
reference computed in float64 from the same (already rounded) inputs.

Tolerances come from each kernel's numerics, never from what a run happened to give. The
kernels compute in f32 from inputs that are exact in f32. With u the unit roundoff of the
kernel's storage type (IEEE: 2**-11 for f16, 2**-24 for f32; the interpreter is IEEE, not
Spyre's DL16) and `scale` the largest reference magnitude:

    rtol = final * u
    atol = 4 * scale * (depth * 2**-24 + intermediate * u) + half the smallest subnormal

- `final`: how often the value itself is rounded to the storage type (round to nearest
  costs at most u relative each time);
- `depth`: the total length of the f32 reductions behind a value; Higham's worst-case bound
  for a sum of n terms is about n * u_f32 of the terms' scale;
- `intermediate`: tensors rounded to the storage type before they feed a reduction (SDPA's
  probabilities, SwiGLU's hidden activation); the K rounding errors of about u * |term|
  add up like a random walk to about u of the sum's scale;
- 4 is the safety constant on those two estimates; the subnormal floor covers results that
  round below the smallest normal number.

Kernels that only move data, or do one correctly rounded op the way NumPy does it (an f32
add, doubling an f16), must match bit for bit.

The lit test test/lit/dialects/ktdp/conformance.mlir checks that the same files parse,
verify and round-trip in spyre-opt; docs/ktir.md §5 lists what each kernel covers.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from spyrec.dialects.ktdp_values import KtirAccessError
from spyrec.runtime.ktir_interpreter import (
    Device,
    KernelRun,
    KtirError,
    parse_ktir,
    run_kernel,
)

CONFORMANCE = Path(__file__).resolve().parents[2] / "ktir" / "conformance"
UNIT_ROUNDOFF = {np.dtype(np.float16): 2.0**-11, np.dtype(np.float32): 2.0**-24}


@functools.cache
def kernel(name: str) -> ModuleOp:
    """A conformance file, parsed and verified once per session."""
    return parse_ktir(CONFORMANCE / name)


def run(name: str, function: str, args: dict[str, Any], **options: Any) -> KernelRun:
    """Run a kernel; every conformance kernel orders its cross-core accesses (no races)."""
    result = run_kernel(kernel(name), function, args, **options)
    assert result.races == [], result.races
    return result


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def normal(
    generator: np.random.Generator, shape: tuple[int, ...], dtype: Any, scale: float = 1.0
) -> np.ndarray:
    return (scale * generator.standard_normal(shape)).astype(dtype)


def f64(array: np.ndarray) -> np.ndarray:
    return np.asarray(array, dtype=np.float64)


def assert_close(
    actual: np.ndarray,
    reference: np.ndarray,
    *,
    dtype: Any,
    depth: int = 0,
    final: int = 1,
    intermediate: int = 0,
) -> None:
    """`actual` within the tolerance of the module docstring for a `dtype` kernel."""
    u = UNIT_ROUNDOFF[np.dtype(dtype)]
    scale = float(np.max(np.abs(reference)))
    floor = float(np.finfo(dtype).smallest_subnormal) / 2
    atol = 4 * scale * (depth * UNIT_ROUNDOFF[np.dtype(np.float32)] + intermediate * u) + floor
    np.testing.assert_allclose(f64(actual), reference, rtol=final * u, atol=atol)


# ---- elementwise and normalisation ------------------------------------------------------


def test_vector_add_over_32_cores():
    g = rng(1)
    a, b = normal(g, (8192,), np.float32), normal(g, (8192,), np.float32)
    result = run("vector_add.mlir", "vector_add", {"a": a, "b": b, "c": np.zeros_like(a)})
    assert result.grid == (32, 1)
    np.testing.assert_array_equal(result.outputs["c"], a + b)  # one f32 add, as NumPy's
    # Every core moves its 256 elements of a, b and c: 3 KiB, 24 whole sticks.
    assert {s.lpddr_bytes for s in result.stats} == {3 * 256 * 4}
    assert {(s.loads, s.stores) for s in result.stats} == {(4, 2)}


def test_row_softmax():
    x = normal(rng(2), (64, 256), np.float16, scale=4.0)
    result = run("softmax.mlir", "softmax", {"x": x, "y": np.zeros_like(x)})
    shifted = np.exp(f64(x) - f64(x).max(axis=1, keepdims=True))
    reference = shifted / shifted.sum(axis=1, keepdims=True)
    assert_close(result.outputs["y"], reference, dtype=np.float16, depth=256)


def test_row_operand_loaded_before_the_loop():
    g = rng(21)
    x, w = normal(g, (64, 256), np.float32), normal(g, (256,), np.float32, scale=0.5)
    result = run("row_operand_outside_loop.mlir", "scale_by_exp",
                 {"x": x, "w": w, "y": np.zeros_like(x)})
    # exp in f32 (within one ulp of the exact value: up to 2u relative), then one f32
    # product (u): 3u in all
    assert_close(result.outputs["y"], f64(x) * np.exp(f64(w)), dtype=np.float32, final=3)


def test_layernorm_with_mean_and_rstd():
    g = rng(3)
    x = normal(g, (32, 256), np.float16, scale=2.0) + np.float16(0.5)
    gamma, beta = normal(g, (256,), np.float16), normal(g, (256,), np.float16)
    outputs = {
        "y": np.zeros_like(x),
        "mean": np.zeros(32, np.float32),
        "rstd": np.zeros(32, np.float32),
    }
    result = run("layernorm.mlir", "layernorm", {"x": x, "gamma": gamma, "beta": beta, **outputs})
    mean = f64(x).mean(axis=1)
    rstd = 1 / np.sqrt(f64(x).var(axis=1) + 1e-5)
    y = (f64(x) - mean[:, None]) * rstd[:, None] * f64(gamma) + f64(beta)
    assert_close(result.outputs["y"], y, dtype=np.float16, depth=256)
    # mean and rstd stay f32: a 256-term sum and a scaling (mean), then a second sum, the
    # scaling, + eps and rsqrt (rstd).
    assert_close(result.outputs["mean"], mean, dtype=np.float32, depth=256, final=2)
    assert_close(result.outputs["rstd"], rstd, dtype=np.float32, depth=512, final=4)


@pytest.fixture(scope="module")
def rms_inputs() -> dict[str, np.ndarray]:
    g = rng(4)
    return {"x": normal(g, (16, 256), np.float16, scale=3.0), "w": normal(g, (256,), np.float16)}


def rms_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return f64(x) / np.sqrt((f64(x) ** 2).mean(axis=1, keepdims=True) + 1e-6) * f64(w)


def test_rmsnorm_rows_sharded(rms_inputs):
    x, w = rms_inputs["x"], rms_inputs["w"]
    result = run("rmsnorm.mlir", "rmsnorm_rows", {"x": x, "w": w, "y": np.zeros_like(x)})
    assert_close(result.outputs["y"], rms_reference(x, w), dtype=np.float16, depth=256)
    assert all(s.ring_bytes == 0 for s in result.stats)  # each row stays on one core


def test_rmsnorm_hidden_sharded_all_reduce_in_groups(rms_inputs):
    x, w = rms_inputs["x"], rms_inputs["w"]
    result = run("rmsnorm.mlir", "rmsnorm_hidden_sharded", {"x": x, "w": w, "y": np.zeros_like(x)})
    assert result.grid == (4, 2)
    assert_close(result.outputs["y"], rms_reference(x, w), dtype=np.float16, depth=256)
    # Each core receives the 8-row f32 partials (32 B) of the 3 other cores of its group
    # only: the two groups do not talk to each other.
    assert {s.ring_bytes for s in result.stats} == {3 * 32}


def test_rope():
    q = normal(rng(5), (32, 4, 64), np.float16)
    angles = np.arange(32)[:, None] * 10000.0 ** (-np.arange(32) / 32)
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    result = run("rope.mlir", "rope", {"q": q, "cos": cos, "sin": sin, "out": np.zeros_like(q)})
    x1, x2 = f64(q[..., :32]), f64(q[..., 32:])
    c, s = f64(cos)[:, None, :], f64(sin)[:, None, :]
    reference = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
    assert_close(result.outputs["out"], reference, dtype=np.float16, depth=2)


# ---- contractions ---------------------------------------------------------------------


def test_matmul_k_loop_on_2d_grid():
    g = rng(6)
    a, w = normal(g, (64, 256), np.float16), normal(g, (128, 256), np.float16)
    result = run("matmul.mlir", "matmul", {"a": a, "w": w, "c": np.zeros((64, 128), np.float32)})
    assert result.grid == (2, 4)
    # f16 products are exact in f32; only the 256-deep f32 accumulation rounds.
    assert_close(result.outputs["c"], f64(a) @ f64(w).T, dtype=np.float32, depth=256)
    # 4 K steps of a 32x64 @ 64x32 product per core.
    assert {s.matmul_flops for s in result.stats} == {4 * 2 * 32 * 64 * 32}


def test_sdpa_one_head_per_core():
    g = rng(7)
    q, k, v = (normal(g, (4, 64, 64), np.float16) for _ in range(3))
    result = run("sdpa.mlir", "sdpa", {"q": q, "k": k, "v": v, "out": np.zeros_like(q)})
    scores = f64(q) @ f64(k).transpose(0, 2, 1) / 8
    scores[:, np.triu(np.ones((64, 64), dtype=bool), 1)] = -np.inf
    probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    # The probabilities are rounded to f16 before the second product; reductions of 64
    # (scores), 64 (softmax sum) and 64 (probabilities @ v).
    assert_close(result.outputs["out"], probs @ f64(v), dtype=np.float16, depth=192, intermediate=1)


@pytest.fixture(scope="module")
def ffn_inputs() -> dict[str, np.ndarray]:
    g = rng(8)
    return {
        "x": normal(g, (16, 64), np.float16),
        "w1": normal(g, (64, 256), np.float16, scale=1 / 8),
        "w3": normal(g, (64, 256), np.float16, scale=1 / 8),
        "w2": normal(g, (256, 64), np.float16, scale=1 / 16),
    }


def ffn_reference(x, w1, w3, w2) -> np.ndarray:
    gate = f64(x) @ f64(w1)
    return (gate / (1 + np.exp(-gate)) * (f64(x) @ f64(w3))) @ f64(w2)


def shard_major(weight: np.ndarray) -> np.ndarray:
    """64x256 -> 4 contiguous 64x64 column shards, as the 4-core kernel's views expect."""
    return np.ascontiguousarray(weight.reshape(64, 4, 64).transpose(1, 0, 2))


def test_ffn_swiglu_1_core(ffn_inputs):
    result = run(
        "ffn_swiglu.mlir", "ffn_swiglu_1core", {**ffn_inputs, "y": np.zeros((16, 64), np.float16)}
    )
    # h is rounded to f16 before the down projection; 64-deep up, 256-deep down projections.
    assert_close(
        result.outputs["y"],
        ffn_reference(**ffn_inputs),
        dtype=np.float16,
        depth=320,
        intermediate=1,
    )


def test_ffn_swiglu_4_cores_distributed_weights(ffn_inputs):
    args = {
        **ffn_inputs,
        "w1": shard_major(ffn_inputs["w1"]),
        "w3": shard_major(ffn_inputs["w3"]),
        "y": np.zeros((16, 64), np.float16),
    }
    result = run("ffn_swiglu.mlir", "ffn_swiglu_4core", args)
    assert_close(
        result.outputs["y"],
        ffn_reference(**ffn_inputs),
        dtype=np.float16,
        depth=320,
        intermediate=1,
    )
    # Each core reads only its own shard of the weights: x (2 KiB) and three 64x64 f16
    # blocks (8 KiB each), and writes 4 rows of y (512 B); the partials travel on the ring.
    assert {s.lpddr_bytes for s in result.stats} == {2048 + 3 * 8192 + 512}
    assert {s.ring_bytes for s in result.stats} == {3 * 16 * 64 * 4}


# ---- indirect access ------------------------------------------------------------------


def test_indirect_gather():
    g = rng(9)
    table, idx = normal(g, (128, 64), np.float16), g.integers(0, 128, 32).astype(np.int32)
    out = np.zeros((32, 64), np.float16)
    result = run("gather_scatter.mlir", "gather", {"table": table, "idx": idx, "out": out})
    np.testing.assert_array_equal(result.outputs["out"], table[idx])


def test_indirect_scatter():
    g = rng(10)
    src, table = normal(g, (32, 64), np.float16), normal(g, (128, 64), np.float16)
    idx = g.permutation(128)[:32].astype(np.int64)
    result = run("gather_scatter.mlir", "scatter", {"src": src, "idx": idx, "table": table})
    expected = table.copy()
    expected[idx] = src
    np.testing.assert_array_equal(result.outputs["table"], expected)


@pytest.fixture(scope="module")
def paged_cache() -> dict[str, np.ndarray]:
    g = rng(11)
    return {
        "pool": normal(g, (16, 2, 16, 64), np.float16),
        "block_table": g.permutation(16)[:8].reshape(2, 4).astype(np.int32),
    }


def test_paged_kv_read_4d_floordiv_mod(paged_cache):
    pool, table = paged_cache["pool"], paged_cache["block_table"]
    out = np.zeros((2, 2, 64, 64), np.float16)
    result = run("gather_scatter.mlir", "paged_kv_read", {**paged_cache, "out": out})
    # Token t of sequence b is slot t mod 16 of physical page table[b, t floordiv 16].
    tokens = np.arange(64)
    expected = pool[table[:, tokens // 16], :, tokens % 16, :].transpose(0, 2, 1, 3)
    np.testing.assert_array_equal(result.outputs["out"], expected)


def test_paged_kv_append_captured_position(paged_cache):
    pool, table = paged_cache["pool"], paged_cache["block_table"]
    new = normal(rng(12), (2, 2, 64), np.float16)
    position = 37  # slot 5 of logical page 2
    args = {"new": new, "pos": position, "block_table": table, "pool": pool.copy()}
    result = run("gather_scatter.mlir", "paged_kv_append", args)
    expected = pool.copy()
    for sequence in range(2):
        expected[table[sequence, position // 16], :, position % 16, :] = new[sequence]
    np.testing.assert_array_equal(result.outputs["pool"], expected)


# ---- memory placement and symbolic sizes -------------------------------------------------


def test_distributed_view_over_lpddr_and_two_lx():
    x = normal(rng(13), (96, 64), np.float16)
    device = Device()
    args = {"x": x, "stage": np.zeros((64, 64), np.float16), "y": np.zeros_like(x)}
    result = run("distributed_view.mlir", "distributed_view", args, device=device)
    np.testing.assert_array_equal(result.outputs["y"], x + x)
    np.testing.assert_array_equal(result.outputs["stage"], x[:64])
    # Rows 64..79 row-major at the start of core 0's LX, rows 80..95 column-major in core 1's.
    lx0 = device.lx[0].data[: 16 * 64 * 2].view(np.float16).reshape(16, 64)
    lx1 = device.lx[1].data[: 16 * 64 * 2].view(np.float16).reshape(64, 16)
    np.testing.assert_array_equal(lx0, x[64:80])
    np.testing.assert_array_equal(lx1, x[80:96].T)
    # Core 1's read-back spans all three parts: core 0's 16 rows (2 KiB) come over the ring,
    # plus the barrier's 4-byte token; core 0 reads LPDDR only and gets core 1's token.
    assert [s.ring_bytes for s in result.stats] == [4, 2048 + 4]


@pytest.mark.parametrize("rows", [16, 48])
def test_symbolic_sizes_from_runtime_args(rows):
    x = normal(rng(14), (rows, 64), np.float16)
    y = np.full((64, 64), 7, np.float16)  # allocated for the upper bound
    result = run("symbolic_sizes.mlir", "scale_rows", {"m": rows, "alpha": 1.5, "x": x, "y": y})
    assert_close(result.outputs["y"][:rows], 1.5 * f64(x), dtype=np.float16)
    assert (result.outputs["y"][rows:] == 7).all()  # rows past m are not touched


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (40, "runtime argument %m = 40 is not a multiple of 16"),
        (80, "runtime argument %m = 80 exceeds its upper bound 64"),
    ],
)
def test_runtime_arg_contract_is_checked_at_launch(rows, message):
    args = {
        "m": rows,
        "alpha": 1.0,
        "x": np.zeros((rows, 64), np.float16),
        "y": np.zeros((64, 64), np.float16),
    }
    with pytest.raises(KtirError, match=message):
        run("symbolic_sizes.mlir", "scale_rows", args)


# ---- kernels that must fail cleanly ---------------------------------------------------


def expect_failure(function: str, args: dict[str, Any], error: type[KtirError]) -> str:
    with pytest.raises(error) as info:
        run_kernel(kernel("errors.mlir"), function, args)
    assert type(info.value) is error
    return str(info.value)


def test_load_out_of_bounds_names_core_op_and_coordinate():
    zeros = np.zeros((64, 64), np.float16)
    message = expect_failure("load_out_of_bounds", {"x": zeros, "y": zeros}, KtirAccessError)
    assert message.startswith("core 3 (x=3, y=0) in @load_out_of_bounds: ktdp.load (%rows): ")
    assert "coordinate (64, 0) is outside the coordinate set of view %vx" in message


def test_scatter_out_of_bounds_writes_nothing():
    table = np.zeros((64, 64), np.float16)
    idx = np.array([0, 1, 2, 64, 4, 5, 6, 7], np.int32)  # one row past the end
    device = Device()
    address = device.place(table)
    args = {"src": np.ones((8, 64), np.float16), "idx": idx, "table": address // 2}
    with pytest.raises(KtirAccessError) as info:
        run_kernel(kernel("errors.mlir"), "scatter_out_of_bounds", args, device=device)
    assert str(info.value).startswith(
        "core 0 (x=0) in @scatter_out_of_bounds: ktdp.store %data, %tt: coordinate (64, 0) "
        "is outside the coordinate set of view %vt"
    )
    assert not device.read(address, (64, 64), np.float16).any()


def test_distributed_view_hole():
    zeros = np.zeros((16, 64), np.float16)
    message = expect_failure("distributed_hole", {"lo": zeros, "hi": zeros}, KtirAccessError)
    assert message == (
        "core 0 (x=0) in @distributed_hole: ktdp.load (%rows): coordinate (16, 0) is in no "
        "part of distributed view %v (memref<48x64xf16>)"
    )


def test_tile_that_overflows_lx():
    x = np.zeros((640, 1024), np.float32)
    message = expect_failure("tile_overflows_lx", {"x": x}, KtirError)
    assert message == (
        "core 0 (x=0) in @tile_overflows_lx: ktdp.load (%big): LX overflow: the loaded tile "
        "%big takes 2621440 bytes, more than the 2097152-byte LX of a core"
    )


def test_lx_buffer_that_overflows_lx():
    message = expect_failure("lx_buffer_overflows", {}, KtirError)
    assert message == (
        "core 0 (x=0, y=0) in @lx_buffer_overflows: ktdp.construct_memory_view (%buffer): LX "
        "overflow: view %buffer (memref<512x1024xf32>) spans bytes [4, 2097155] of the LX of "
        "core 1, which holds 2097152 bytes"
    )
