"""Written-out max / min reductions and stored broadcasts through the back end (design note
94): each kernel of ktir/kernels/stored_broadcasts.mlir compiles, matches the KTIR
interpreter under `spyrec.verdict` (NaN and infinities included), and an injected bug in the
construct's lowering fails the same comparison."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import spyrec
import spyrec.ktir
from spyrec.diagnostics import CompileError
from spyrec.passes.ktir import spyre_legalize_ktir
from spyrec.passes.spyrecode import sfu_fill
from spyrec.verdict import check_outputs

KERNELS = Path(__file__).parent / "ktir" / "kernels" / "stored_broadcasts.mlir"
RNG = np.random.default_rng(94)


def _half(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float16)


def _with_nan() -> np.ndarray:
    """Rows of a max: row 3 all NaN (the max of nothing: the init, -inf), row 5 NaN in its
    first and last columns, row 9 NaN beside the row's largest value, row 12 +inf."""
    x = _half(16, 64)
    x[3] = np.nan
    x[5, [0, 63]] = np.nan
    x[9, 10] = np.nan
    x[9, 11] = 8.0
    x[12, 40] = np.inf
    return x


CASES = {
    "row_max_select": ({"x_ptr": _with_nan()}, ("y_ptr", (16, 64))),
    "row_sum_splat": ({"x_ptr": _half(1, 64)}, ("y_ptr", (1, 64))),
    "scalar_fill": ({"x_ptr": _half(1, 1)}, ("y_ptr", (32, 64))),
    "row_fill": ({"x_ptr": _half(64)}, ("y_ptr", (16, 64))),
    "row_minus_tile": ({"r_ptr": _half(64), "x_ptr": _half(16, 64)}, ("y_ptr", (16, 64))),
    "row_over_tile": ({"r_ptr": _half(64), "x_ptr": _half(16, 64) + np.float16(4)},
                      ("y_ptr", (16, 64))),
}


def _check(function: str, path: Path = KERNELS) -> bool:
    """Compile `function`, run it on the emulator (IEEE fp16) and compare with the
    interpreter's result."""
    inputs, (out, shape) = CASES[function]
    exe = spyrec.compile(path, function=function, numerics="ieee", cache=False)
    got = exe(*(torch.from_numpy(x) for x in inputs.values()))
    want = spyrec.ktir.execute(path, function, **{out: np.zeros(shape, np.float16)},
                               **inputs)[out]
    return check_outputs([torch.from_numpy(np.asarray(want))], got, exe).ok


def _edited(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    """The kernels with each (old, new) replacement made, in a file of `tmp_path`."""
    text = KERNELS.read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "k.mlir"
    path.write_text(text)
    return path


@pytest.mark.parametrize("function", sorted(CASES))
def test_construct_matches_the_interpreter(function):
    assert _check(function)


def test_the_max_skips_nan_as_the_interpreter_folds():
    """The interpreter's own result: NaN elements skipped, an all-NaN row gives the init."""
    x = CASES["row_max_select"][0]["x_ptr"]
    y = spyrec.ktir.execute(KERNELS, "row_max_select", x_ptr=x,
                            y_ptr=np.zeros((16, 64), np.float16))["y_ptr"]
    assert np.all(y[3] == -np.inf) and y[9, 0] == 8.0 and y[12, 0] == np.inf
    assert not np.isnan(y).any()


@pytest.mark.parametrize(("cmp", "select"), [
    ("arith.cmpf oge, %in, %acc", "arith.select %gt, %in, %acc"),
    ("arith.cmpf olt, %acc, %in", "arith.select %gt, %in, %acc"),  # mirrored: in > acc
    ("arith.cmpf ole, %acc, %in", "arith.select %gt, %in, %acc"),
    ("arith.cmpf olt, %in, %acc", "arith.select %gt, %in, %acc"),  # a min
])
def test_every_ordered_spelling_matches(tmp_path, cmp, select):
    lowest = "0x7C00" if "olt, %in" in cmp else "0xFC00"  # a min starts from +inf
    path = _edited(tmp_path, ("arith.cmpf ogt, %in, %acc", cmp), ("0xFC00", lowest))
    assert _check("row_max_select", path)


@pytest.mark.parametrize(("old", "new"), [
    ("arith.cmpf ogt, %in, %acc", "arith.cmpf ugt, %in, %acc"),  # NaN taken, then dropped
    ("arith.select %gt, %in, %acc", "arith.select %gt, %acc, %in"),  # keeps acc when greater
    ("%m = arith.select %gt, %in, %acc : f16", ("%m0 = arith.select %gt, %in, %acc : f16\n"
                                                "        %m = arith.addf %m0, %acc : f16")),
])
def test_another_combiner_is_refused_with_the_rewrite(tmp_path, old, new):
    with pytest.raises(CompileError, match=r"linalg.reduce \(%max\): its combiner is not one "
                       r"of .* arith.cmpf ogt\|oge\|olt\|ole, %in, %acc.* write "
                       r"arith.maxnumf / minnumf %in, %acc to skip NaN elements"):
        spyrec.compile(_edited(tmp_path, (old, new)), function="row_max_select", cache=False)


def test_a_max_taken_as_a_min_fails_the_check(monkeypatch):
    """Injected bug: ogt / select recognised as a min."""
    monkeypatch.setattr(spyre_legalize_ktir, "SELECTED",
                        {"select.max": "minimum", "select.min": "maximum"})
    assert not _check("row_max_select")


def test_a_max_that_propagates_nan_fails_the_check(monkeypatch):
    """Injected bug: NaN elements not replaced by the identity (the SFU's MAX propagates
    them, where the written-out max skips them)."""
    monkeypatch.setattr(spyre_legalize_ktir._Kernel, "nan_replaced",
                        lambda self, op, v, by, result_type, before: v)
    assert not _check("row_max_select")


@pytest.mark.parametrize("function", ["row_max_select", "scalar_fill", "row_fill"])
def test_a_fill_of_the_first_rows_only_fails_the_check(monkeypatch, function):
    """Injected bug: each corelet's part of the broadcast written at row 0, so the second
    half of the rows is never written."""
    original = sfu_fill.broadcast_copy

    def first_rows(it, src, out, half, row, count, halves):
        return original(it, src, out, half, 0, count, halves)

    monkeypatch.setattr(sfu_fill, "broadcast_copy", first_rows)
    assert not _check(function)


def test_a_collapse_of_several_elements_is_refused(tmp_path):
    old = "%s = tensor.collapse_shape %x [] : tensor<1x1xf16> into tensor<f16>"
    new = ("%x2 = tensor.empty() : tensor<1x2xf16>\n"
           "    %s = tensor.collapse_shape %x2 [] : tensor<1x2xf16> into tensor<f16>")
    path = _edited(tmp_path, (old, new))
    with pytest.raises(CompileError, match=r"tensor.collapse_shape \(%s\): it collapses %x2 "
                       r"\(tensor<1x2xf16>\) to rank 0; only a tensor of one element"):
        spyrec.compile(path, function="scalar_fill", cache=False)
