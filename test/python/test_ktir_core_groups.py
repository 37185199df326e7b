"""Core groups and looped inter-tile sums through the back end (design note 94):
`arith.divui` / `remui` (and `divsi` / `remsi`) of the tile id by a constant, in a store's
condition and in the pointer arithmetic of its view, fold per core; a partial reduced in
every iteration of a loop is reduced as a copy (the sum overwrites its slot), and the named
`linalg.add` is `arith.addf`. The kernels of ktir/kernels/core_groups.mlir match the KTIR
interpreter and an injected bug in each fails the same comparison."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import spyrec
import spyrec.ktir
from spyrec.passes.ktir import spyre_legalize_ktir
from spyrec.passes.spyrecode import index_division
from spyrec.passes.spyrecode.index_division import divide
from spyrec.verdict import check_outputs

KERNELS = Path(__file__).parent / "ktir" / "kernels" / "core_groups.mlir"
X = np.random.default_rng(94).standard_normal((8, 64)).astype(np.float16)


def _check(path: Path = KERNELS) -> bool:
    exe = spyrec.compile(path, function="group_rows", numerics="ieee", cache=False)
    got = exe(torch.from_numpy(X))
    want = spyrec.ktir.execute(path, "group_rows", x_ptr=X,
                               y_ptr=np.zeros((2, 64), np.float16))["y_ptr"]
    assert np.array_equal(want, np.float16(2) * X[[0, 4]])
    return check_outputs([torch.from_numpy(np.asarray(want))], got, exe).ok


def test_core_groups_match_the_interpreter():
    assert _check()


def test_signed_divisions_match_the_interpreter(tmp_path):
    path = tmp_path / "k.mlir"
    path.write_text(KERNELS.read_text().replace("arith.remui", "arith.remsi")
                    .replace("arith.divui", "arith.divsi"))
    assert _check(path)


def test_a_group_read_as_its_lane_fails_the_check(monkeypatch):
    """Injected bug: the back end's divui computed as remui, so group 1's first core (4)
    stores at row 0, over group 0's row."""
    monkeypatch.setattr(index_division, "divide",
                        lambda name, a, b: divide(name.replace("div", "rem"), a, b))
    assert not _check()


@pytest.mark.parametrize(("name", "a", "b", "want"), [
    ("arith.divui", 7, 4, 1), ("arith.remui", 7, 4, 3), ("arith.divsi", -7, 4, -1),
    ("arith.remsi", -7, 4, -3), ("arith.divui", 7, 0, None), ("arith.remui", -7, 4, None),
])
def test_divisions_as_mlir_defines_them(name, a, b, want):
    assert divide(name, a, b) == want


def _check_looped(path: Path = KERNELS) -> bool:
    exe = spyrec.compile(path, function="looped_sum", numerics="ieee", cache=False)
    got = exe(torch.from_numpy(X[:2]))
    want = spyrec.ktir.execute(path, "looped_sum", x_ptr=X[:2],
                               y_ptr=np.zeros((1, 64), np.float16))["y_ptr"]
    return check_outputs([torch.from_numpy(np.asarray(want))], got, exe).ok


@pytest.mark.parametrize("named", ["linalg.add", "linalg.sub", "linalg.mul"])
def test_a_looped_sum_matches_the_interpreter(tmp_path, named):
    path = tmp_path / "k.mlir"
    path.write_text(KERNELS.read_text().replace("%next = linalg.add", f"%next = {named}"))
    assert _check_looped(path)


def test_a_partial_reduced_in_place_fails_the_check(monkeypatch):
    """Injected bug: the partial loaded before the loop reduced in its own slot (the
    lowering before note 94), so iteration k reduces the previous sum: 1 + 2 + 4 times the
    sum where the kernel says 3."""
    monkeypatch.setattr(spyre_legalize_ktir._Kernel, "reduced_copy",
                        lambda self, op, produce, partial: partial)
    assert not _check_looped()
