"""Conv nets on the device: a small ResNet through `spyrec.compile` and through the CLI,
matched with eager; channels-last inputs and outputs; what is refused, and how."""

from __future__ import annotations

import subprocess

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_close, one

import spyrec
from spyrec.demo import DemoConvNet
from spyrec.diagnostics import SpyrecError
from spyrec.runtime.emulator import Emulator
from spyrec.runtime.layout import DeviceLayout, from_device, to_device


def _check(model: torch.nn.Module, *inputs: torch.Tensor) -> spyrec.Executable:
    """Compile, run on the emulator, and hold the result to eager (`assert_close`)."""
    exe = spyrec.compile(torch.export.export(model, inputs))
    out = exe(*inputs)
    with torch.no_grad():
        expected = model(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    refs = expected if isinstance(expected, tuple) else (expected,)
    for got, ref in zip(outs, refs):
        assert got.shape == ref.shape and got.dtype == ref.dtype
    assert_close(exe, expected, out)
    return exe


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
def test_resnet_matches_eager(dtype):
    torch.manual_seed(0)
    model = DemoConvNet().to(dtype).eval()
    exe = _check(model, torch.randn(2, 3, 32, 32).to(dtype))
    # convolutions and pooling read their windows through DMA-only kernels, and every
    # batch norm is folded into its convolution's weights: no norm statistics remain
    dma_only = [k for k in exe.binary.kernels
                if all(i.op.startswith("dma.") for p in k.programs.values() for i in p)]
    assert len(dma_only) >= 10  # 9 max-pool taps and the convolutions' windows
    names = {b.name for b, _ in exe.binary.weights}
    assert not any("running" in n for n in names), names
    assert any(n.endswith(".weight") and n.startswith("convolution") for n in names), names
    (image,) = exe.binary.inputs
    assert image.layout.shape == (2, 3, 32, 32) and image.layout.perm == (0, 2, 3, 1)


def test_resnet_through_the_cli(spyrec_cli, cli_env, tmp_path):
    torch.manual_seed(0)
    model = DemoConvNet().to(torch.float16).eval()
    pt2 = tmp_path / "convnet.pt2"
    torch.export.save(torch.export.export(model, (torch.randn(2, 3, 32, 32).half(),)), pt2)
    out = tmp_path / "convnet.spyre"
    res = subprocess.run([*spyrec_cli, "compile", str(pt2), "-o", str(out)],
                         capture_output=True, text=True, env=cli_env, timeout=600, check=False)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([*spyrec_cli, "run", str(out), "--check", str(pt2)],
                         capture_output=True, text=True, env=cli_env, timeout=600, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "emulated time" in res.stdout and "ok" in res.stdout
    assert "FAILED" not in res.stdout
    res = subprocess.run([*spyrec_cli, "inspect", str(out)],
                         capture_output=True, text=True, env=cli_env, timeout=600, check=False)
    assert "input x: [2, 3, 32, 32] float16" in res.stdout
    assert "stored as [2, 32, 32, 3] (dims [0, 2, 3, 1])" in res.stdout


def test_channels_last_layout_round_trip():
    """The host permutes an NCHW image into the [N, H, W, C] rows the device stores (with
    the channels padded to a stick) and back; the container keeps the permutation."""
    layout = DeviceLayout((2, 3, 4, 5), "float32", (0, 2, 3, 1))
    assert layout.device_shape == (2, 4, 5, 3) and (layout.rows, layout.cols) == (40, 3)
    image = torch.randn(2, 3, 4, 5).numpy()
    raw = to_device(layout, image)
    rows = raw.view("float32").reshape(40, 32)  # 3 channels padded to a 32-element stick
    assert (rows[:, :3] == image.transpose(0, 2, 3, 1).reshape(40, 3)).all()
    assert (rows[:, 3:] == 0).all()
    assert (from_device(layout, raw) == image).all()
    assert DeviceLayout.from_dict(layout.to_dict()) == layout


class _Stages(torch.nn.Module):
    """Input normalisation, conv-bn-relu, a residual add, a max pool; the 4-D feature map
    is a program output (channels-last on the device, NCHW for the caller)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, bias=False)
        assert self.bn.running_mean is not None and self.bn.running_var is not None
        with torch.no_grad():
            self.bn.running_mean.normal_()
            self.bn.running_var.uniform_(0.5, 2)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv((x - 0.5) * 2.0)))
        y = y + self.conv2(y)
        return F.max_pool2d(y, 2), y.mean((2, 3))


def test_channels_last_outputs_and_input_normalisation():
    torch.manual_seed(0)
    exe = _check(_Stages().eval(), torch.randn(1, 3, 12, 20))
    assert [b.layout.perm for b in exe.binary.outputs] == [(0, 2, 3, 1), None]


def test_unfolded_batch_norm_is_a_channel_scale_and_shift():
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(16)
    assert bn.running_mean is not None and bn.running_var is not None
    with torch.no_grad():
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2)
        bn.weight.normal_()
        bn.bias.normal_()
    model = torch.nn.Sequential(torch.nn.MaxPool2d(2), bn, torch.nn.AdaptiveAvgPool2d(2))
    _check(model.eval(), torch.randn(2, 16, 8, 8))


def _refusal(model: torch.nn.Module, *inputs: torch.Tensor) -> str:
    with pytest.raises(SpyrecError) as info:
        spyrec.compile(torch.export.export(model.eval(), inputs))
    return str(info.value)


def test_grouped_convolutions_run_as_dense_ones():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(8, 12, 3, stride=2, padding=1, groups=2).half()
    exe = _check(conv.eval(), torch.randn(2, 8, 9, 9).half())
    assert len(exe.binary.kernels) == 3  # border image, windows, matmul


DEPTHWISE = {  # name -> (module, input shape)
    "2d_s2_unaligned": (lambda: torch.nn.Conv2d(40, 40, 3, stride=2, padding=1, groups=40),
                        (2, 40, 9, 9)),
    "2d_k5_aligned_bn": (lambda: torch.nn.Sequential(
        torch.nn.Conv2d(64, 64, 5, padding=2, groups=64, bias=False), _bn(64)), (1, 64, 8, 8)),
    "1d_dilation2": (lambda: torch.nn.Conv1d(24, 24, 3, padding=2, dilation=2, groups=24),
                     (2, 24, 19)),
}


def _bn(channels: int) -> torch.nn.BatchNorm2d:
    bn = torch.nn.BatchNorm2d(channels)
    assert bn.running_mean is not None and bn.running_var is not None
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2)
    return bn


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32],
                         ids=["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("name", list(DEPTHWISE))
def test_depthwise_convolution_moves_its_own_weight_and_keeps_nan_in_its_channel(name, dtype):
    """A depthwise convolution (note 84) matches eager, stores only its [KH*KW, C] taps and
    bias (a dense weight with zeros would be C times larger), declares the program's flops,
    and a NaN in channel c reaches channel c only, exactly where eager puts it."""
    torch.manual_seed(0)
    make, shape = DEPTHWISE[name]
    model = make().to(dtype).eval()
    x = torch.randn(*shape).to(dtype)
    exe = _check(model, x)
    channels, taps = shape[1], 25 if "k5" in name else 3 if "1d" in name else 9
    weight_bytes = sum(data.nbytes for b, data in exe.binary.weights
                       if ".tap" in b.name or b.name.endswith(("bias", "weight")))
    assert weight_bytes == (taps + 1) * channels * dtype.itemsize
    _, profile = Emulator(exe.binary, mode="timing").run()
    assert profile.flops <= 1.2 * profile.program_flops
    x[(0, 5) + (3,) * (len(shape) - 2)] = float("nan")
    out = one(exe(x))
    with torch.no_grad():
        expected = model(x)
    nan_channels = torch.isnan(out).flatten(2).any(2).any(0).nonzero().flatten().tolist()
    assert nan_channels == [5]
    assert torch.equal(torch.isnan(out), torch.isnan(expected))


def test_transposed_convolution_is_refused_by_name():
    message = _refusal(torch.nn.ConvTranspose2d(4, 4, 3, stride=2), torch.randn(1, 4, 8, 8))
    assert "aten.convolution.default (node convolution)" in message
    assert "a transposed convolution other than" in message


def test_uneven_adaptive_windows_are_refused():
    message = _refusal(torch.nn.AdaptiveAvgPool2d(3), torch.randn(1, 4, 8, 8))
    assert "_adaptive_avg_pool2d" in message and "3x3 of a 8x8 image" in message


class _WeightInput(torch.nn.Module):
    def forward(self, x, w):
        return F.conv2d(x, w, padding=1)


def test_a_convolution_weight_that_is_not_constant_is_refused():
    message = _refusal(_WeightInput(), torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3))
    assert "aten.convolution.default (node convolution)" in message
    assert "weight is not a constant" in message


class _PatchEmbed(torch.nn.Module):
    """A vision transformer's front: 4x4 patches by a stride-4 convolution, the pixels as
    tokens (flatten(2).transpose(1, 2), free channels-last), a LayerNorm and a Linear."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Conv2d(3, 64, 4, stride=4)
        self.norm = torch.nn.LayerNorm(64)
        self.fc = torch.nn.Linear(64, 32)

    def forward(self, x):
        return self.fc(self.norm(self.proj(x).flatten(2).transpose(1, 2)))


def test_patch_embedding_tokens_need_no_move():
    torch.manual_seed(0)
    exe = _check(_PatchEmbed().eval(), torch.randn(2, 3, 32, 32))
    assert len(exe.binary.kernels) <= 4  # windows, the convolution's matmul, norm, linear
