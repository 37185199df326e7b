"""Index-dependent masks, tiles that move in several DMAs and row statistics carried by a
loop from splat inits, through the back end (design note 109): each kernel of
ktir/kernels/online_softmax.mlir compiles, matches the KTIR interpreter under
`spyrec.verdict`, an injected bug in the construct's lowering fails the same comparison, and
a mask the SFU cannot apply is refused with the core and the row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import spyrec
import spyrec.ktir
from spyrec.diagnostics import CompileError
from spyrec.passes.spyrecode import core_walk, index_mask
from spyrec.verdict import check_outputs

KERNELS = Path(__file__).parent / "ktir" / "kernels" / "online_softmax.mlir"
RNG = np.random.default_rng(109)


def _normal(dtype: type, *shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


CASES = {
    "head_runs": ({"x_ptr": _normal(np.float16, 4, 8, 128)}, {},
                  ("y_ptr", (4, 8, 128), np.float16)),
    "row_group_mask": ({"s_ptr": _normal(np.float32, 16, 64)}, {"ctx": 9},
                       ("o_ptr", (16, 64), np.float32)),
    "negated_mask": ({"s_ptr": _normal(np.float32, 16, 64)}, {"ctx": 9},
                     ("o_ptr", (16, 64), np.float32)),
    # scores far below 0: exp(s) without the running maximum underflows to 0
    "online_softmax": ({"s_ptr": 3 * _normal(np.float32, 8, 128) - 120,
                        "v_ptr": _normal(np.float16, 128, 128)}, {},
                       ("o_ptr", (8, 128), np.float32)),
}


def _check(function: str, **constants: int) -> bool:
    """Compile `function`, run it on the emulator (IEEE fp16) and compare with the
    interpreter's result."""
    inputs, bound, (out, shape, dtype) = CASES[function]
    bound = {**bound, **constants}
    exe = spyrec.compile(KERNELS, function=function, constants=bound or None,
                         numerics="ieee", cache=False)
    got = exe(*(torch.from_numpy(x) for x in inputs.values()))
    want = spyrec.ktir.execute(KERNELS, function, **{out: np.zeros(shape, dtype)}, **inputs,
                               **bound)[out]
    return check_outputs([torch.from_numpy(np.asarray(want))], got, exe).ok


@pytest.mark.parametrize("function", sorted(CASES))
def test_construct_matches_the_interpreter(function):
    assert _check(function)


@pytest.mark.parametrize("ctx", [0, 40, 100])
def test_the_mask_matches_at_other_limits(ctx):
    """No row masked (100: every limit past the 64 columns), all but the first column of
    the first row (0), and limits inside the second key tile (40)."""
    assert _check("row_group_mask", ctx=ctx)


def test_the_mask_one_column_off_fails_the_check(monkeypatch):
    """A limit one column too far (the comparison taken as `<` for `<=`) is caught."""
    runs = index_mask.runs
    monkeypatch.setattr(index_mask, "runs", lambda *a: [(r, n, d + 1) for r, n, d in runs(*a)])
    assert not _check("row_group_mask")


def test_the_runs_into_one_place_fail_the_check(monkeypatch):
    """Both DMAs of a two-run tile written to its first LX rows is caught."""
    geometry = core_walk._dma_geometry

    def first_rows(*args, **kwargs):
        rows, row_bytes, pitch, runs = geometry(*args, **kwargs)
        return rows, row_bytes, pitch, [(ddr, 0) for ddr, _ in runs]

    monkeypatch.setattr(core_walk, "_dma_geometry", first_rows)
    assert not _check("head_runs")


def test_a_fill_taken_for_zero_fails_the_check(monkeypatch):
    """The running maximum's -inf init read as a zero (what every fill was before note
    109: max(x, 0) for max(x, -inf); on scores near -120, exp(s - 0) underflows) is
    caught."""
    fill = core_walk._fill

    def as_zero(it, op):
        fill(it, op)
        lx = it.env[op.results[0]]
        lx.zero, lx.fill = True, None

    monkeypatch.setitem(core_walk.HANDLERS_BY_NAME, "linalg.fill", as_zero)
    assert not _check("online_softmax")


def test_a_mask_keeping_a_suffix_is_refused():
    with pytest.raises(CompileError, match=r"core \(0, 0\): linalg.generic: its mask keeps "
                       r"columns 9\.\.31 of row 0, not a prefix of the row"):
        spyrec.compile(KERNELS, function="suffix_mask", constants={"ctx": 9}, cache=False)


def _edited(path: Path, *edits: tuple[str, str]) -> Path:
    """The kernels with each (old, new) edit applied once, written to `path`."""
    text = KERNELS.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    path.write_text(text)
    return path


def test_a_mask_of_an_input_element_is_refused(tmp_path):
    """A condition that reads the tile's element (a data-dependent mask) is not an index
    mask; it is refused by name."""
    path = _edited(tmp_path / "data_mask.mlir",
                   ("%keep = arith.cmpi ule, %pos, %lim : index",
                    ("%vi = arith.fptosi %v : f32 to i64\n"
                    "        %keep = arith.cmpi ule, %pos, %lim : index")),
                   ("%res = arith.select %keep, %v, %ninf : f32",
                    ("%keep2 = arith.cmpi slt, %vi, %vi : i64\n"
                    "        %res = arith.select %keep2, %v, %ninf : f32")))
    with pytest.raises(CompileError, match=r"linalg.generic \(%m\): the value it keeps|"
                       r"its body holds arith.fptosi"):
        spyrec.compile(path, function="row_group_mask", constants={"ctx": 9}, cache=False)


def test_a_mask_dividing_by_zero_is_refused_naming_the_rows(tmp_path):
    """The condition divides by a scalar bound to 0: undefined in MLIR, refused with the
    core and the rows, never a mask of some value."""
    path = _edited(tmp_path / "zero_divisor.mlir",
                   ("%r4 = arith.divui %r, %c4 : index", "%r4 = arith.divui %r, %ctx : index"))
    with pytest.raises(CompileError, match=r"core \(0, 0\): linalg.generic: arith.divui by "
                       r"zero in its mask \(rows 0 to 7\)"):
        spyrec.compile(path, function="row_group_mask", constants={"ctx": 0}, cache=False)
