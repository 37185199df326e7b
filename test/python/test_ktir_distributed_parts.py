"""Distributed views of LPDDR tensors through the back end (design note 114): each part the
view of its own pointer argument, a tile over the parts one DMA per part it reaches, at its
place in the tile's LX rows; parts stacked by rows and side by side, and tiles narrower than
a stick through them (blocked with ktir_blocks). Kernels: ktir/kernels/distributed_parts.mlir."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import spyrec
import spyrec.ktir
from spyrec.diagnostics import CompileError
from spyrec.passes.spyrecode import core_walk
from spyrec.verdict import check_outputs

KERNELS = Path(__file__).parent / "ktir" / "kernels" / "distributed_parts.mlir"
RNG = np.random.default_rng(13)


def _half(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float16)


CASES = {
    "stacked_rows": ({"k0": _half(48, 64), "k1": _half(80, 64)},
                     {"y0": (48, 64), "y1": (80, 64)}),
    "narrow_parts": ({"p0": _half(24, 32), "p1": _half(40, 32)}, {"y": (64, 32)}),
    "side_by_side": ({"a": _half(32, 64), "b": _half(32, 64)}, {"out": (32,)}),
    "joined_columns": ({"a": _half(16, 16), "b": _half(16, 16)}, {"y": (16, 32)}),
}


def _run(function: str) -> tuple[spyrec.Executable, dict[str, np.ndarray], dict[str, np.ndarray]]:
    inputs, outputs = CASES[function]
    exe = spyrec.compile(KERNELS, function=function, numerics="ieee", cache=False)
    got = exe(*(torch.from_numpy(x) for x in inputs.values()))
    got = [got] if isinstance(got, torch.Tensor) else list(got)
    dtype = {"out": np.float32}
    want = spyrec.ktir.execute(KERNELS, function, **inputs, **{
        name: np.zeros(shape, dtype.get(name, np.float16)) for name, shape in outputs.items()})
    names = [b.name for b in exe.binary.outputs]
    return exe, dict(zip(names, (g.numpy() for g in got))), {n: want[n] for n in names}


@pytest.mark.parametrize("function", ["stacked_rows", "narrow_parts", "joined_columns"])
def test_a_doubling_through_parts_is_exact(function):
    """x + x is exact in IEEE f16: every element of every part, including the tiles that
    straddle two parts, lands where the interpreter puts it."""
    _, got, want = _run(function)
    for name in want:
        assert np.any(want[name] != 0)
        assert np.array_equal(got[name], want[name]), name


def test_parts_side_by_side_match_the_interpreter():
    exe, got, want = _run("side_by_side")
    assert check_outputs([torch.from_numpy(want["out"])], [torch.from_numpy(got["out"])],
                         exe).ok


def test_pieces_placed_at_the_tile_start_fail(monkeypatch):
    """Every piece written to the first rows of the LX tile (its offset dropped): the
    straddling tiles come out wrong, and the comparison says so."""
    pieces = core_walk._pieces

    def at_start(it, op, tile, itemsize, lx_pitch):
        return [(piece, 0, pitch) for piece, _, pitch in pieces(it, op, tile, itemsize,
                                                                lx_pitch)]

    monkeypatch.setattr(core_walk, "_pieces", at_start)
    _, got, want = _run("stacked_rows")
    assert not all(np.array_equal(got[n], want[n]) for n in want)


def test_a_part_inside_a_stick_of_the_tile_is_refused():
    with pytest.raises(CompileError, match=r"@half_stick_parts, core \(0, 0\): ktdp.load: tile "
                       r"\[8, 64\] at \[0, 0\] meets a part of its distributed view at column "
                       r"32, 64 B into a stick of its LX rows"):
        spyrec.compile(KERNELS, function="half_stick_parts", cache=False)


def test_a_part_loaded_and_stored_is_refused(tmp_path):
    text = KERNELS.read_text().replace(
        "%yt = ktdp.construct_access_tile %y[%row, 0]",
        "%yt = ktdp.construct_access_tile %k[%row, 0]")
    source = tmp_path / "in_place.mlir"
    source.write_text(text)
    with pytest.raises(CompileError, match=r"argument %k0 is a part of a distributed view "
                       r"that the kernel both loads and stores"):
        spyrec.compile(source, function="stacked_rows", cache=False)


def test_a_store_into_part_of_a_parts_stick_is_refused():
    """The piece of a store in a part is counted from the part's own first column: b's
    columns 0..31 of 64 are half its stick, so the whole-stick DMA would overwrite b's
    other 32 columns (measured from the view's column 64, the check passed it)."""
    with pytest.raises(CompileError, match=r"@part_of_a_stick, core \(0, 0\): ktdp.store: a "
                       r"store of 32 columns at column 64 would overwrite the rest of its "
                       r"stick"):
        spyrec.compile(KERNELS, function="part_of_a_stick", cache=False)


def test_joined_columns_are_blocked_alike(monkeypatch):
    """The copy's parts and destination are stored in blocks of 16 columns; each part's
    rows go to every other LX row. Written at the tile's own row pitch instead (the blocks'
    interleaving ignored), the copy comes out wrong and the comparison says so."""
    exe, _, _ = _run("joined_columns")
    assert [b.layout.block for b in (*exe.binary.inputs, *exe.binary.outputs)] == [16] * 3
    pieces = core_walk._pieces

    def tile_pitch(it, op, tile, itemsize, lx_pitch):
        return [(piece, offset, lx_pitch) for piece, offset, _ in pieces(
            it, op, tile, itemsize, lx_pitch)]

    monkeypatch.setattr(core_walk, "_pieces", tile_pitch)
    _, got, want = _run("joined_columns")
    assert not np.array_equal(got["y"], want["y"])

