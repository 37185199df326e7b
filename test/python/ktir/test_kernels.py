"""Hand-written KTIR kernels (kernels/*.mlir) in the interpreter, against NumPy references."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from spyrec.dialects.ktdp_values import KtirAccessError
from spyrec.runtime.ktir_interpreter import (
    Device,
    KtirDeadlock,
    KtirError,
    KtirRace,
    KtirSourceError,
    execute,
    parse_ktir,
    run_kernel,
)

KERNELS = Path(__file__).parent / "kernels"
RNG = np.random.default_rng(2026)


def kernel(name: str):
    return parse_ktir(KERNELS / name)


def test_vector_add_over_32_tiles():
    # 96x64 f16 on a [32, 1] grid: tile i adds rows 3i .. 3i+2, one stick per row.
    a = RNG.standard_normal((96, 64)).astype(np.float16)
    b = RNG.standard_normal((96, 64)).astype(np.float16)
    run = run_kernel(kernel("vector_add.mlir"), "add", {"a": a, "b": b, "c": np.zeros_like(a)})
    assert run.grid == (32, 1)
    np.testing.assert_array_equal(run.outputs["c"], a + b)
    # Each tile moves 3 rows of a, b and c: 9 sticks of 128 B.
    assert {s.lpddr_bytes for s in run.stats} == {9 * 128}
    assert run.latency.cycles > 0 and run.latency.bottleneck == "lpddr"
    assert run.races == []  # every tile writes its own rows


def test_execute_returns_every_array_argument():
    a = np.ones((96, 64), np.float16)
    outputs = execute(KERNELS / "vector_add.mlir", "add", a=a, b=a, c=np.zeros_like(a))
    assert set(outputs) == {"a", "b", "c"}
    np.testing.assert_array_equal(outputs["c"], 2 * a)


def test_caller_placed_arrays():
    # Arrays placed by the caller are passed as element offsets (bytes / itemsize).
    device = Device()
    a = RNG.standard_normal((96, 64)).astype(np.float16)
    addresses = [device.place(x) for x in (a, a, np.zeros_like(a))]
    assert all(address % 128 == 0 for address in addresses)
    offsets = dict(zip("abc", (address // 2 for address in addresses), strict=True))
    run_kernel(kernel("vector_add.mlir"), "add", offsets, device=device)
    np.testing.assert_array_equal(device.read(addresses[2], a.shape, np.float16), a + a)


def test_softmax_with_linalg_reduce():
    x = (4 * RNG.standard_normal((16, 128))).astype(np.float16)
    run = run_kernel(kernel("softmax.mlir"), "softmax", {"in": x, "out": np.zeros_like(x)})
    shifted = np.exp(x.astype(np.float32) - x.astype(np.float32).max(1, keepdims=True))
    reference = shifted / shifted.sum(1, keepdims=True)
    # f16 output: half an ulp of values below 1 is < 2**-12.
    np.testing.assert_allclose(run.outputs["out"].astype(np.float32), reference, atol=2.5e-4)


def test_matmul_with_k_loop_on_2x2_grid():
    a = RNG.standard_normal((64, 128)).astype(np.float16)
    b = RNG.standard_normal((128, 64)).astype(np.float16)
    run = run_kernel(
        kernel("matmul.mlir"), "matmul", {"a": a, "b": b, "c": np.zeros((64, 64), np.float16)}
    )
    reference = a.astype(np.float32) @ b.astype(np.float32)
    # f32 accumulation, one f16 rounding at the end: |error| <= |value| * 2**-11.
    np.testing.assert_allclose(
        run.outputs["c"].astype(np.float32), reference, rtol=2**-11, atol=1e-3
    )
    # 2 K steps x 2 * 32 * 32 * 64 flops per tile.
    assert {s.matmul_flops for s in run.stats} == {2 * 2 * 32 * 32 * 64}


def test_distributed_view_over_lpddr_and_two_lx():
    src = RNG.standard_normal((128, 64)).astype(np.float16)
    device = Device()
    run = run_kernel(
        kernel("distributed.mlir"),
        "distributed_copy",
        {"src": src, "hbm": np.zeros((96, 64), np.float16), "dst": np.zeros_like(src)},
        device=device,
    )
    np.testing.assert_array_equal(run.outputs["dst"], src)
    np.testing.assert_array_equal(run.outputs["hbm"], src[:96])
    # Rows 96..111 sit row-major at the start of tile 0's LX; rows 112..127 column-major
    # (strides [1, 16]) in tile 1's LX.
    lx0 = device.lx[0].data[: 16 * 64 * 2].view(np.float16).reshape(16, 64)
    lx1 = device.lx[1].data[: 16 * 64 * 2].view(np.float16).reshape(64, 16)
    np.testing.assert_array_equal(lx0, src[96:112])
    np.testing.assert_array_equal(lx1, src[112:128].T)
    assert run.stats[0].lx_bytes > 0 and run.stats[1].lx_bytes > 0


def test_indirect_gather_with_captured_base():
    table = RNG.standard_normal((64, 64)).astype(np.float16)
    idx = RNG.integers(0, 64, 16).astype(np.int32)
    run = run_kernel(
        kernel("gather.mlir"),
        "gather",
        {"table": table, "idx": idx, "out": np.zeros((16, 64), np.float16)},
    )
    np.testing.assert_array_equal(run.outputs["out"], table[idx])


def test_paged_read_with_floordiv_mod_and_transposed_order():
    pool = RNG.standard_normal((8, 64, 32)).astype(np.float16)
    pages = np.array([5, 2, 7, 0], np.int64)
    run = run_kernel(
        kernel("gather.mlir"),
        "paged",
        {"pool": pool, "pages": pages, "out": np.zeros((32, 256), np.float16)},
    )
    np.testing.assert_array_equal(run.outputs["out"], pool[pages].reshape(256, 32).T)


def test_indirect_index_out_of_range():
    table = np.zeros((64, 64), np.float16)
    idx = np.full(16, 64, np.int32)  # one past the last row
    with pytest.raises(
        KtirAccessError, match=r"coordinate \(64, 0\) is outside the coordinate set"
    ):
        run_kernel(
            kernel("gather.mlir"),
            "gather",
            {"table": table, "idx": idx, "out": np.zeros((16, 64), np.float16)},
        )


def test_all_reduce_across_4_tiles():
    x = RNG.standard_normal((4, 64)).astype(np.float32)
    run = run_kernel(kernel("inter_tile.mlir"), "all_reduce", {"in": x, "out": np.zeros_like(x)})
    # Every tile folds the 4 partials in tile order, so all rows are bit-identical.
    total = ((x[0] + x[1]) + x[2]) + x[3]
    np.testing.assert_array_equal(run.outputs["out"], np.broadcast_to(total, (4, 64)))
    # Each tile receives the 3 other 256-byte partials over the ring.
    assert {s.ring_bytes for s in run.stats} == {3 * 256}
    assert run.races == []


def test_reduce_to_one_then_broadcast():
    x = RNG.standard_normal((4, 64)).astype(np.float32)
    run = run_kernel(
        kernel("inter_tile.mlir"), "reduce_then_broadcast", {"in": x, "out": np.zeros_like(x)}
    )
    group_max = np.stack([x[:2].max(0), x[2:].max(0)])
    np.testing.assert_array_equal(run.outputs["out"], np.repeat(group_max, 2, axis=0))


def test_deadlock_is_reported():
    with pytest.raises(
        KtirDeadlock, match=r"core 1 .* waits in ktdp.inter_tile_consume .* for tiles \[0\]"
    ):
        run_kernel(kernel("inter_tile.mlir"), "deadlock", {"in": np.zeros((4, 64), np.float32)})


def test_cores_run_concurrently_and_races_are_reported():
    # Run one after the other, tile 0 would read back its own 0. In lock-step both stores
    # happen before both loads, so both tiles read tile 1's value.
    args = {"shared": np.zeros((1, 32), np.int32), "out": np.zeros((2, 32), np.int32)}
    run = run_kernel(kernel("race.mlir"), "race", args)
    assert run.outputs["out"][:, 0].tolist() == [1, 1]
    assert [race.kind for race in run.races] == ["write after write", "read after write"]
    assert str(run.races[0]).startswith(
        "write after write race on byte 0 of LPDDR: core 0 wrote it in ktdp.store %value, %ts, "
        "core 1 wrote it in ktdp.store %value, %ts"
    )
    with pytest.raises(KtirRace, match="write after write race"):
        run_kernel(kernel("race.mlir"), "race", args, races="error")


def test_inter_tile_delivery_orders_accesses():
    args = {"shared": np.zeros((1, 32), np.int32), "out": np.zeros((2, 32), np.int32)}
    run = run_kernel(kernel("race.mlir"), "ordered_handoff", args)
    assert run.outputs["out"][:, 0].tolist() == [0, 42]
    assert run.races == []


def test_out_of_bounds_access_names_core_op_and_coordinate():
    with pytest.raises(KtirAccessError) as info:
        run_kernel(kernel("errors.mlir"), "out_of_bounds", {"a": np.zeros((96, 64), np.float16)})
    message = str(info.value)
    assert message.startswith("core 31 (x=31, y=0) in @out_of_bounds: ktdp.load (%x): ")
    assert "coordinate (96, 0)" in message



def test_view_past_its_array_never_reads_the_next_one():
    # Tile i views row i at %a + 64 * i, an offset only a run knows. With 2 rows of %a,
    # tile 2's view starts where %b's bytes are: refused, naming both arrays, not read.
    a, b = np.ones((2, 64), np.float16), np.zeros((4, 64), np.float16)
    with pytest.raises(KtirAccessError) as info:
        run_kernel(kernel("errors.mlir"), "row_per_tile", {"a": a, "b": b})
    assert str(info.value) == (
        "core 2 (x=2, y=0) in @row_per_tile: ktdp.load (%x): coordinate (0, 0) of view %va "
        "(memref<1x64xf16>) is at byte 256, in argument %b (4x64 float16), outside argument "
        "%a (2x64 float16), bytes [0, 256), the array the view is built on: the view reaches "
        "past the array passed for it")
    run = run_kernel(kernel("errors.mlir"), "row_per_tile", {"a": np.ones((4, 64), np.float16),
                                                             "b": b})
    assert run.outputs["b"].min() == 1


def test_parts_at_constant_offsets_must_fit_the_array():
    # ffn_swiglu_4core views %w1 as four 64x64 parts at %w1 + 4096 k: a 64x192 array holds
    # three of them, and the fourth would read past it.
    conformance = KERNELS.parent.parent.parent / "ktir" / "conformance"
    x = np.zeros((16, 64), np.float16)
    args = {"x": x, "y": x, "w1": np.zeros((64, 192), np.float16),
            "w3": np.zeros((64, 256), np.float16), "w2": np.zeros((256, 64), np.float16)}
    with pytest.raises(KtirError, match=(
            r"@ffn_swiglu_4core: argument %w1 is 64x192 float16, 12288 elements, but the "
            r"kernel's view %w1_part3 \(memref<64x64xf16> at element offset 12288\) reaches "
            r"element 16383 of it: pass at least 16384 float16 elements")):
        run_kernel(conformance / "ffn_swiglu.mlir", "ffn_swiglu_4core", args)

def test_access_outside_coordinate_set():
    with pytest.raises(
        KtirAccessError, match=r"coordinate \(70, 0\) is outside the coordinate set of view %va"
    ):
        run_kernel(
            kernel("errors.mlir"), "outside_coordinate_set", {"a": np.zeros((96, 64), np.float16)}
        )


def test_lx_overflow():
    # 1024 x 1024 x 4 B = 4 MiB of ct_local view against a 2 MiB LX.
    with pytest.raises(
        KtirError,
        match=r"LX overflow: view %scratch .* spans bytes \[0, 4194303\] of the LX of core 0, "
        r"which holds 2097152 bytes",
    ):
        run_kernel(kernel("errors.mlir"), "lx_overflow", {})


def test_loaded_tile_must_fit_lx():
    with pytest.raises(KtirError, match="LX overflow: the loaded tile %x takes 4194304 bytes"):
        run_kernel(
            kernel("errors.mlir"), "tile_overflow", {"a": np.zeros((1024, 1024), np.float32)}
        )


def test_unknown_parameter():
    with pytest.raises(KtirError, match="has no parameters"):
        run_kernel(kernel("vector_add.mlir"), "add", {"a": 0, "b": 0, "c": 0, "d": 0})


def test_an_argument_of_another_kind_is_named():
    # a torch tensor (or a list) fell through to the scalar conversion before, whose
    # ValueError ("only one element tensors can be converted") named nothing
    torch = pytest.importorskip("torch")
    with pytest.raises(KtirError, match=r"@add: argument %a is a Tensor; pass a NumPy array"):
        run_kernel(kernel("vector_add.mlir"), "add",
                   {"a": torch.zeros(8192), "b": np.zeros(8192, np.float32),
                    "c": np.zeros(8192, np.float32)})


def test_tile_order_transposes():
    # Order (d1, d0) over a 16x32 set: tile index = (d1, d0), shape 32x16.
    x = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    run = run_kernel(
        kernel("shapes.mlir"), "transpose", {"in": x, "out": np.zeros((32, 16), np.float32)}
    )
    np.testing.assert_array_equal(run.outputs["out"], x.T)


def test_runtime_arg_sizes_views_and_tiles():
    src = RNG.standard_normal((96, 64)).astype(np.float16)
    args = {"n": 64, "src": src, "dst": np.zeros_like(src)}
    run = run_kernel(kernel("shapes.mlir"), "copy_rows", args)
    np.testing.assert_array_equal(run.outputs["dst"][:64], src[:64])
    assert not run.outputs["dst"][64:].any()
    with pytest.raises(KtirError, match="runtime argument %n = 40 is not a multiple of 32"):
        run_kernel(kernel("shapes.mlir"), "copy_rows", {**args, "n": 40})
    with pytest.raises(KtirError, match="exceeds its upper bound 96"):
        run_kernel(kernel("shapes.mlir"), "copy_rows", {**args, "n": 128})


def test_grid_override():
    # The same vector add on 16 tiles covers rows 0..47 only.
    a = np.ones((96, 64), np.float16)
    run = run_kernel(
        kernel("vector_add.mlir"), "add", {"a": a, "b": a, "c": np.zeros_like(a)}, grid=[16, 1]
    )
    assert run.grid == (16, 1) and len(run.stats) == 16
    assert run.outputs["c"][:48].min() == 2 and not run.outputs["c"][48:].any()


def test_malformed_ktir_gets_a_located_error(tmp_path):
    # parse_ktir (and so run_kernel, execute and `spyrec run`) names the file, line and
    # column: where the parser stopped, or the op whose verifier failed.
    view = (
        "  %v = ktdp.construct_memory_view %a, sizes: [64], strides: [1] {coordinate_set = "
        "affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = "
        "#ktdp.memory_space<{space}>} : memref<64xf16>\n"
    )
    tile = (
        "  %t = ktdp.construct_access_tile %v[0] {access_tile_set = affine_set<(d0) : "
        "(d0 >= 0, -d0 + 7 >= 0)>, access_tile_order = affine_map<(d0) -> (d0)>} : "
        "memref<64xf16> -> !ktdp.access_tile<8xindex>\n"
    )
    load = "  %x = ktdp.load %t : !ktdp.access_tile<8xindex> -> tensor<4xf16>\n"
    kernel_text = "func.func @f(%a: index) {{\n{body}  func.return\n}}\n"
    bad_verify = tmp_path / "bad_verify.mlir"
    bad_verify.write_text(kernel_text.format(body=view.replace("{space}", "global") + tile + load))
    with pytest.raises(KtirSourceError) as info:
        run_kernel(bad_verify, "f", {"a": np.zeros(64, np.float16)})
    assert str(info.value).splitlines()[0] == (
        f"{bad_verify}:4:3: 'ktdp.load' op load tensor shape 4 does not match access tile shape 8"
    )
    bad_parse = tmp_path / "bad_parse.mlir"
    bad_parse.write_text(kernel_text.format(body=view.replace("{space}", "HBM")))
    with pytest.raises(KtirSourceError, match=r"bad_parse.mlir:2:162: unknown memory space 'HBM'"):
        parse_ktir(bad_parse)



def _beyond_rounding(actual: np.ndarray, exact: np.ndarray) -> float:
    """How much further `actual` is from `exact` than `exact` rounded once to its type."""
    rounded = exact.astype(actual.dtype).astype(np.float64)
    return float((np.abs(actual.astype(np.float64) - exact) - np.abs(rounded - exact)).max())


def test_half_precision_contractions_accumulate_in_f32():
    # K = 2048 products of f16 values summed into an f16 init, as linalg.matmul, as a
    # contraction generic and as a linalg.reduce: accumulated in f32 and rounded once, each
    # result is as close to the exact sum as its own rounding, up to the f32 sum's order
    # (< 1e-4 here); accumulating in f16 (np.einsum in float16) was off by more than 1.0.
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 2048)).astype(np.float16)
    w = rng.standard_normal((2048, 16)).astype(np.float16)
    args = {"x": x, "w": w, "y": np.zeros((16, 16), np.float16),
            "g": np.zeros((16, 16), np.float16), "s": np.zeros(16, np.float16)}
    out = run_kernel(kernel("half_accumulation.mlir"), "f16_products", args).outputs
    exact = x.astype(np.float64) @ w.astype(np.float64)
    assert _beyond_rounding(out["y"], exact) < 1e-3
    assert _beyond_rounding(out["g"], exact) < 1e-3
    assert _beyond_rounding(out["s"], x.astype(np.float64).sum(1)) < 1e-3
    bf16 = ml_dtypes.bfloat16
    args = {"x": x.astype(bf16), "w": w.astype(bf16), "y": np.zeros((16, 16), bf16)}
    out = run_kernel(kernel("half_accumulation.mlir"), "bf16_matmul", args).outputs
    exact = args["x"].astype(np.float64) @ args["w"].astype(np.float64)
    assert _beyond_rounding(out["y"], exact) < 1e-3
