"""The ops state-space models (Mamba's mixer) bring, on the emulator against eager (design
note 86): a convolution whose weight is shape ops of a parameter (`conv1d.weight.squeeze(1)`
unsqueezed back, permuted, sliced, cast) is a convolution with a constant weight, and a
select along the innermost dim (`x[..., i]`, the selective scan's per-step column) is an
exact column move, and slice assignment (`copy` + `slice_scatter`, the gated delta rule's
row updates) is moves only. The op matrix (`spyrec/opcases/`) has them in every dtype
and shape."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_close, one

import spyrec
from spyrec.diagnostics import CompileError
from spyrec.opcases.core import _Fn
from spyrec.opcases.movement import MOVES, _assigned
from spyrec.opcases.signals import _CausalConv, _ShapedWeightConv
from spyrec.verdict import check_outputs

DTYPES = [torch.float16, torch.float32]


def _run(model: torch.nn.Module, *inputs: torch.Tensor
         ) -> tuple[spyrec.Executable, torch.Tensor, torch.Tensor]:
    """The executable, its output on `inputs`, and eager's."""
    exe = spyrec.compile(torch.export.export(model.eval(), inputs))
    with torch.no_grad():
        return exe, one(exe(*inputs)), model(*inputs)


@pytest.mark.parametrize("make", [_CausalConv, _ShapedWeightConv], ids=["views", "permuted"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp16", "fp32"])
def test_conv_weight_from_shape_ops_matches_eager(make, dtype):
    torch.manual_seed(0)
    exe, out, expected = _run(make(8).to(dtype), torch.randn(2, 8, 21).to(dtype))
    assert out.shape == expected.shape
    assert_close(exe, expected, out)


def test_conv_weight_from_an_input_is_refused():
    """A weight that depends on a user input has no data at import: refused by name."""
    model = _Fn(lambda x, w: F.conv1d(x, w.unsqueeze(1), groups=8))
    ep = torch.export.export(model, (torch.randn(1, 8, 20), torch.randn(8, 4)))
    with pytest.raises(CompileError, match=r"convolution.*its weight is not a constant"):
        spyrec.compile(ep)


@pytest.mark.parametrize("dtype", DTYPES, ids=["fp16", "fp32"])
def test_select_innermost_is_exact(dtype):
    """x[..., i] moves values bit for bit, NaN and (fp32) infinities in the other columns
    of its rows included (they must not leak into the selected column). A 16-bit input
    holds no infinity and reaches the device as DL16 (docs/numerics.md), so fp16 is held
    to the verdict's bound, and the NaN to its place."""
    x = torch.randn(3, 5, 40).to(dtype)
    big = float("inf") if dtype == torch.float32 else float("nan")
    x[0, 1, 0], x[1, 2, 7], x[2, 4, 39] = float("nan"), big, -big
    x[2, 0, 6] = float("nan")  # in the selected column itself
    exe, out, expected = _run(_Fn(lambda t: t[..., 6]), x)
    assert out.shape == (3, 5)
    if dtype == torch.float32:
        assert torch.equal(out.nan_to_num(), expected.nan_to_num())
    assert_close(exe, expected, out)
    assert torch.isnan(out[2, 0]) and int(torch.isnan(out).sum()) == 1
    # the comparison the sweep uses catches a wrong column
    assert not check_outputs(x[..., 5], out, exe).ok


def test_select_innermost_of_a_vector_is_refused():
    """A 0-d result has no device form: refused with the way to keep a dim."""
    ep = torch.export.export(_Fn(lambda t: t[..., 3] * t), (torch.randn(40),))
    with pytest.raises(CompileError, match=r"select.*1-D tensor.*x\[\.\.\., i:i\+1\]"):
        spyrec.compile(ep)


@pytest.mark.parametrize("name", ["assign_columns_step3", "assign_rows", "assign_row_prefix"])
def test_slice_assignment_is_exact(name):
    """`y[...] = v` (copy + slice_scatter, and a select_scatter's `where`) moves x's kept
    values and v's placed ones bit for bit, NaN and infinities included, in fp32."""
    fn = MOVES[name]
    x = torch.randn(6, 40)
    x[0, 0], x[2, 3], x[4, 39], x[5, 1] = float("nan"), float("inf"), float("-inf"), float("nan")
    exe, out, expected = _run(_Fn(fn), x)
    assert torch.equal(out.nan_to_num(), expected.nan_to_num())
    assert torch.equal(torch.isnan(out), torch.isnan(expected))
    assert not check_outputs(x, out, exe).ok  # the unassigned x is caught as wrong


def test_strided_assignment_to_rows_is_refused():
    """A leading-dim slice assignment with a step is refused, naming the way that works."""
    ep = torch.export.export(_Fn(lambda x: _assigned(x, (slice(None, None, 2),), x[:3] * 2)),
                             (torch.randn(6, 40),))
    with pytest.raises(CompileError, match=r"slice_scatter.*with step 2"):
        spyrec.compile(ep)
