"""Convolutions and group norm beyond the 2-D image path (issue 20), on the emulator and
matched with eager by `spyrec.verdict.check_outputs`: 1-D convolutions on [N, C, L]
signals (channels-last as [N, L, C]), an audio encoder's token transposes that read the
channels-last rows as stored, device restickifies for images read in NCHW order, group
norm with its statistics in fp32, and transposed convolutions that upsample (the op
matrix, `spyrec/opcases/`, has the rest)."""

from __future__ import annotations

import io
import re

import pytest
import torch
from conftest import assert_close, one

import spyrec
from spyrec.passes.graph.legalize import normalization


def _compile(model: torch.nn.Module, *inputs: torch.Tensor) -> tuple[spyrec.Executable,
                                                                     torch.Tensor,
                                                                     torch.Tensor]:
    """The executable, its output on `inputs` and eager's."""
    model = model.eval()
    exe = spyrec.compile(torch.export.export(model, inputs))
    with torch.no_grad():
        return exe, one(exe(*inputs)), model(*inputs)


def _check(model: torch.nn.Module, *inputs: torch.Tensor) -> spyrec.Executable:
    exe, out, expected = _compile(model, *inputs)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    assert_close(exe, expected, out)
    return exe


class _FeatureEncoder(torch.nn.Module):
    """wav2vec2's feature encoder in small: stride-5 and stride-2 convolutions with GELU, a
    group norm over each channel on the first, and the channels as token features."""

    def __init__(self):
        super().__init__()
        self.c0 = torch.nn.Conv1d(1, 32, 10, stride=5, bias=False)
        self.norm = torch.nn.GroupNorm(32, 32)
        self.c1 = torch.nn.Conv1d(32, 32, 3, stride=2, bias=False)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.normal_(0, 0.2)

    def forward(self, x):
        y = torch.nn.functional.gelu(self.norm(self.c0(x)))
        return torch.nn.functional.gelu(self.c1(y)).transpose(1, 2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
def test_audio_feature_encoder_matches_eager(dtype):
    torch.manual_seed(0)
    exe = _check(_FeatureEncoder().to(dtype), torch.randn(2, 1, 203).to(dtype))
    (signal,) = exe.binary.inputs
    assert signal.layout.shape == (2, 1, 203) and signal.layout.perm == (0, 2, 1)
    assert exe.binary.outputs[0].layout.perm is None  # [N, L, C] tokens: the rows as stored


class _PositionalConv(torch.nn.Module):
    """wav2vec2's positional convolution: tokens into a grouped 1-D convolution with a
    weight-norm parametrization and even kernel, its last position dropped, GELU, back to
    tokens, added to the tokens."""

    def __init__(self):
        super().__init__()
        conv = torch.nn.Conv1d(32, 32, 8, padding=4, groups=4)
        self.conv = torch.nn.utils.parametrizations.weight_norm(conv, name="weight", dim=2)

    def forward(self, tokens):
        y = self.conv(tokens.transpose(1, 2))[:, :, :-1]
        return tokens + torch.nn.functional.gelu(y).transpose(1, 2)


def test_weight_normed_grouped_positional_convolution():
    torch.manual_seed(0)
    _check(_PositionalConv(), torch.randn(2, 12, 32))


class _TokensToImage(torch.nn.Module):
    """A vision transformer's tokens back into an image (`t.transpose(1, 2).view(N, C, H,
    W)`) for a 1x1 convolution: the tokens are the channels-last image's rows."""

    def __init__(self, reshape: bool):
        super().__init__()
        self.conv = torch.nn.Conv2d(64, 32, 1)
        self.reshape = reshape

    def forward(self, tokens):
        if self.reshape:
            return self.conv(tokens.transpose(1, 2).reshape(2, 64, 4, 6))
        return self.conv(tokens.reshape(2, 4, 6, 64).permute(0, 3, 1, 2))


@pytest.mark.parametrize("reshape", [True, False], ids=["transpose_view", "permute"])
def test_tokens_into_an_image_move_no_data(reshape):
    torch.manual_seed(0)
    exe = _check(_TokensToImage(reshape).half(), torch.randn(2, 24, 64).half())
    assert len(exe.binary.kernels) == 1  # the convolution's matmul alone


class _ReadsNchw(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 1)

    def forward(self, x):
        y = self.conv(x)
        # a reduction over W reads the image in NCHW order, and so does the transpose
        # that feeds the second convolution
        return y.sum(-1), self.conv2(y.transpose(2, 3) * 2)


def test_nchw_uses_of_channels_last_values_are_restickified():
    torch.manual_seed(0)
    model = _ReadsNchw().eval()
    x = torch.randn(1, 3, 8, 8)
    exe = spyrec.compile(torch.export.export(model, (x,)))
    with torch.no_grad():
        expected = model(x)
    assert_close(exe, expected, exe(x))


class _SeparableConv(torch.nn.Module):
    """ConvBERT's separable 1-D convolution: depthwise, pointwise, and a [C, 1] bias added
    by hand (a per-channel row on the device)."""

    def __init__(self):
        super().__init__()
        self.dw = torch.nn.Conv1d(16, 16, 5, padding=2, groups=16, bias=False)
        self.pw = torch.nn.Conv1d(16, 24, 1, bias=False)
        self.bias = torch.nn.Parameter(torch.randn(24, 1))

    def forward(self, tokens):
        return (self.pw(self.dw(tokens.transpose(1, 2))) + self.bias).transpose(1, 2)


def test_separable_convolution_with_a_column_bias():
    torch.manual_seed(0)
    _check(_SeparableConv().half(), torch.randn(2, 10, 16).half())


class _UpAndSkip(torch.nn.Module):
    """U-Net's decoder step: a stride-2 2x2 transposed convolution (an upsampling) whose
    output is concatenated with the skip image along the channels."""

    def __init__(self, out: int):
        super().__init__()
        self.down = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.up = torch.nn.ConvTranspose2d(16, out, 2, stride=2)
        self.fuse = torch.nn.Conv2d(out + 8, 8, 3, padding=1)

    def forward(self, x):
        return self.fuse(torch.cat([self.up(self.down(x)), x], dim=1))


@pytest.mark.parametrize("out", [8, 64], ids=["part_stick", "whole_sticks"])
def test_upsampling_transposed_convolution(out):
    torch.manual_seed(0)
    _check(_UpAndSkip(out).half(), torch.randn(1, 8, 8, 6).half())


class _PoolFormerBlock(torch.nn.Module):
    """PoolFormer's token mixer: average pooling that counts only the pixels inside the
    image, minus its input, times a [C, 1, 1] layer scale (a per-channel row), into a
    convolution (whose windows need the row's stick padding zero)."""

    def __init__(self):
        super().__init__()
        self.pool = torch.nn.AvgPool2d(3, 1, 1, count_include_pad=False)
        self.scale = torch.nn.Parameter(torch.rand(8, 1, 1))
        self.conv = torch.nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        return self.conv(x + self.scale * (self.pool(x) - x))


def test_poolformer_block():
    torch.manual_seed(0)
    _check(_PoolFormerBlock().half(), torch.randn(2, 8, 7, 6).half())


class _InputTwice(torch.nn.Module):
    """A temporal conv net's block: the signal padded on the left (causal) for a dilated
    convolution, and read by a 1x1 convolution as is (the residual)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(8, 16, 3, dilation=2)
        self.skip = torch.nn.Conv1d(8, 16, 1)

    def forward(self, x):
        return torch.relu(self.conv(torch.nn.functional.pad(x, (4, 0)))) + self.skip(x)


def test_an_input_read_channels_last_and_in_ncl_order_is_one_input():
    torch.manual_seed(0)
    exe = _check(_InputTwice(), torch.randn(2, 8, 30))
    assert [b.name for b in exe.binary.inputs] == ["x"]


def test_group_norm_statistics_are_fp32():
    """fp16 group norm: every row reduction of its statistics is in fp32 (torch computes
    them in fp32 for 16-bit inputs), and the result matches eager."""
    torch.manual_seed(0)
    norm = torch.nn.GroupNorm(4, 16).half().eval()
    x = torch.randn(2, 16, 6, 5).half()
    ir = io.StringIO()
    spyrec.compile(torch.export.export(norm, (x,)), print_ir=ir, stop_after="spyre-legalize")
    selected = ir.getvalue().split("IR after spyre-legalize")[1]
    reductions = re.findall(r"spyre\.reduce_\w+ .*-> tensor<[0-9x]*(\w+)>", selected)
    assert reductions and set(reductions) == {"f32"}, reductions
    _check(norm, x)


def test_the_check_catches_a_group_norm_without_its_mean(monkeypatch):
    """The comparison is a check that can fail: group norm with its mean left out (an
    uncentred variance) is rejected."""
    normalize = normalization._normalize
    monkeypatch.setattr(normalization, "_normalize",
                        lambda op, rewriter, x, centered, eps: normalize(op, rewriter, x,
                                                                         False, eps))
    torch.manual_seed(0)
    exe, out, expected = _compile(torch.nn.GroupNorm(2, 8), torch.randn(2, 8, 20) + 1)
    with pytest.raises(AssertionError):
        assert_close(exe, expected, out)
