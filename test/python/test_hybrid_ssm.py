"""The ops of the hybrid-SSM mixers (Mamba-2, gated delta rule; design note 91) on the
emulator against eager: a causal depthwise conv1d over thousands of channels, whose signal
row does not fit a window kernel's LX, runs with a row per position ([N, L, 1, C], a K x 1
window); a small signal keeps the one-row form ([N, 1, L, C], 1 x K); a permute of a 3-D
weight (a stack of expert matrices read transposed by a bmm) folds into the stored
weight. The op matrix (`spyrec/opcases/`: `WIDE_SIGNAL_MODULES`,
`bmm_stacked_weight_transposed`) has them in every dtype, aligned and unaligned."""

from __future__ import annotations

import io
import re

import pytest
import torch
from conftest import assert_close, one

import spyrec
from spyrec.opcases.movement import _StackedWeights
from spyrec.opcases.signals import _CausalConv
from spyrec.passes.graph import conv
from spyrec.verdict import check_outputs


def _windows(model: torch.nn.Module, x: torch.Tensor) -> set[str]:
    """The kernel sizes of the `spyre.window_rows` ops op selection makes for `model`."""
    ir = io.StringIO()
    spyrec.compile(torch.export.export(model.eval(), (x,)), print_ir=ir,
                   stop_after="spyre-legalize")
    selected = ir.getvalue().split("IR after spyre-legalize")[1]
    return set(re.findall(r"spyre\.window_rows.*?kernel = array<i64: (\d+, \d+)>", selected))


def _wide(dtype: torch.dtype) -> tuple[torch.nn.Module, torch.Tensor]:
    """Mamba's causal depthwise conv over 2048 channels of 64 positions: 3 x 70 padded
    positions of 2048 channels do not fit LX twice in any dtype."""
    torch.manual_seed(0)
    return _CausalConv(2048).to(dtype), torch.randn(1, 2048, 64).to(dtype)


def test_a_wide_signal_runs_a_row_per_position_and_a_narrow_one_a_row():
    assert _windows(*_wide(torch.float16)) == {"4, 1", "1, 1"}  # taps, border image
    assert _windows(_CausalConv(64), torch.randn(1, 64, 24)) == {"1, 4", "1, 1"}


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
def test_wide_causal_conv_matches_eager_and_keeps_nan_in_its_channel(dtype):
    """The row-per-position form matches eager; a NaN at one position of channel c reaches
    channel c only, at the positions whose window holds it (the next three), as in eager."""
    model, x = _wide(dtype)
    x[0, 5, 10] = float("nan")
    exe = spyrec.compile(torch.export.export(model.eval(), (x,)))
    with torch.no_grad():
        out, expected = one(exe(x)), model(x)
    assert out.shape == expected.shape
    assert torch.equal(torch.isnan(out), torch.isnan(expected))
    assert int(torch.isnan(out).sum()) == 4
    assert_close(exe, expected, out)
    # the comparison catches an output one position late
    assert not check_outputs(expected.roll(1, -1), out, exe).ok


def test_the_check_catches_taps_in_the_wrong_order(monkeypatch):
    """A check that can fail: the K x 1 window's taps read in reverse order against the
    frontend's weight rows (the order this form must keep) fail the comparison."""
    taps = conv._all_taps
    monkeypatch.setattr(conv, "_all_taps",
                        lambda kernel: taps(kernel)[::-1] if kernel[1] == 1 else taps(kernel))
    model, x = _wide(torch.float32)
    exe = spyrec.compile(torch.export.export(model.eval(), (x,)), cache=False)
    with torch.no_grad():
        assert not check_outputs(model(x), one(exe(x)), exe).ok


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
def test_stacked_weights_permuted_fold_into_the_weight(dtype):
    """bmm(x, w.transpose(1, 2)) of an [E, I, H] parameter and a [T, E, I] parameter
    permuted to [E, T, I]: no device transpose, and the result matches eager."""
    torch.manual_seed(0)
    model, x = _StackedWeights(2, 37, 100, 45).to(dtype), torch.randn(2, 37, 100).to(dtype)
    ir = io.StringIO()
    exe = spyrec.compile(torch.export.export(model.eval(), (x,)), print_ir=ir)
    selected = ir.getvalue().split("IR after spyre-legalize")[1].split("IR after")[0]
    assert len(re.findall(r"spyre\.param .*permutation = array<i64: (0, 2, 1|1, 0, 2)>",
                          selected)) == 2
    with torch.no_grad():
        assert_close(exe, model(x), one(exe(x)))
