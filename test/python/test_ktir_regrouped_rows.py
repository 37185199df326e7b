"""Reshapes of a tile's leading dims, a cast of a transposed tile and float constants spelled
as bits through the back end (design note 108): each kernel of
ktir/kernels/regrouped_rows.mlir compiles, matches the KTIR interpreter under
`spyrec.verdict`, an injected bug in the construct's lowering fails the same comparison, and
a reshape the back end does not take is refused by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import spyrec
import spyrec.ktir
from spyrec.diagnostics import CompileError
from spyrec.passes.ktir import spyre_legalize_ktir
from spyrec.passes.spyrecode import core_walk
from spyrec.verdict import check_outputs

KERNELS = Path(__file__).parent / "ktir" / "kernels" / "regrouped_rows.mlir"
RNG = np.random.default_rng(108)


def _normal(dtype: type, *shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


CASES = {
    "heads_rows": ({"x_ptr": _normal(np.float16, 2, 4, 128)}, ("y_ptr", (2, 4, 128), np.float16)),
    "keys_transposed": ({"q_ptr": _normal(np.float16, 8, 128),
                         "k_ptr": _normal(np.float16, 1, 16, 1, 128)},
                        ("s_ptr", (8, 16), np.float32)),
    "keys_order_transposed": ({"q_ptr": _normal(np.float16, 8, 128),
                               "k_ptr": _normal(np.float16, 1, 16, 128)},
                              ("s_ptr", (8, 16), np.float32)),
    "bitcast_bound": ({"x_ptr": _normal(np.float32, 16, 32)}, ("y_ptr", (16, 32), np.float32)),
}


def _check(function: str, path: Path = KERNELS) -> bool:
    """Compile `function`, run it on the emulator (IEEE fp16) and compare with the
    interpreter's result."""
    inputs, (out, shape, dtype) = CASES[function]
    exe = spyrec.compile(path, function=function, numerics="ieee", cache=False)
    got = exe(*(torch.from_numpy(x) for x in inputs.values()))
    want = spyrec.ktir.execute(path, function, **{out: np.zeros(shape, dtype)}, **inputs)[out]
    return check_outputs([torch.from_numpy(np.asarray(want))], got, exe).ok


@pytest.mark.parametrize("function", sorted(CASES))
def test_construct_matches_the_interpreter(function):
    assert _check(function)


def test_the_transposing_order_taken_as_identity_fails_the_check(monkeypatch):
    """The key block loaded through (d0, d2, d1) read as if stored transposed (B for B^T:
    pt.matmul for pt.matmul_nt) is caught."""
    static = core_walk._tile_static

    def untransposed(it, op):
        found = static(it, op)
        return (*found[:5], False, *found[6:])

    monkeypatch.setattr(core_walk, "_tile_static", untransposed)
    assert not _check("keys_order_transposed")


def test_a_regrouping_read_a_row_off_fails_the_check(monkeypatch):
    """The collapse read one row further into its slot (a wrong alias) is caught."""
    def shifted(it, op):
        src = it.env[op.operands[0]]
        it.env[op.results[0]] = core_walk.LxTensor(src.addr + src.pitch, src.shape, src.dtype)

    monkeypatch.setitem(core_walk.HANDLERS_BY_NAME, "tensor.collapse_shape", shifted)
    assert not _check("heads_rows")


def test_the_bits_decoded_wrong_fail_the_check(monkeypatch):
    """-inf's bits read as +inf (a lower bound that is an upper one) is caught."""
    monkeypatch.setattr(spyre_legalize_ktir, "bits_f32", lambda bits: float("inf"))
    assert not _check("bitcast_bound")


def test_the_cast_before_the_transpose_is_needed(monkeypatch):
    """Without the rewrite, the transposed key block read by a cast is refused by name."""
    monkeypatch.setattr(spyre_legalize_ktir._Kernel, "cast_before_transpose",
                        lambda self, op: self.replace(op, [self.scalar_op(
                            op, op.name, [self.operand(op.operands[0], op, 2)],
                            op.results[0].type, op)]))
    with pytest.raises(CompileError, match=r"linalg.transpose .* only as a matmul's B"):
        spyrec.compile(KERNELS, function="keys_transposed", cache=False)


def test_a_reshape_of_the_last_dim_is_refused(tmp_path):
    """[2, 4, 128] -> [2, 512] merges the last dim: its rows are not the tile's rows."""
    text = KERNELS.read_text()
    edits = [("%x3 [[0, 1], [2]]", "%x3 [[0], [1, 2]]"), ("%y [[0, 1], [2]]", "%y [[0], [1, 2]]")]
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "k.mlir"
    heads, rest = text.split("func.func @keys_transposed")  # only @heads_rows's tiles
    path.write_text(heads.replace("tensor<8x128xf16>", "tensor<2x512xf16>")
                    + "func.func @keys_transposed" + rest)
    with pytest.raises(CompileError, match=r"tensor.collapse_shape \(%x\): it reshapes "
                       r".*only merges or splits the leading dims"):
        spyrec.compile(path, function="heads_rows", cache=False)
