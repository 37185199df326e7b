"""Compute constructs of public KTIR kernels through the back end (design note 82): each
kernel of ktir/kernels/constructs.mlir compiles, matches the KTIR interpreter under the
tolerance model of `spyrec.verdict` on the device's DL16, and an injected bug in the
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
from spyrec.passes.spyrecode import core_walk
from spyrec.runtime.memory import DeviceFault
from spyrec.verdict import check_outputs

KERNELS = Path(__file__).parent / "ktir" / "kernels" / "constructs.mlir"
RNG = np.random.default_rng(7)


def _half(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float16)


CASES = {
    # Triton's matmul: `acc + dot` over a loop-carried f16 zero constant, K in 4 steps
    "matmul_acc16": ({"a_ptr": _half(16, 256, scale=0.25), "b_ptr": _half(256, 128)},
                     ("c_ptr", (16, 128)),
                     {"K": 256, "BM": 8, "BN": 64, "BK": 64}),
    # 40-column f16 rows (80 B) in padded sticks, over a 1-D grid [2]
    "narrow_rows": ({"x_ptr": _half(16, 40), "y_ptr": _half(16, 40)}, ("z_ptr", (16, 40)), {}),
    # linalg.transpose of K as the matmul's B: Q K^T
    "scores_kt": ({"q_ptr": _half(16, 64, scale=0.25), "k_ptr": _half(64, 64)},
                  ("s_ptr", (16, 64)), {}),
    # an inter-tile sum whose combiner is linalg.add
    "sum_named_add": ({"x_ptr": _half(2, 64)}, ("y_ptr", (1, 64)), {}),
}


def _check(function: str) -> bool:
    """Compile `function`, run it on the emulator and compare with the interpreter."""
    inputs, (out, shape), constants = CASES[function]
    exe = spyrec.compile(KERNELS, function=function, constants=constants, cache=False)
    got = exe(*(torch.from_numpy(x) for x in inputs.values()))
    want = spyrec.ktir.execute(KERNELS, function, **constants, **inputs,
                               **{out: np.zeros(shape, np.float16)})[out]
    assert np.any(want != 0)
    return check_outputs([torch.from_numpy(np.asarray(want))], got, exe).ok


@pytest.mark.parametrize("function", sorted(CASES))
def test_construct_matches_the_interpreter(function):
    assert _check(function)


def test_a_nonzero_first_accumulator_fails_the_check(monkeypatch):
    """Injected bug: the first iteration's zero fill read as 1 (the immediate the scheduler
    gives `acc + dot`): every output is off by 1 and the check must fail."""
    right = core_walk.f32_bits
    monkeypatch.setattr(core_walk, "f32_bits", lambda v: right(1.0 if v == 0.0 else v))
    assert not _check("matmul_acc16")


def test_a_transpose_read_as_stored_fails_the_check(monkeypatch):
    """Injected bug: the matmul reads the transposed K as stored (Q K, not Q K^T)."""
    legal = spyre_legalize_ktir._Kernel
    right = legal.matmul

    def wrong(self, op, a, b, init):
        return right(self, op, a, self.transposed.pop(b, b), init)

    monkeypatch.setattr(legal, "matmul", wrong)
    assert not _check("scores_kt")


def test_rows_at_another_pitch_fail_the_check(monkeypatch):
    """Injected bug: rows padded to 256-byte units, not the device's 128-byte sticks: core 0
    reads and writes the wrong rows, and core 1's store runs past the output, which the
    emulator faults on (never a silent result)."""
    monkeypatch.setattr(spyre_legalize_ktir, "STICK_BYTES", 256)
    with pytest.raises(DeviceFault, match="not inside any allocation"):
        _check("narrow_rows")


def test_a_transpose_used_elsewhere_is_refused(tmp_path):
    """A transpose is folded into a matmul's B only; added to a tile it is refused, named."""
    text = KERNELS.read_text().replace(
        "%se = tensor.empty() : tensor<16x64xf16>",
        "%bad = arith.addf %k_t, %k : tensor<64x64xf16>\n"
        "    %se = tensor.empty() : tensor<16x64xf16>")
    path = tmp_path / "k.mlir"
    path.write_text(text)
    with pytest.raises(CompileError, match=r"linalg.transpose \(%k_t\): its value is used by "
                       r"linalg.generic; the compiler takes a 2-D transpose only as a "
                       r"matmul's B operand"):
        spyrec.compile(path, function="scores_kt", cache=False)
