"""Masked tails through the back end (docs/ktir.md §7, design note 88): a masked tile that
runs past its view's end compiles; the binary moves only the lanes inside the view, reads
0 in the others and writes none of them, and matches the interpreter; unmasked tails, a
masked tile starting before its view and unmasked run-time sizes stay refused.

Kernels: Triton's Spyre-path vector add, one 1024-lane f32 tile per core over n elements.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from conftest import KTIR_TILE as TILE
from conftest import ktir_vector_add as vector_add

import spyrec
from spyrec.cli import main
from spyrec.diagnostics import CompileError
from spyrec.frontend.ktir_runtime_args import RuntimeArg
from spyrec.ktir import run_kernel
from spyrec.passes.spyrecode import masked_tiles
from spyrec.runtime.emulator import Emulator
from spyrec.runtime.memory import DeviceFault
from spyrec.verdict import check_outputs


def kernel_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "add.mlir"
    path.write_text(text)
    return path


def interpreted(path: Path, n: int, out_n: int, x: np.ndarray, y: np.ndarray,
                **scalars: int) -> np.ndarray:
    """The interpreter's output, masked, from a zero output array (the host's)."""
    run = run_kernel(path, "add", {"x": x, "y": y, "out": np.zeros(out_n, np.float32),
                                   **scalars}, masked_tails=True)
    return np.asarray(run.outputs["out"])


def added(exe: Any, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The binary's output for inputs x and y."""
    out = exe(torch.from_numpy(x), torch.from_numpy(y))
    assert isinstance(out, torch.Tensor)
    return out.numpy()


def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n)
    return (rng.standard_normal(n).astype(np.float32),
            rng.standard_normal(n).astype(np.float32))


@pytest.mark.parametrize(("n", "grid"), [(256, 1), (512, 1), (1000, 1), (1024, 1), (2500, 3)])
def test_masked_tail_compiles_and_matches_the_interpreter(tmp_path, n: int, grid: int) -> None:
    path = kernel_file(tmp_path, vector_add(n, grid))
    exe = spyrec.compile(path, function="add", masked_tails=True, cache=False, numerics="ieee")
    x, y = draw(n)
    got = added(exe, x, y)
    want = interpreted(path, n, n, x, y)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, x + y)  # f32 adds are exact on both
    # only the view's sticks move: 3 tensors of n f32, each rounded up to 128-byte sticks
    assert exe.last_profile.offchip_bytes == 3 * -(-n * 4 // 128) * 128


def on_stale_lx(exe: Any, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Run `exe` with every LX byte 0xFF first (f32 NaN: what a previous kernel may have
    left there; the emulator's LX otherwise starts at zero)."""
    emulator = exe._emulator = Emulator(exe.binary, numerics=exe.numerics)
    assert emulator._lx_all is not None
    emulator._lx_all[:] = 0xFF
    return added(exe, x, y)


def test_lanes_past_the_view_read_zero(tmp_path) -> None:
    """x and y have 256 elements, the output 1024: lanes 256.. add the zeros a masked load
    reads, +0.0 as in the interpreter, whatever LX held."""
    path = kernel_file(tmp_path, vector_add(256, out_n=TILE))
    x, y = draw(256)
    want = interpreted(path, 256, TILE, x, y)
    exe = spyrec.compile(path, function="add", masked_tails=True, cache=False, numerics="ieee")
    got = on_stale_lx(exe, x, y)
    np.testing.assert_array_equal(got, want)
    assert not np.signbit(got[256:]).any()


def test_check_catches_an_injected_missing_zero_fill(tmp_path, monkeypatch) -> None:
    path = kernel_file(tmp_path, vector_add(256, out_n=TILE))
    x, y = draw(256)
    monkeypatch.setattr(masked_tiles, "zero_rest", lambda *args: None)
    exe = spyrec.compile(path, function="add", masked_tails=True, cache=False, numerics="ieee")
    verdict = check_outputs([torch.from_numpy(interpreted(path, 256, TILE, x, y))],
                            [torch.from_numpy(on_stale_lx(exe, x, y))], exe)
    assert not verdict.ok


def test_an_injected_write_past_the_view_faults(tmp_path, monkeypatch) -> None:
    """A store that moved one stick more than the view holds runs past the output's
    allocation: the emulator faults, it never returns a result."""
    path = kernel_file(tmp_path, vector_add(256))
    real = masked_tiles.inside

    def one_stick_more(it, op, tile):
        found = real(it, op, tile)
        if found is None or op.name != "ktdp.store":
            return found
        return found[0], found[1] + 32  # 32 f32: one more stick

    monkeypatch.setattr(masked_tiles, "inside", one_stick_more)
    exe = spyrec.compile(path, function="add", masked_tails=True, cache=False)
    x, y = draw(256)
    with pytest.raises(DeviceFault):
        added(exe, x, y)


def test_run_check_interprets_masked(tmp_path) -> None:
    path = kernel_file(tmp_path, vector_add(1000))
    binary = tmp_path / "add.spyre"
    done = CliRunner().invoke(main, ["compile", str(path), "--masked-tails", "--no-cache",
                                     "-o", str(binary)])
    assert done.exit_code == 0, done.output
    checked = CliRunner().invoke(main, ["run", str(binary), "--check", str(path)])
    assert checked.exit_code == 0, checked.output
    assert "masked tails: every access tile masked" in checked.output
    assert "out: ok" in checked.output


def test_unmasked_tail_is_refused_with_the_mask_as_the_fix(tmp_path) -> None:
    path = kernel_file(tmp_path, vector_add(256))
    with pytest.raises(CompileError, match=r"outside view .* compile with --masked-tails"):
        spyrec.compile(path, function="add", cache=False)


def test_masked_tile_starting_before_its_view_is_refused(tmp_path) -> None:
    path = kernel_file(tmp_path, vector_add(256, shift=-32))
    with pytest.raises(CompileError, match=r"dim 0 starts at -32.*the tile is masked, and the "
                                           r"back end compiles masked tails past the end"):
        spyrec.compile(path, function="add", masked_tails=True, cache=False)


def test_run_time_size_pads_and_crops_per_call(tmp_path) -> None:
    """`--arg n=1..1024`: the views' size at run time, compiled at 1024 (`?` takes the
    upper bound from tiles at constant subscripts, which these are not)."""
    path = kernel_file(tmp_path, vector_add(0, sized=True))
    with pytest.raises(CompileError, match="give the range it may take"):
        spyrec.compile(path, function="add", masked_tails=True, constants={"n": RuntimeArg()},
                       cache=False)
    exe = spyrec.compile(path, function="add", masked_tails=True,
                         constants={"n": RuntimeArg(1, TILE)}, cache=False, numerics="ieee")
    assert exe.binary.symbols == {"n": (1, TILE)}
    for n in (256, 1000):
        x, y = draw(n)
        got = added(exe, x, y)
        np.testing.assert_array_equal(got, x + y)
    with pytest.raises(CompileError, match="accesses it unmasked"):
        spyrec.compile(path, function="add", constants={"n": RuntimeArg(1, TILE)}, cache=False)


ROWS = """
#tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 99 >= 0, d1 >= 0, -d1 + 99 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @double(%a: index, %c: index) attributes {grid = [2, 1], ktdp.masked_tails} {
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %pid = ktdp.get_compute_tile_id : index
  %row = arith.muli %pid, %c64 : index
  %va = ktdp.construct_memory_view %a, sizes: [100, 100], strides: [100, 1] {
    coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<100x100xf16>
  %vc = ktdp.construct_memory_view %c, sizes: [100, 100], strides: [100, 1] {
    coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<100x100xf16>
  %ta = ktdp.construct_access_tile %va[%row, %c0] {access_tile_set = #tile,
    access_tile_order = #id} : memref<100x100xf16> -> !ktdp.access_tile<64x128xindex>
  %tc = ktdp.construct_access_tile %vc[%row, %c0] {access_tile_set = #tile,
    access_tile_order = #id} : memref<100x100xf16> -> !ktdp.access_tile<64x128xindex>
  %x = ktdp.load %ta : !ktdp.access_tile<64x128xindex> -> tensor<64x128xf16>
  %s = arith.addf %x, %x : tensor<64x128xf16>
  ktdp.store %s, %tc : tensor<64x128xf16>, !ktdp.access_tile<64x128xindex>
  return
}
"""


def test_masked_row_and_column_tail_of_a_2d_tile(tmp_path) -> None:
    """64x128 f16 tiles over a 100x100 view on two cores (the kernel attribute): core 1
    moves 36 rows and zero-fills 28; the columns past 100 are the rows' stick padding."""
    path = kernel_file(tmp_path, ROWS)
    exe = spyrec.compile(path, function="double", cache=False, numerics="ieee")
    a = np.random.default_rng(0).standard_normal((100, 100)).astype(np.float16)
    got = exe(torch.from_numpy(a))
    assert isinstance(got, torch.Tensor)
    want = run_kernel(path, "double", {"a": a, "c": np.zeros((100, 100), np.float16)}).outputs
    np.testing.assert_array_equal(got.numpy(), np.asarray(want["c"]))
