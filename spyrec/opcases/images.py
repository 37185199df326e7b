"""Convolution, batch norm and pooling over images (channels-last on the device)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from spyrec.opcases.core import DTYPES, OpCase, _Fn, _randn
from spyrec.opcases.signals import _group_norm

# ---- images: convolution, batch norm, pooling (channels-last on the device) ------------------

IMAGE = (2, 8, 16, 16)  # N, C, H, W: the "image" shape family


def _batch_norm(channels: int) -> torch.nn.Module:
    bn = torch.nn.BatchNorm2d(channels)
    assert bn.running_mean is not None and bn.running_var is not None  # tracked by default
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.normal_(0, 0.2)
        bn.running_mean.normal_(0, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
    return bn


def _grn(x: torch.Tensor) -> torch.Tensor:
    norm = torch.linalg.vector_norm(x, ord=2, dim=(1, 2), keepdim=True)
    return x * (norm / (norm.mean(dim=-1, keepdim=True) + 1e-6)) + x


IMAGE_MODULES: dict[str, Callable[[], torch.nn.Module]] = {
    "conv2d_k1": lambda: torch.nn.Conv2d(8, 16, 1),
    "conv2d_k1_s2": lambda: torch.nn.Conv2d(8, 16, 1, stride=2, bias=False),
    "conv2d_k3_p1": lambda: torch.nn.Conv2d(8, 16, 3, padding=1),
    "conv2d_k3_s2_p1_nobias": lambda: torch.nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False),
    "conv2d_k3_nopad": lambda: torch.nn.Conv2d(8, 16, 3),
    "conv2d_k3_dilation2": lambda: torch.nn.Conv2d(8, 16, 3, padding=2, dilation=2),
    "conv2d_k5_p2": lambda: torch.nn.Conv2d(8, 16, 5, padding=2),
    "conv2d_k7_s2_p3": lambda: torch.nn.Conv2d(8, 16, 7, stride=2, padding=3),
    "conv2d_bn_relu": lambda: torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, padding=1),
                                                  _batch_norm(16), torch.nn.ReLU()),
    "conv2d_depthwise": lambda: torch.nn.Conv2d(8, 8, 3, padding=1, groups=8),
    "conv2d_groups2": lambda: torch.nn.Conv2d(8, 16, 3, padding=1, groups=2),
    "batch_norm": lambda: _batch_norm(8),
    "max_pool_2x2": lambda: torch.nn.MaxPool2d(2),
    "max_pool_3x3_s2_p1": lambda: torch.nn.MaxPool2d(3, 2, 1),
    "avg_pool_2x2": lambda: torch.nn.AvgPool2d(2),
    "adaptive_avg_pool_1": lambda: torch.nn.AdaptiveAvgPool2d(1),
    "adaptive_avg_pool_4": lambda: torch.nn.AdaptiveAvgPool2d(4),
    # ceil_mode (design note 98): the last window of each row and column is partial (it
    # ends at 17 of 16 pixels); the average's divisor counts what torch counts in it: the
    # pixels of the padded image [-p, H + p), or of the image without count_include_pad
    "max_pool_ceil_mode": lambda: torch.nn.MaxPool2d(3, 2, ceil_mode=True),
    "avg_pool_3x3_s2_ceil": lambda: torch.nn.AvgPool2d(3, 2, ceil_mode=True),
    "avg_pool_3x3_s2_p1_ceil": lambda: torch.nn.AvgPool2d(3, 2, 1, ceil_mode=True),
    "adaptive_avg_pool_3": lambda: torch.nn.AdaptiveAvgPool2d(3),
    # group norm (fp32 statistics) and a convolution of an image read in another order,
    # whose channels a device restickify moves into the stick
    "group_norm_4": lambda: _group_norm(4, 8),
    "group_norm_1_relu": lambda: torch.nn.Sequential(_group_norm(1, 8), torch.nn.ReLU()),
    "conv2d_of_transpose": lambda: torch.nn.Sequential(_Fn(lambda x: x.transpose(2, 3) * 2),
                                                       torch.nn.Conv2d(8, 16, 3, padding=1)),
    # transposed convolutions: stride = kernel (an upsampling: one matmul, rows moved)
    "conv_transpose2d_k2_s2": lambda: torch.nn.ConvTranspose2d(8, 16, 2, stride=2),
    "conv_transpose2d_k3_s2": lambda: torch.nn.ConvTranspose2d(8, 16, 3, stride=2),
    # PoolFormer's pooling: the divisor counts only the pixels inside the image
    "avg_pool_3x3_p1_exclude_pad": lambda: torch.nn.AvgPool2d(3, 1, 1,
                                                              count_include_pad=False),
    # depthwise convolutions (note 84): a window per tap and a multiply-add chain with
    # per-channel weight rows, never a dense weight; a channel multiplier repeats the
    # image's channels first
    "conv2d_depthwise_k5_s2_p2": lambda: torch.nn.Conv2d(8, 8, 5, stride=2, padding=2,
                                                         groups=8),
    "conv2d_depthwise_dilation2_nobias": lambda: torch.nn.Conv2d(8, 8, 3, padding=2, dilation=2,
                                                                 groups=8, bias=False),
    "conv2d_depthwise_bn_relu6": lambda: torch.nn.Sequential(
        torch.nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False), _batch_norm(8),
        torch.nn.ReLU6()),
    "conv2d_depthwise_multiplier2": lambda: torch.nn.Conv2d(8, 16, 3, padding=1, groups=8),
    # ConvNeXt V2's global response norm on the image read as channels-last [N, H, W, C]:
    # the 2-norm over H and W (a sum of f32 squares by a summation matrix, design note 98)
    "grn_norm_hw": lambda: _Fn(_grn),
    # ord 1 over every dim but the first, the stick dim's sums kept as a column
    "norm_ord1_dims_123": lambda: _Fn(lambda x: torch.linalg.vector_norm(
        x, ord=1, dim=(1, 2, 3), keepdim=True) * x),
}


IMAGE_REFUSED = {"adaptive_avg_pool_3": "output size 3x3 of a 16x16 image (windows of "
                                        "different sizes are not lowered",
                 "conv_transpose2d_k3_s2": "a transposed convolution other than a 2-D one "
                                           "whose stride is its kernel"}


# pooling of an image of odd sizes, fp16 only (the windows do not depend on the element
# type): ceil_mode's partial windows with and without count_include_pad, and a window larger
# than the image (EfficientNet's final AvgPool2d(hidden_dim, ceil_mode=True)), one output
# pixel averaging the whole image
ODD_IMAGE = (2, 8, 9, 7)
ODD_IMAGE_MODULES: dict[str, Callable[[], torch.nn.Module]] = {
    "max_pool_2x2_ceil": lambda: torch.nn.MaxPool2d(2, ceil_mode=True),
    "avg_pool_3x3_s2_p1_ceil_exclude_pad": lambda: torch.nn.AvgPool2d(
        3, 2, 1, ceil_mode=True, count_include_pad=False),
    "avg_pool_larger_than_image_ceil": lambda: torch.nn.AvgPool2d(32, ceil_mode=True),
    # the response norm over 9 x 7 pixels, not whole sticks of rows: H and W merge into
    # one dim, which moves into the stick
    "grn_norm_hw": lambda: _Fn(_grn),
}


def image_cases() -> list[OpCase]:
    out = []
    for dtype in DTYPES:
        for name, make in IMAGE_MODULES.items():
            out.append(OpCase(name, dtype, "image", lambda make=make, d=dtype: make().to(d),
                              _randn(IMAGE, dtype), IMAGE_REFUSED.get(name, "")))
    for name, make in ODD_IMAGE_MODULES.items():
        out.append(OpCase(name, torch.float16, "image_odd",
                          lambda make=make: make().to(torch.float16),
                          _randn(ODD_IMAGE, torch.float16)))
    return out
