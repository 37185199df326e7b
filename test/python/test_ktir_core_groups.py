"""Core groups through the back end (design note 94): `arith.divui` / `remui` (and `divsi` /
`remsi`) of the tile id by a constant, in a store's condition and in the pointer arithmetic
of its view, fold per core; the kernel of ktir/kernels/core_groups.mlir matches the KTIR
interpreter and an injected bug in the folding fails the same comparison."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import spyrec
import spyrec.ktir
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
