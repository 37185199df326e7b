"""Masked tails (docs/ktir.md §7): a masked access tile's lanes outside its view are not
read (a load gives 0 there) and not written; every unmasked out-of-range access stays an
error; the back end's bounds proof lets a masked tail past the view's end through
(test_ktir_masked_backend.py compiles and checks them).

The kernels are Triton's Spyre-path shape: one 1024-element tile per core over n elements,
n not a multiple of 1024 (256 and 512 on one core; 2500 over three cores).
"""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import KTIR_TILE as TILE
from conftest import ktir_vector_add

from spyrec.cli import main
from spyrec.diagnostics import CompileError
from spyrec.dialects.ktdp_values import KtirAccessError
from spyrec.ktir import execute, run_kernel


def vector_add(n: int, grid: int = 1, tile_attr: str = ", ktdp.masked", kernel_attr: str = "",
               out_n: int | None = None) -> str:
    """The vector add with every access tile masked unless `tile_attr` says otherwise."""
    return ktir_vector_add(n, grid, out_n=out_n, tile_attr=tile_attr, kernel_attr=kernel_attr)


def inputs(n: int, out_n: int | None = None) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(n)
    return {"x": rng.standard_normal(n).astype(np.float32),
            "y": rng.standard_normal(n).astype(np.float32),
            "out": np.full(n if out_n is None else out_n, 7.0, dtype=np.float32)}


@pytest.mark.parametrize(("n", "grid"), [(256, 1), (512, 1), (2500, 3)])
def test_masked_tile_reads_and_writes_only_the_view(n: int, grid: int) -> None:
    args = inputs(n)
    run = run_kernel(vector_add(n, grid), "add", args)
    np.testing.assert_array_equal(run.outputs["out"], args["x"] + args["y"])
    # only the lanes in range move: 3 arrays of n f32 in whole 128-byte sticks
    assert sum(s.lpddr_bytes for s in run.stats) == 3 * -(-n * 4 // 128) * 128


def test_masked_load_reads_zero_and_masked_store_drops_lanes() -> None:
    """The 1024-lane output view takes every lane: the ones the masked loads dropped are
    0 + 0; with the output view n long as well, the lanes past n are never written."""
    args = inputs(256, out_n=TILE)
    masked_inputs = vector_add(256, tile_attr="", out_n=TILE).replace(
        "access_tile_order = affine_map<(d0) -> (d0)>} : memref<256xf32>",
        "access_tile_order = affine_map<(d0) -> (d0)>, ktdp.masked} : memref<256xf32>")
    out = run_kernel(masked_inputs, "add", args).outputs["out"]
    np.testing.assert_array_equal(out[:256], args["x"] + args["y"])
    np.testing.assert_array_equal(out[256:], np.zeros(TILE - 256, dtype=np.float32))


def test_unmasked_out_of_range_access_is_still_an_error() -> None:
    with pytest.raises(KtirAccessError, match=r"ktdp.load \(%a\): coordinate \(256\) is outside"):
        run_kernel(vector_add(256, tile_attr=""), "add", inputs(256))


def test_a_store_out_of_range_unmasked_is_an_error_and_writes_nothing() -> None:
    """Inputs masked, output not: the store is refused and the output keeps its values."""
    text = vector_add(256, tile_attr=", ktdp.masked").replace(
        "affine_map<(d0) -> (d0)>, ktdp.masked} : memref<256xf32> -> !ktdp.access_tile<1024xindex>"
        "\n  %a", "affine_map<(d0) -> (d0)>} : memref<256xf32> -> !ktdp.access_tile<1024xindex>"
        "\n  %a")
    args = inputs(256)
    with pytest.raises(KtirAccessError, match=r"ktdp.store %s, %outt: coordinate \(256\)"):
        run_kernel(text, "add", args)


def test_the_kernel_attribute_and_the_option_mask_every_tile() -> None:
    args = inputs(512)
    plain = vector_add(512, tile_attr="")
    expected = args["x"] + args["y"]
    np.testing.assert_array_equal(
        run_kernel(plain, "add", args, masked_tails=True).outputs["out"], expected)
    kernel = vector_add(512, tile_attr="", kernel_attr=", ktdp.masked_tails")
    np.testing.assert_array_equal(run_kernel(kernel, "add", args).outputs["out"], expected)


def test_execute_takes_and_returns_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    x, y = torch.randn(256), torch.randn(256)
    out = execute(vector_add(256), "add", x=x, y=y.numpy(), out=torch.zeros(256))
    assert isinstance(out["out"], torch.Tensor) and isinstance(out["y"], np.ndarray)
    assert torch.equal(out["out"], x + y)


def test_cli_masked_tails_flag(tmp_path) -> None:
    kernel = tmp_path / "add.mlir"
    kernel.write_text(vector_add(512, tile_attr=""))
    common = ["run", str(kernel), "--function", "add", "--arg", "x=rand:512xfloat32",
              "--arg", "y=rand:512xfloat32", "--arg", "out=rand:512xfloat32"]
    refused = CliRunner().invoke(main, common)
    assert refused.exit_code == 1 and "coordinate (512) is outside" in refused.output
    masked = CliRunner().invoke(main, [*common, "--masked-tails"])
    assert masked.exit_code == 0, masked.output


@pytest.mark.parametrize(("tile_attr", "kernel_attr"), [(", ktdp.masked", ""),
                                                       ("", ", ktdp.masked_tails")])
def test_bounds_proof_takes_a_masked_tail_past_the_view_end(tile_attr: str,
                                                            kernel_attr: str) -> None:
    """spyre-legalize-ktir's bounds proof (the first thing it does) takes the masked tile;
    the same tile unmasked is refused, with the mask as the fix to consider."""
    from xdsl.dialects.func import FuncOp

    from spyrec.dialects.ktdp_parse import parse_ktir
    from spyrec.passes.ktir.ktir_bounds import check_tile_bounds

    def kernel(tile: str, attr: str) -> FuncOp:
        module = parse_ktir(vector_add(256, tile_attr=tile, kernel_attr=attr))
        (fn,) = [op for op in module.walk() if isinstance(op, FuncOp)]
        return fn

    check_tile_bounds(kernel(tile_attr, kernel_attr))
    with pytest.raises(CompileError, match=r"mask the tile .ktdp.masked, or compile with "
                                           r"--masked-tails"):
        check_tile_bounds(kernel("", ""))
