"""The op coverage matrix: one small torch module per op, run through spyrec and eager.

`test/python/test_ops.py` parametrises pytest over `cases()`, and `tools/op_coverage.py`
runs the same cases to write `docs/coverage.md`, so the table in the docs is what the suite
measures. A case is an op, a dtype and a shape family:

- `aligned`: 64 x 128, whole sticks in every dtype;
- `unaligned`: 67 x 255, neither rows nor columns a multiple of anything;
- `3d`: 2 x 5 x 100 (leading dims become rows);
- `1d`: 100 (one row; ops on leading dims skip it) and `5d`: 2 x 2 x 3 x 4 x 64;
- `broadcast` (binary ops): a 64 x 128 tensor with a row vector of 128;
- `outer` (binary ops): a 67 x 1 column with a row vector of 255 (both broadcast);
- `image` (convolution, batch norm, pooling): a 2 x 8 x 16 x 16 NCHW image;
- `signal` / `signal_aligned` (1-D convolution, group norm): a 2 x 8 x 45 NCL signal, or
  1 x 64 x 24 (the channels whole fp16 sticks);
- `heads16` (attention): q, k, v of [1, 2, 16, 16], or [1, 16, 64] tokens split into 4 heads;
- `mask_aligned` / `mask_unaligned` (attention masks): q [2, 2, L, 64], k and v [2, 2, S, 64]
  with L = S = 32, or L = 37 and S = 45, and a bias or mask broadcast to [2, 2, L, S].
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

DTYPES = (torch.float16, torch.bfloat16, torch.float32)
SHAPES = {"aligned": (64, 128), "unaligned": (67, 255), "3d": (2, 5, 100), "1d": (100,),
          "5d": (2, 2, 3, 4, 64)}
# ops on a leading dim, which a 1-D tensor does not have
ROW_OPS = {"slice_rows", "select_row", "split_rows"}


@dataclass(frozen=True)
class OpCase:
    op: str
    dtype: torch.dtype
    shape: str
    module: Callable[[], torch.nn.Module]
    inputs: Callable[[torch.Generator], tuple[torch.Tensor, ...]]
    refused: str = ""
    """A known gap: the compile error this case must give (`test_ops` holds it to that)."""

    @property
    def id(self) -> str:
        return f"{self.op}-{str(self.dtype).removeprefix('torch.')}-{self.shape}"


class _Fn(torch.nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor]):
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return self.fn(*args)


class _Linear(torch.nn.Module):
    def __init__(self, k: int, n: int, bias: bool):
        super().__init__()
        self.lin = torch.nn.Linear(k, n, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


class _Norm(torch.nn.Module):
    def __init__(self, norm: torch.nn.Module):
        super().__init__()
        self.norm = norm
        with torch.no_grad():
            for p in self.norm.parameters():
                p.copy_(1 + 0.2 * torch.randn_like(p))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": torch.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "exp": torch.exp,
    "neg": torch.neg,
    "abs": torch.abs,
    "sqrt": lambda x: torch.sqrt(x.abs()),
    "rsqrt": lambda x: torch.rsqrt(x.abs() + 1),
    "reciprocal": lambda x: torch.reciprocal(x.abs() + 1),
    "square": lambda x: x.pow(2),
    "add_scalar": lambda x: x + 0.75,
    "mul_scalar": lambda x: x * -1.5,
    "rsub_scalar": lambda x: 1.0 - x,
    "div_scalar": lambda x: x / 3.0,
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "sum": lambda x: x.sum(-1, keepdim=True),
    "mean": lambda x: x.mean(-1, keepdim=True),
    "amax": lambda x: x.amax(-1, keepdim=True),
    "cast_fp32": lambda x: x.float() * 2,
    "cube": lambda x: x.pow(3),
    "slice_last": lambda x: x[..., 1:-2] * 2,
    "split_last": lambda x: x.split([x.shape[-1] // 3, x.shape[-1] - x.shape[-1] // 3],
                                    dim=-1)[1] * 2,
    "rotate_half": lambda x: torch.cat((-x[..., x.shape[-1] // 2:], x[..., :x.shape[-1] // 2]),
                                       dim=-1),
    "log": lambda x: torch.log(x.abs() + 0.25),
    "erf": torch.erf,
    "clamp": lambda x: x.clamp(-0.5, 0.75),
    "hardtanh": F.hardtanh,
    "leaky_relu": lambda x: F.leaky_relu(x, 0.1),
    "elu": F.elu,
    "softplus": F.softplus,
    "mish": F.mish,
    "hardswish": F.hardswish,
    "pow_frac": lambda x: (x.abs() + 0.5) ** 1.5,
    "exp2": lambda x: 2.0 ** x,
    "log_softmax": lambda x: torch.log_softmax(x, dim=-1),
    "logsumexp": lambda x: torch.logsumexp(x, -1, keepdim=True),
    "var": lambda x: x.var(-1, keepdim=True),
    "std": lambda x: x.std(-1, keepdim=True),
    "norm": lambda x: torch.linalg.vector_norm(x, dim=-1, keepdim=True),
    "full_like": lambda x: x + torch.full_like(x, 0.5),
    "slice_rows": lambda x: x[..., 1:-2:2, :] * 2,
    "select_row": lambda x: x.select(-2, -1) * 2,
    "split_rows": lambda x: x.split([1, x.shape[-2] - 1], dim=-2)[1] * 2,
    "center": lambda x: x - x.mean(-1)[..., None],
    "expand_column": lambda x: x.abs().amax(-1, keepdim=True).expand_as(x) * 2,
    "repeat": lambda x: x.repeat(*([2] + [1] * (x.dim() - 1))) * 2,
    "pad": lambda x: F.pad(x, (2, 3), value=0.5) * 2,
}
# ops torch-spyre runs on the CPU, on the device here (design note 28c)
UNARY.update({
    "cumsum": lambda x: torch.cumsum(x, -1),
    "tril": lambda x: torch.tril(x, 1),
    "triu": torch.triu,
    "argmax": lambda x: x.argmax(-1, keepdim=True),
    "argmin": lambda x: x.argmin(-1, keepdim=True),
    "max_dim": lambda x: x.max(-1, keepdim=True)[1],
    "min_dim_values": lambda x: x.min(-1, keepdim=True)[0] * 2,
    "sin": torch.sin,
    "cos": lambda x: torch.cos(x * 3),
})
ROW_OPS |= {"tril", "triu"}  # matrices: a 1-D tensor has no rows to mask
# elementary functions without an SFU instruction, composed of SFU ops
# (passes/graph/legalize/transcendental.py); arguments scaled into each function's domain
# (tan away from its poles, asin/acos within (-1, 1) but for the special values, atanh
# away from +-1, where its slope would amplify the 16-bit rounding of eager's product)
UNARY.update({
    "log2": lambda x: torch.log2(x.abs()),
    "log10": lambda x: torch.log10(x.abs() + 0.5),
    "exp2_tensor": torch.exp2,
    "sinh": torch.sinh,
    "cosh": torch.cosh,
    "tan": lambda x: torch.tan(x * 0.25),
    "atan": lambda x: torch.atan(x * 3),
    "asin": lambda x: torch.asin(x * 0.3),
    "acos": lambda x: torch.acos(x * 0.3),
    "asinh": lambda x: torch.asinh(x * 3),
    "acosh": lambda x: torch.acosh(x.abs() + 1),
    "atanh": lambda x: torch.atanh(x * 0.2),
})


def _smallest_factor(n: int) -> int:
    return next(p for p in range(2, n + 1) if n % p == 0)


# the innermost dim moving on the device: transposes, keepdim=False reductions, innermost
# splits and merges (heads narrower than a stick), through identity @ x^T (design note 37)
UNARY.update({
    "transpose_last": lambda x: x.transpose(-1, -2) * 2,
    "movedim_last": lambda x: x.movedim(-1, 0) * 2,
    "sum_nokeep": lambda x: x.sum(-1) * 2,
    "amax_nokeep": lambda x: x.amax(-1) * 2,
    "argmax_nokeep": lambda x: x.argmax(-1),
    "unflatten_last": lambda x: x.unflatten(-1, (_smallest_factor(x.shape[-1]),
                                                 x.shape[-1] // _smallest_factor(x.shape[-1]))) * 2,
    "flatten_last": lambda x: x.flatten(-2) * 2,
    "unsqueeze_last": lambda x: x[..., None] * 2,
})
ROW_OPS |= {"transpose_last", "movedim_last", "flatten_last"}
# writes into slices (copy + slice_scatter / select_scatter): concatenations of moves
# (spyrec/frontend/slice_writes.py), exact
def _slice_write_cols(x: torch.Tensor) -> torch.Tensor:
    t = x * 2
    t[..., 1:4].copy_(x[..., -3:])
    return t


def _select_write_row(x: torch.Tensor) -> torch.Tensor:
    t = x * 2
    t[..., 1, :] = x[..., 0, :] + 1
    return t


UNARY.update({"slice_write_cols": _slice_write_cols, "select_write_row": _select_write_row})
ROW_OPS |= {"select_write_row"}
# reductions and softmax over a leading dim: the dim moves last through a device transpose,
# is reduced there and moves back if kept (passes/graph/move_reduced_dim.py, design note 51).
# `_dim0` ops reduce dim 0 (the rows of a matrix); `_rows` ops reduce dim -2 of a 3-D or
# 5-D tensor (dim 1 of 2 x 5 x 100, dim 3 of the 5-D family)
LEADING_REDUCTIONS: dict[str, Callable[[torch.Tensor, int], torch.Tensor]] = {
    "softmax": lambda x, d: torch.softmax(x, dim=d),
    "log_softmax": lambda x, d: torch.log_softmax(x, dim=d),
    "amax": lambda x, d: x.amax(d, keepdim=True),
    "amin_nokeep": lambda x, d: x.amin(d) * 2,
    "max_dim": lambda x, d: x.max(d)[1],
    "min_dim_values": lambda x, d: x.min(d, keepdim=True)[0] * 2,
    "argmax": lambda x, d: x.argmax(d, keepdim=True),
    "argmin_nokeep": lambda x, d: x.argmin(d),
    "var": lambda x, d: x.var(d, keepdim=True),
    "std_nokeep": lambda x, d: x.std(d),
    "norm": lambda x, d: torch.linalg.vector_norm(x, dim=d, keepdim=True),
    "logsumexp": torch.logsumexp,
    "cumsum": torch.cumsum,
    # sums and means over a leading dim: a summation matrix when the summed rows are whole
    # sticks, else the dim moves last like the ops above (design note 74)
    "sum": lambda x, d: x.sum(d, keepdim=True),
    "mean_nokeep": lambda x, d: x.mean(d) * 2,
}
for _name, _fn in LEADING_REDUCTIONS.items():
    UNARY[f"{_name}_dim0"] = lambda x, fn=_fn: fn(x, 0)
    UNARY[f"{_name}_rows"] = lambda x, fn=_fn: fn(x, -2)
ROW_OPS |= {f"{n}_dim0" for n in LEADING_REDUCTIONS}
# index results: inputs on a grid of 1/64, exact in DL16, so near-ties (two f16 values one
# ulp apart, equal once rounded to the device's DL16) are exact ties, first index in both
COARSE_INPUTS = {f"{n}_{s}" for n in ("max_dim", "argmax", "argmin_nokeep")
                 for s in ("dim0", "rows")}
# float -> integer casts truncate toward zero; int32 <-> int64 keep the values (design
# note 74). Coarse inputs (a grid of 1/64, exact in DL16): the device's rounding of an f16
# input never moves a value across an integer
INT_CASTS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "to_int32": lambda x: (x * 8).to(torch.int32),
    "to_int64": lambda x: (x * -8).long(),
    "int32_to_int64": lambda x: (x * 8).to(torch.int32).long() * 2,
    "int64_to_int32": lambda x: ((x * 8).long() + 3).to(torch.int32),
}
UNARY.update(INT_CASTS)
COARSE_INPUTS |= set(INT_CASTS)
# a matrix's dim -2 is dim 0, covered by the `_dim0` ops
RANK3_OPS = {f"{n}_rows" for n in LEADING_REDUCTIONS}
# known gaps by (op, shape family): the reason the compile error gives
REFUSED = {("flatten_last", "unaligned"): "stays in LX per batch"}  # 67 x 255 -> one row
# two activations of one shape; a 1-D tensor has no rows to transpose or stack
PAIR_OPS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "matmul_nt": lambda a, b: a @ b.transpose(-1, -2),
    "matmul_tn": lambda a, b: a.transpose(-1, -2) @ b,
    "cat_rows": lambda a, b: torch.cat([a, b[..., :3, :]], dim=-2) * 2,
    "cat_dim0": lambda a, b: torch.cat([a, b], dim=0) * 2,
}
BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": lambda a, b: a / (b.abs() + 0.5),
    "maximum": torch.maximum,
    "minimum": torch.minimum,
}


# mixed element types: PyTorch's type promotion (the result type torch.export records),
# a cast of the other operand on the device. "float": the other float type (f32 for f16 and
# bf16 tensors, f16 for f32 ones: an f32 result either way); int64 / int32 tensors in
# [-8, 8] promote to the float type
MIXED: dict[str, tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor], str]] = {
    "add_mixed_float": (torch.add, "float"),
    "mul_mixed_float": (torch.mul, "float"),
    "maximum_mixed_float": (torch.maximum, "float"),
    "sub_int64": (lambda a, b: b - a, "int64"),
    "mul_int32": (torch.mul, "int32"),
}


def _mixed_inputs(shape: tuple[int, ...], dtype: torch.dtype,
                  other: str) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    def make(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        a = torch.randn(*shape, generator=g).to(dtype)
        if other == "float":
            b = torch.randn(*shape, generator=g).to(
                torch.float16 if dtype == torch.float32 else torch.float32)
        else:
            b = torch.randint(-8, 9, shape, generator=g, dtype=getattr(torch, other))
        return a, b
    return make


def _randn(shape: tuple[int, ...], dtype: torch.dtype
           ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    return lambda g: (torch.randn(*shape, generator=g).to(dtype),)


def _coarse(shape: tuple[int, ...], dtype: torch.dtype
            ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    return lambda g: ((torch.randn(*shape, generator=g) * 64).round().div(64).to(dtype),)


def cases() -> list[OpCase]:
    out: list[OpCase] = []
    for dtype in DTYPES:
        for shape_name, shape in SHAPES.items():
            for name, fn in UNARY.items():
                if (len(shape) == 1 and name in ROW_OPS) or (len(shape) < 3 and name in RANK3_OPS):
                    continue
                inputs = (_coarse(shape, dtype) if name in COARSE_INPUTS
                          else _randn(shape, dtype))
                out.append(OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                                  inputs, REFUSED.get((name, shape_name), "")))
            pairs = {**BINARY, **(PAIR_OPS if len(shape) > 1 else {})}
            for name, fn in pairs.items():
                out.append(OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                                  lambda g, s=shape, d=dtype: (
                                      torch.randn(*s, generator=g).to(d),
                                      torch.randn(*s, generator=g).to(d))))
            for name, (fn, other) in MIXED.items():
                out.append(OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                                  _mixed_inputs(shape, dtype, other)))
            k = shape[-1]
            out.append(OpCase("linear", dtype, shape_name,
                              lambda k=k, d=dtype: _Linear(k, 96, True).to(d),
                              _randn(shape, dtype)))
            out.append(OpCase("linear_nobias", dtype, shape_name,
                              lambda k=k, d=dtype: _Linear(k, 160, False).to(d),
                              _randn(shape, dtype)))
            out.append(OpCase("layer_norm", dtype, shape_name,
                              lambda k=k, d=dtype: _Norm(torch.nn.LayerNorm(k)).to(d),
                              _randn(shape, dtype)))
            out.append(OpCase("rms_norm", dtype, shape_name,
                              lambda k=k, d=dtype: _Norm(torch.nn.RMSNorm(k, eps=1e-6)).to(d),
                              _randn(shape, dtype)))
        # a table repeated along the leading dims (rotary cos/sin times activations)
        out.append(OpCase("mul_leading_broadcast", dtype, "3d", lambda: _Fn(torch.mul),
                          lambda g, d=dtype: (torch.randn(*SHAPES["3d"], generator=g).to(d),
                                              torch.randn(*SHAPES["3d"][1:], generator=g).to(d))))
        for name, fn in BINARY.items():
            out.append(OpCase(name, dtype, "broadcast", lambda fn=fn: _Fn(fn),
                              lambda g, d=dtype: (torch.randn(64, 128, generator=g).to(d),
                                                  torch.randn(128, generator=g).to(d))))
            # mixed element types with a row broadcast: an f32 row for f16 / bf16 tensors
            out.append(OpCase(f"{name}_mixed_row", dtype, "broadcast", lambda fn=fn: _Fn(fn),
                              lambda g, d=dtype: (torch.randn(64, 128, generator=g).to(d),
                                                  torch.randn(128, generator=g).to(
                                                      torch.float16 if d == torch.float32
                                                      else torch.float32))))
            # a column first, a row second: both broadcast (an outer product, rotary's
            # positions x frequencies), and the column operand's op is reversed on the SFU
            out.append(OpCase(name, dtype, "outer", lambda fn=fn: _Fn(fn),
                              lambda g, d=dtype: (torch.randn(67, 1, generator=g).to(d),
                                                  torch.randn(255, generator=g).to(d))))
    out.extend(image_cases())
    out += gather_cases()
    out += predicate_cases()
    out += attention_cases()
    out += broadcasting_cases()
    out += movement_cases()
    out += signal_cases()
    out += routing_cases()
    out += rotary_cases()
    out += mqa_cases()
    out += div_mode_cases()
    out += masked_write_cases()
    return out


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
    "max_pool_ceil_mode": lambda: torch.nn.MaxPool2d(3, 2, ceil_mode=True),
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
}


IMAGE_REFUSED = {"max_pool_ceil_mode": "ceil_mode=True (partial windows at the edge are not "
                                       "lowered",
                 "adaptive_avg_pool_3": "output size 3x3 of a 16x16 image (windows of "
                                        "different sizes are not lowered",
                 "conv_transpose2d_k3_s2": "a transposed convolution other than a 2-D one "
                                           "whose stride is its kernel"}


def image_cases() -> list[OpCase]:
    out = []
    for dtype in DTYPES:
        for name, make in IMAGE_MODULES.items():
            out.append(OpCase(name, dtype, "image", lambda make=make, d=dtype: make().to(d),
                              _randn(IMAGE, dtype), IMAGE_REFUSED.get(name, "")))
    return out


# ---- gathers of rows by index (embedding, index_select): dma.gather on the device ----------

# shape family -> (index shape, table rows, table width)
GATHER_SHAPES = {"aligned": ((4, 16), 256, 128), "unaligned": ((3, 7), 67, 255),
                 "3d": ((2, 5, 3), 100, 100)}


class _Embedding(torch.nn.Module):
    def __init__(self, rows: int, width: int):
        super().__init__()
        self.table = torch.nn.Embedding(rows, width)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.table(ids)


def _ids(shape: tuple[int, ...], rows: int, dtype: torch.dtype,
         g: torch.Generator) -> torch.Tensor:
    ids = torch.randint(0, rows, shape, generator=g, dtype=dtype)
    ids.view(-1)[:2] = torch.tensor([0, rows - 1])  # both ends of the table
    return ids


def gather_cases() -> list[OpCase]:
    """embedding with int64 and int32 ids (a weight table), index_select of rows of an
    activation, per table dtype and index shape."""
    out: list[OpCase] = []
    for dtype in DTYPES:
        for shape_name, (ids, rows, width) in GATHER_SHAPES.items():
            for op, id_dtype in (("embedding", torch.int64), ("embedding_int32", torch.int32)):
                out.append(OpCase(op, dtype, shape_name,
                                  lambda r=rows, w=width, d=dtype: _Embedding(r, w).to(d),
                                  lambda g, s=ids, r=rows, i=id_dtype: (_ids(s, r, i, g),)))
            count = ids[-1] * 2
            out.append(OpCase("index_select", dtype, shape_name,
                              lambda: _Fn(lambda x, i: torch.index_select(x, 0, i) * 2),
                              lambda g, r=rows, w=width, d=dtype, c=count: (
                                  torch.randn(r, w, generator=g).to(d),
                                  _ids((c,), r, torch.int64, g))))
    return out


# ---- integer comparisons, where and casts of integers (f32 0/1 predicates on the device) -----

COMPARE: dict[str, Callable[..., torch.Tensor]] = {
    "le": lambda a, b, x: torch.where(a <= b, x, -x),
    "lt": lambda a, b, x: torch.where(a < b, x, -x),
    "ge": lambda a, b, x: torch.where(a >= b, x, -x),
    "gt": lambda a, b, x: torch.where(a > b, x, -x),
    "eq": lambda a, b, x: torch.where(a == b, x, 0.5),
    "ne": lambda a, b, x: torch.where(a != b, 2.0, x),
    "ne_scalar": lambda a, b, x: torch.where(a != 3, x, -x),
    "logical_and_not": lambda a, b, x: torch.where((a <= b) & ~(a == 0), x, -x),
    "cast_int": lambda a, b, x: a.to(x.dtype) * x,
    "le_bool_output": lambda a, b, x: a <= b,  # a boolean program output
    # where between integers: selected as the f32 values they are on the device
    "where_int": lambda a, b, x: torch.where(x > 0, a, b) * 3 + 1,
    "where_int_scalar": lambda a, b, x: torch.where(a > b, a, -7),
}


def predicate_cases() -> list[OpCase]:
    """Comparisons of int64 tensors (int32 for `le_int32`) in [-4, 4], so equal values
    occur, selecting between float tensors of each dtype; casts of int64 to float."""
    out: list[OpCase] = []
    ops = {**COMPARE, "le_int32": COMPARE["le"]}
    for dtype in DTYPES:
        for shape_name, shape in SHAPES.items():
            for name, fn in ops.items():
                ints = torch.int32 if name.endswith("int32") else torch.int64
                out.append(OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                                  lambda g, s=shape, d=dtype, i=ints: (
                                      torch.randint(-4, 5, s, generator=g, dtype=i),
                                      torch.randint(-4, 5, s, generator=g, dtype=i),
                                      torch.randn(*s, generator=g).to(d))))
    return out

# ---- broadcasting, 0-d operands, float predicates, casts and torch.nn's activations ---------

# ops on one float tensor: 0-d tensors and Python scalars of every dtype (PyTorch's type
# promotion: a 0-d tensor does not promote a tensor of its category), comparisons of floats,
# isnan / isinf / any, casts, and the activations of torch.nn not covered above
GAP_UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "mul_0d_tensor": lambda x: x * torch.tensor(8.0 ** 0.5),  # Gemma's embedding scale
    "div_0d_int_tensor": lambda x: x / torch.tensor(3),
    "sub_0d_tensor_first": lambda x: torch.tensor(0.5, dtype=x.dtype) - x,
    "add_bool_scalar": lambda x: x + True,
    "mul_0d_bool_tensor": lambda x: x * torch.tensor(True) - 1,
    "maximum_0d_tensor": lambda x: torch.maximum(x, torch.tensor(-0.25, dtype=x.dtype)),
    "lt_float_scalar": lambda x: torch.where(x < 0.25, x, -x),
    "ge_float_scalar": lambda x: torch.where(x >= -0.5, x, 2.0),
    "masked_fill_gt": lambda x: x.masked_fill(x > 0.5, -1.0),
    "isnan": lambda x: torch.where(torch.isnan(x), 0.0, x),
    "isinf": lambda x: torch.where(torch.isinf(x), 0.0, x),
    "isfinite": lambda x: torch.where(torch.isfinite(x), x, -1.0),
    "cast_bool": lambda x: torch.where(x.relu().bool(), x, 2.0),
    "logical_float": lambda x: torch.where(torch.logical_and(x > 0, torch.logical_not(x > 1)),
                                           x, 0.0),
    "any_last": lambda x: (x > 1.5).any(-1),
    "all_last_keep": lambda x: (x > -2.0).all(-1, keepdim=True),
    # T5's fp16 clamp: a 0-d `any` selecting a bound, the clamp reading 0-d tensors
    "t5_clamp": lambda x: x.clamp(min=-torch.where(torch.isinf(x).any(), 1.0, 1.5),
                                  max=torch.where(torch.isinf(x).any(), 1.0, 1.5)),
    "cast_16bit": lambda x: x.to(torch.bfloat16 if x.dtype == torch.float16
                                 else torch.float16) * 2,
    "type_as_roundtrip": lambda x: x.float().type_as(x) * 2,
    "sign": torch.sign,
    "expm1": torch.expm1,
    "log1p": lambda x: torch.log1p(x.abs()),
    "selu": F.selu,
    "celu": lambda x: F.celu(x, 0.7),
    "hardsigmoid": F.hardsigmoid,
    "hardshrink": lambda x: F.hardshrink(x, 0.4),
    "softshrink": lambda x: F.softshrink(x, 0.4),
    "tanhshrink": F.tanhshrink,
    "softsign": F.softsign,
    "logsigmoid": F.logsigmoid,
    "rrelu_eval": lambda x: F.rrelu(x, training=False),
    "threshold": lambda x: F.threshold(x, 0.1, 20.0),
    "relu6": F.relu6,
    "softmin": lambda x: F.softmin(x, -1),
    "glu": lambda x: F.glu(x[..., : x.shape[-1] // 2 * 2], -1),
}
GAP_SHAPES = ("aligned", "unaligned", "3d")


class _PReLU(torch.nn.Module):
    """PReLU with a weight per channel (dim 1: a column of the 3-D family, a row of a
    matrix)."""

    def __init__(self, channels: int):
        super().__init__()
        self.act = torch.nn.PReLU(channels, 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(x)


# pairs of tensors of broadcastable shapes (the "broadcast" family): size-1 dims in every
# position, 0-d run-time tensors (one of another dtype), and both operand orders
BROADCAST_PAIRS: dict[str, tuple[Callable[..., torch.Tensor], tuple[int, ...], tuple[int, ...],
                                 str]] = {
    "mul_0d_input": (torch.mul, (64, 128), (), ""),
    "add_0d_input_first": (torch.add, (), (64, 128), ""),
    "add_0d_input_f32": (torch.add, (64, 128), (), "float32"),
    "div_0d_input": (lambda a, b: a / (b.abs() + 0.5), (64, 128), (), ""),
    "mul_heads": (torch.mul, (2, 1, 128), (2, 3, 128), ""),  # [B, 1, S] * [B, H, S]
    "add_column_leading": (torch.add, (1, 5, 1), (2, 5, 128), ""),  # [1, S, 1] + [B, S, D]
    "add_mask_b11s": (torch.add, (2, 1, 1, 128), (2, 3, 5, 128), ""),
    "mul_outer_3d": (torch.mul, (2, 7, 1), (1, 1, 128), ""),
    "sub_outer_4d": (torch.sub, (1, 3, 1, 128), (2, 1, 7, 1), ""),
    "maximum_column_row": (torch.maximum, (5, 1), (1, 128), ""),
    "where_0d_condition": (lambda a, b: torch.where(b > 0, a, -a), (64, 128), (), ""),
    "clamp_0d_tensors": (lambda a, b: a.clamp(min=-b.abs(), max=b.abs()), (64, 128), (), ""),
    "lt_float_tensors": (lambda a, b: torch.where(a < b, a, b), (64, 128), (64, 128), ""),
    "le_float_row": (lambda a, b: torch.where(a <= b, a, 0.5), (64, 128), (128,), ""),
    "eq_float_column": (lambda a, b: torch.where(a == b, 1.0, a), (64, 128), (64, 1), ""),
    "ne_float_0d": (lambda a, b: torch.where(a != b, a, 0.5), (64, 128), (), ""),
    "gt_mixed_dtypes": (lambda a, b: torch.where(a > b, a, 0.5), (64, 128), (64, 128), "float32"),
}


def _pair_inputs(first: tuple[int, ...], second: tuple[int, ...], dtype: torch.dtype,
                 other: str) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    """Two tensors on a grid of 1/4 (so comparisons meet ties); the second in `other`'s
    dtype when one is given."""
    def make(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        a = (torch.randn(first, generator=g) * 4).round().div(4).to(dtype)
        b = (torch.randn(second, generator=g) * 4).round().div(4).to(
            getattr(torch, other) if other else dtype)
        return a, b
    return make


def broadcasting_cases() -> list[OpCase]:
    """The elementwise gaps of issue 20: `GAP_UNARY` on the aligned, unaligned and 3-D
    families, PReLU with a weight per channel, and `BROADCAST_PAIRS` in the broadcast
    family, in every dtype."""
    out: list[OpCase] = []
    for dtype in DTYPES:
        for shape_name in GAP_SHAPES:
            shape = SHAPES[shape_name]
            for name, fn in GAP_UNARY.items():
                out.append(OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                                  _coarse(shape, dtype)))
            out.append(OpCase("prelu", dtype, shape_name,
                              lambda n=shape[1], d=dtype: _PReLU(n).to(d),
                              _randn(shape, dtype)))
        for name, (fn, first, second, other) in BROADCAST_PAIRS.items():
            out.append(OpCase(name, dtype, "broadcast", lambda fn=fn: _Fn(fn),
                              _pair_inputs(first, second, dtype, other)))
    return out


@dataclass
class Outcome:
    """A case's result: passed, the worst element's error / bound and the aggregate error /
    bound (`spyrec.verdict`), or why it failed."""

    passed: bool
    element_ratio: float = 0.0
    aggregate_ratio: float = 0.0
    reason: str = ""


def run_case(case: OpCase) -> Outcome:
    """Compile the case, run it on the emulator and compare with eager."""
    import spyrec
    from spyrec.diagnostics import SpyrecError
    from spyrec.verdict import check_outputs

    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    model = case.module().eval()
    inputs = case.inputs(gen)
    try:
        exe = spyrec.compile(torch.export.export(model, inputs))
        out = exe(*inputs)
    except SpyrecError as exc:
        return Outcome(False, reason=_first_reason(str(exc)))
    with torch.no_grad():
        expected = model(*inputs)
    verdict = check_outputs(expected, out, exe)
    (output,) = verdict.outputs
    report = "; ".join(line.strip() for line in str(verdict).splitlines())
    return Outcome(verdict.ok, output.element_ratio, output.aggregate_ratio,
                   "" if verdict.ok else report)



def _first_reason(message: str) -> str:
    """The line of an error that says what failed (the first listed op, or the headline)."""
    lines = message.splitlines()
    listed = [line.strip() for line in lines if line.startswith("  ")]
    return listed[0] if listed else lines[0]


# ---- attention with heads of 16 (a quarter of an fp16 stick) ----------------------------------

HEADS16 = (1, 2, 16, 16)  # the "heads16" shape family: batch, heads, tokens, head dim


class _SplitHeads(torch.nn.Module):
    """A model's attention block with heads of 16: one q/k/v projection, the heads split off
    the innermost dim and merged back (restickifies on the device), causal SDPA."""

    def __init__(self, width: int = 64, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, w = x.shape
        q, k, v = (t.view(b, s, self.heads, w // self.heads).transpose(1, 2)
                   for t in self.qkv(x).split(w, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, s, w))


ATTENTION: dict[str, Callable[..., torch.Tensor]] = {
    "sdpa_causal": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    "eager_attention": lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2) * 0.25, -1) @ v,
}


def attention_cases() -> list[OpCase]:
    """SDPA and eager attention on [1, 2, 16, 16] q, k, v; a projection-split-heads block on
    [1, 16, 64] tokens."""
    out: list[OpCase] = []
    for dtype in DTYPES:
        for name, fn in ATTENTION.items():
            out.append(OpCase(name, dtype, "heads16", lambda fn=fn: _Fn(fn),
                              lambda g, d=dtype: tuple(torch.randn(*HEADS16, generator=g).to(d)
                                                       for _ in range(3))))
        out.append(OpCase("split_heads_attention", dtype, "heads16",
                          lambda d=dtype: _SplitHeads().to(d), _randn((1, 16, 64), dtype)))
    out += attention_mask_cases()
    return out


# ---- attention masks and biases of broadcast shapes --------------------------------------------

# the "mask_aligned" / "mask_unaligned" shape families: batch, heads, queries, keys, head dim
MASK_SHAPES = {"mask_aligned": (2, 2, 32, 32, 64), "mask_unaligned": (2, 2, 37, 45, 64)}


def _sdpa_bool_lengths(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                       lengths: torch.Tensor) -> torch.Tensor:
    """SDPA with a [B, 1, 1, S] boolean padding mask built from run-time lengths."""
    keys = torch.arange(k.shape[-2])
    return F.scaled_dot_product_attention(
        q, k, v, attn_mask=(keys[None, :] < lengths[:, None])[:, None, None, :])


def _eager_bias(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                bias: torch.Tensor) -> torch.Tensor:
    return torch.softmax(q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5 + bias, -1) @ v


def _mask_inputs(dims: tuple[int, ...], dtype: torch.dtype, bias: tuple[int, ...] | None,
                 neginf: bool = False) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    """q, k, v and a float bias of shape `bias` (some keys masked by -30000, or -inf when
    `neginf`; key 0 never), or run-time lengths when `bias` is None."""
    b, h, length, keys, e = dims

    def make(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        q, k, v = (torch.randn(b, h, n, e, generator=g).to(dtype) for n in (length, keys, keys))
        if bias is None:
            return q, k, v, torch.tensor([keys, keys // 3])
        values = torch.randn(*bias, generator=g) * 4
        values[torch.rand(*bias, generator=g) < 0.2] = float("-inf") if neginf else -30000.0
        values[..., 0] = 0.0
        return q, k, v, values.to(dtype)

    return make


def attention_mask_cases() -> list[OpCase]:
    """SDPA with a float bias per (batch, head), per head (ALiBi-like), per batch row (a
    padding mask), eager attention with a per-(batch, head) bias, SDPA with a boolean
    padding mask from run-time lengths; an fp32 bias holding -inf (exact in f32)."""
    out: list[OpCase] = []
    sdpa = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)  # noqa: E731
    for dtype in DTYPES:
        for shape_name, (b, h, length, keys, e) in MASK_SHAPES.items():
            dims = (b, h, length, keys, e)
            biases = {"sdpa_bias_bhls": (sdpa, (b, h, length, keys)),
                      "sdpa_bias_1hls": (sdpa, (1, h, length, keys)),
                      "sdpa_bias_b11s": (sdpa, (b, 1, 1, keys)),
                      "eager_bias_bhls": (_eager_bias, (b, h, length, keys))}
            for name, (fn, bias) in biases.items():
                out.append(OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                                  _mask_inputs(dims, dtype, bias)))
            out.append(OpCase("sdpa_bool_lengths", dtype, shape_name,
                              lambda: _Fn(_sdpa_bool_lengths), _mask_inputs(dims, dtype, None)))
    b, h, length, keys, e = MASK_SHAPES["mask_unaligned"]
    out.append(OpCase("sdpa_bias_neginf", torch.float32, "mask_unaligned", lambda: _Fn(sdpa),
                      _mask_inputs(MASK_SHAPES["mask_unaligned"], torch.float32,
                                   (b, h, length, keys), neginf=True)))
    return out


# ---- data movement: strided and negative-step slices, views, padding, indexing --------------
# Pure moves (no arithmetic): the device result must equal eager's bit for bit
# (test/python/test_data_movement.py checks that); here they are judged like every op.

MOVEMENT_SHAPES = ("aligned", "unaligned", "3d")


def _even(x: torch.Tensor) -> torch.Tensor:
    return x[..., :x.shape[-1] // 2 * 2]


def _rotate_interleaved(x: torch.Tensor) -> torch.Tensor:
    """GPT-J / NeoX-style rotation of interleaved pairs (x1, x2) -> (-x2, x1)."""
    x = _even(x)
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


MOVES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "slice_step2": lambda x: x[..., ::2],
    "slice_odd_step2": lambda x: x[..., 1::2],
    "slice_step3_dim0": lambda x: x[::3],
    "rotate_interleaved": _rotate_interleaved,
    "flip_last": lambda x: torch.flip(x, [-1]),
    "flip_dim0": lambda x: torch.flip(x, [0]),
    "flip_all": lambda x: torch.flip(x, list(range(x.dim()))),
    "as_strided_every_other": lambda x: x.as_strided(
        (x.shape[0] // 2, x.shape[-1] // 2), (2 * x.stride(0), 2)),
    "unfold_last": lambda x: x.unfold(-1, 4, 3),
    "pad_leading": lambda x: F.pad(x, (1, 2, 3, 1), value=0.5),
    "pad_crop_leading": lambda x: F.pad(x, (0, 0, -1, 2)),
    "pad_reflect": lambda x: F.pad(x, (2, 3), mode="reflect"),
    "pad_replicate": lambda x: F.pad(x, (2, 3), mode="replicate"),
    # views that change the innermost dim other than by one split or merge: a merge of the
    # changed trailing dims, then a split (movement._merge_then_split, design note 74)
    "view_unit_dims": lambda x: x[..., None, None].reshape(x.shape) * 2,
    "view_regroup": lambda x: x[..., :2, :].reshape(*x.shape[:-2], x.shape[-1], 2),
    # selects along the innermost dim (design note 86): a selective scan's per-step column,
    # and the scan's outputs stacked back along it
    "select_last": lambda x: x[..., 3],
    "select_last_negative": lambda x: x[..., -1] * 2,
    "select_last_stacked": lambda x: torch.stack([x[..., i] for i in (0, 2, 5)], dim=-1),
    # slice assignment (copy + slice_scatter once exported): strided columns, a block of
    # rows, and the gated delta rule's row-prefix update
    "assign_columns_step3": lambda x: _assigned(x, (..., slice(1, 13, 3)), x[..., :4] * 2),
    "assign_rows": lambda x: _assigned(x, (..., slice(1, 3), slice(None)), x[..., -2:, :] * 2),
    "assign_row_prefix": lambda x: _assigned(x, (..., 2, slice(None, 5)), x[..., 2, :5] * 3),
}


def _assigned(x: torch.Tensor, where: tuple, value: torch.Tensor) -> torch.Tensor:
    """A copy of x with `x[where] = value` (an in-place update a model makes)."""
    y = x.clone()
    y[where] = value
    return y


class _BiasTable(torch.nn.Module):
    """A T5-style relative-position bias: a [heads, buckets] table read by a run-time
    [L, S] bucket tensor -> [heads, L, S]."""

    def __init__(self, heads: int = 4, buckets: int = 32):
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(heads, buckets))

    def forward(self, bucket: torch.Tensor) -> torch.Tensor:
        return self.table[:, bucket]


class _Bag(torch.nn.Module):
    def __init__(self, mode: str):
        super().__init__()
        self.bag = torch.nn.EmbeddingBag(40, 100, mode=mode)

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor | None = None) -> torch.Tensor:
        return self.bag(ids, offsets)


# x indexed by a run-time tensor: (fn, index shape from x's shape, index bound from x's shape)
INDEXED: dict[str, tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                         Callable[[tuple[int, ...]], tuple[int, ...]],
                         Callable[[tuple[int, ...]], int]]] = {
    "index_rows_runtime": (lambda x, i: x[i], lambda s: (3, 5), lambda s: s[0]),
    "index_dim1_runtime": (lambda x, i: x[:, i], lambda s: (7,), lambda s: s[1]),
    "index_select_last": (lambda x, i: torch.index_select(x, -1, i), lambda s: (9,),
                          lambda s: s[-1]),
    "gather_last": (lambda x, i: torch.gather(x, -1, i), lambda s: (*s[:-1], 7),
                    lambda s: s[-1]),
    "gather_dim0": (lambda x, i: torch.gather(x, 0, i), lambda s: (5, *s[1:]),
                    lambda s: s[0]),
}


def _scatter_inputs(shape: tuple[int, ...], dim: int, dtype: torch.dtype
                    ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    """x, an index of 5 entries along `dim` (its other dims x's) and src of the index's
    shape: duplicate indices occur, so their contributions are summed."""
    def make(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        ids = list(shape)
        ids[dim] = 5
        return (torch.randn(*shape, generator=g).to(dtype),
                _ids(tuple(ids), shape[dim], torch.int64, g),
                torch.randn(*ids, generator=g).to(dtype))
    return make


def movement_cases() -> list[OpCase]:
    """The moves of `MOVES` on the aligned, unaligned and 3-D shapes; the run-time indexing
    of `INDEXED` with int64 indices (int32 for `gather_last`), both ends of the dim
    included; scatter_add along the last dim and dim 0; a T5 bias table and embedding bags
    (sum, mean) of 2-D ids."""
    out: list[OpCase] = []
    for dtype in DTYPES:
        for shape_name in MOVEMENT_SHAPES:
            shape = SHAPES[shape_name]
            for name, fn in MOVES.items():
                out.append(OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                                  _randn(shape, dtype)))
            for name, (fn, ids, bound) in INDEXED.items():
                index_type = torch.int32 if name == "gather_last" else torch.int64
                out.append(OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                                  lambda g, s=shape, d=dtype, i=ids, b=bound, t=index_type: (
                                      torch.randn(*s, generator=g).to(d),
                                      _ids(i(s), b(s), t, g))))
            for name, dim in (("scatter_add_last", -1), ("scatter_add_dim0", 0)):
                out.append(OpCase(name, dtype, shape_name, lambda dim=dim: _Fn(
                    lambda x, i, v: x.scatter_add(dim, i, v)), _scatter_inputs(shape, dim, dtype)))
        out.append(OpCase("bias_table_runtime", dtype, "aligned",
                          lambda d=dtype: _BiasTable().to(d),
                          lambda g: (_ids((16, 16), 32, torch.int64, g),)))
        out.extend(OpCase(f"embedding_bag_{mode}", dtype, "aligned",
                          lambda m=mode, d=dtype: _Bag(m).to(d),
                          lambda g: (_ids((6, 5), 40, torch.int64, g),))
                   for mode in ("sum", "mean"))
        for shape_name, dims in STACKED_SHAPES.items():
            out.append(OpCase("bmm_stacked_weight_transposed", dtype, shape_name,
                              lambda s=dims, d=dtype: _StackedWeights(*s).to(d),
                              _randn(dims[:3], dtype)))
    return out


# a stack of expert matrices [E, I, H] read transposed by a bmm (inkling's shared experts,
# note 91): E, T, H, I
STACKED_SHAPES = {"aligned": (2, 64, 128, 64), "unaligned": (3, 37, 100, 45)}


class _StackedWeights(torch.nn.Module):
    """`bmm(x, w.transpose(1, 2))` with `w` an [E, I, H] parameter, then the result plus a
    [T, E, I] parameter permuted to [E, T, I]: permutes of 3-D weights, folded into them."""

    def __init__(self, experts: int, tokens: int, hidden: int, inner: int):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(experts, inner, hidden) / hidden ** 0.5)
        self.b = torch.nn.Parameter(torch.randn(tokens, experts, inner))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.bmm(x, self.w.transpose(1, 2)) + self.b.permute(1, 0, 2)


# ---- signals: 1-D convolution and group norm (channels-last on the device) -------------------

SIGNALS = {"signal": (2, 8, 45), "signal_aligned": (1, 64, 24)}  # N, C, L


def _group_norm(groups: int, channels: int) -> torch.nn.Module:
    norm = torch.nn.GroupNorm(groups, channels)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.normal_(0, 0.2)
    return norm


class _Tokens(torch.nn.Module):
    """An audio encoder's front: a 1-D convolution, its channels as the tokens' features
    (`conv(x).transpose(1, 2)`), and back through a 1-D convolution (`t.transpose(1, 2)`):
    both transposes read the channels-last rows as they are stored."""

    def __init__(self, channels: int):
        super().__init__()
        self.a = torch.nn.Conv1d(channels, 32, 3, stride=2)
        self.b = torch.nn.Conv1d(32, 32, 3, padding=1, groups=4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.a(x).transpose(1, 2) * 0.5
        return self.b(tokens.transpose(1, 2)).transpose(1, 2)


class _CausalConv(torch.nn.Module):
    """Mamba's causal depthwise convolution, called functionally: the weight is
    `conv.weight.squeeze(1)` unsqueezed back, padding k - 1 and the tail cut off."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = torch.nn.Conv1d(channels, channels, 4, groups=channels, padding=3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.conv.weight.squeeze(1)
        y = F.conv1d(x, weight.unsqueeze(1), self.conv.bias, padding=3, groups=x.shape[1])
        return y[..., :x.shape[-1]]


class _ShapedWeightConv(torch.nn.Module):
    """A dense convolution whose weight is a parameter stored taps-first ([K, Cin, Cout],
    two taps more than it uses) and brought to [Cout, Cin, K] by permute, slice,
    contiguous and a dtype cast to the input's."""

    def __init__(self, channels: int):
        super().__init__()
        self.taps = torch.nn.Parameter(torch.randn(5, channels, 16) / channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.taps.permute(2, 1, 0)[..., 1:4].contiguous().to(x.dtype)
        return F.conv1d(x, weight, padding=1)


SIGNAL_MODULES: dict[str, Callable[[int], torch.nn.Module]] = {
    "conv1d_k5_s2_p2": lambda c: torch.nn.Conv1d(c, 16, 5, stride=2, padding=2),
    "conv1d_k3_dilation2_groups4": lambda c: torch.nn.Conv1d(c, 16, 3, padding=2, dilation=2,
                                                             groups=4),
    "conv1d_tokens": _Tokens,
    "group_norm_per_channel": lambda c: _group_norm(c, c),
    "group_norm_2": lambda c: _group_norm(2, c),
    # wav2vec2's first feature layer: conv, group norm over each channel, GELU
    "conv1d_gn_gelu": lambda c: torch.nn.Sequential(torch.nn.Conv1d(c, 32, 5, stride=2),
                                                    _group_norm(32, 32), torch.nn.GELU()),
    # depthwise 1-D convolutions (note 84), channels a part of a stick and whole sticks
    "conv1d_depthwise_k5_p2": lambda c: torch.nn.Conv1d(c, c, 5, padding=2, groups=c),
    "conv1d_depthwise_s2_multiplier2": lambda c: torch.nn.Conv1d(c, 2 * c, 3, stride=2,
                                                                 groups=c),
    # convolution weights computed from a parameter by shape ops only (design note 86)
    "conv1d_causal_weight_views": _CausalConv,
    "conv1d_weight_permuted_sliced": _ShapedWeightConv,
}


# hybrid-SSM mixers' convolutions over thousands of channels (design note 91): one signal
# row does not fit a window kernel's LX in any dtype, so the signal runs a row per position
WIDE_SIGNALS = {"signal_wide": (1, 2048, 64), "signal_wide_unaligned": (2, 2050, 67)}
WIDE_SIGNAL_MODULES: dict[str, Callable[[int], torch.nn.Module]] = {
    "conv1d_wide_causal_depthwise": _CausalConv,
    "conv1d_wide_depthwise_k5_s2": lambda c: torch.nn.Conv1d(c, c, 5, stride=2, padding=2,
                                                             groups=c),
    "conv1d_wide_dense_k3": lambda c: torch.nn.Conv1d(c, 16, 3, padding=1),
}


def signal_cases() -> list[OpCase]:
    """1-D convolutions and group norm on NCL signals whose channels are a part of a stick
    (`signal`) or whole fp16 sticks (`signal_aligned`); the wide convolutions of
    `WIDE_SIGNAL_MODULES` on `WIDE_SIGNALS`."""
    out = []
    for dtype in DTYPES:
        for signals, modules in ((SIGNALS, SIGNAL_MODULES),
                                 (WIDE_SIGNALS, WIDE_SIGNAL_MODULES)):
            for shape_name, shape in signals.items():
                for name, make in modules.items():
                    out.append(OpCase(name, dtype, shape_name,
                                      lambda make=make, c=shape[1], d=dtype: make(c).to(d),
                                      _randn(shape, dtype)))
    return out


# ---- top-k routing (spyrec/frontend/moe.py, design note 76) ----------------------------------

def _distinct_rows(shape: tuple[int, ...], dtype: torch.dtype
                   ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    """Each row a permutation of distinct multiples of 1/8 (exact in every dtype), so the
    top-k indices do not depend on a tie order."""
    def make(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        rows = torch.stack([torch.randperm(shape[-1], generator=g)
                            for _ in range(max(1, math.prod(shape[:-1])))])
        return ((rows.reshape(shape).to(torch.float32) - shape[-1] / 2) / 8).to(dtype),
    return make


def routing_cases() -> list[OpCase]:
    """topk along the last dim: the values of rows with many ties (small integers), the
    indices of rows of distinct values (eager's tie order on the CPU is its selection
    algorithm's, not lowest index first: design note 76), k = 1 and 4."""
    out: list[OpCase] = []
    for dtype in DTYPES:
        for shape_name in ("aligned", "unaligned", "3d"):
            shape = SHAPES[shape_name]
            for k in (1, 4):
                out.append(OpCase(f"topk{k}_values_ties", dtype, shape_name,
                                  lambda k=k: _Fn(lambda x: torch.topk(x, k).values * 2),
                                  lambda g, s=shape, d=dtype: (
                                      torch.randint(-2, 3, s, generator=g).to(d),)))
                out.append(OpCase(f"topk{k}_indices", dtype, shape_name,
                                  lambda k=k: _Fn(lambda x: torch.topk(x, k).indices),
                                  _distinct_rows(shape, dtype)))
    return out



# ---- rotary embeddings in complex numbers (design note 92) ---------------------------------
ROTARY_SHAPES = {"aligned": (1, 16, 4, 64), "unaligned": (2, 7, 3, 34)}  # [B, S, H, D]


def _rope_complex(x: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """Llama 4's rotary: x's pairs as complex numbers times polar(1, angle), back to x's
    dtype; the angles [B, S, D/2] broadcast over the heads."""
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    turn = torch.polar(torch.ones_like(angle), angle).unsqueeze(2)
    return torch.view_as_real(pairs * turn).flatten(3).to(x.dtype)


def _rope_inputs(shape: tuple[int, ...], dtype: torch.dtype, special: bool
                 ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    """x and angles of magnitude up to 40 (positions times frequencies); `special`: some
    elements of x NaN and infinite (the rotation spreads them to their pair's partner; a
    16-bit input holds no infinity on Spyre, so there +-1000 instead)."""
    big = float("inf") if dtype == torch.float32 else 1000.0

    def make(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        x = torch.randn(shape, generator=g)
        if special:
            flat = x.view(-1)
            flat[5], flat[70], flat[-1] = big, -big, float("nan")
        angle = torch.rand(*shape[:2], shape[3] // 2, generator=g) * 40
        return x.to(dtype), angle
    return make


def rotary_cases() -> list[OpCase]:
    """`_rope_complex` in every dtype, aligned and unaligned head dims, finite and with
    infinities and NaN in x."""
    return [OpCase("rope_complex" + ("_special" if special else ""), dtype, shape_name,
                   lambda: _Fn(_rope_complex), _rope_inputs(shape, dtype, special))
            for dtype in DTYPES for shape_name, shape in ROTARY_SHAPES.items()
            for special in (False, True)]


# ---- multi-query attention without enable_gqa (Falcon): one key/value head broadcast ------
MQA_SHAPES = {"aligned": ((2, 4, 64, 64), (2, 1, 64, 64)),
              "unaligned": ((1, 3, 7, 40), (1, 1, 7, 40))}  # q [B, H, L, D], k/v [B, 1, S, D]


def mqa_cases() -> list[OpCase]:
    """Causal SDPA of H query heads on one key/value head, by broadcasting (no
    `enable_gqa`), in every dtype, aligned and unaligned."""
    def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def inputs(q: tuple[int, ...], kv: tuple[int, ...], dtype: torch.dtype
               ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
        return lambda g: tuple(torch.randn(s, generator=g).to(dtype) for s in (q, kv, kv))
    return [OpCase("sdpa_mqa_broadcast", dtype, name, lambda: _Fn(sdpa), inputs(q, kv, dtype))
            for dtype in DTYPES for name, (q, kv) in MQA_SHAPES.items()]


# ---- division with a rounding mode (hf:phimoe, hf:deepseek_v4, hf:llama4's mask) ----------
def _div_inputs(shape: tuple[int, ...], dtype: torch.dtype, special: bool
                ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    """Integers in (-10^5, 10^5) over divisors +-[1, 300) of one row (quotients of both
    signs, exact and not), floats over floats; `special`: NaN, +-inf and a zero divisor."""
    def make(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        if not dtype.is_floating_point:
            a = torch.randint(-100000, 100000, shape, generator=g)
            sign = torch.randint(0, 2, (shape[-1],), generator=g) * 2 - 1
            return a.to(dtype), (torch.randint(1, 300, (shape[-1],), generator=g) * sign
                                 ).to(dtype)
        a, b = torch.randn(shape, generator=g) * 100, torch.randn(shape[-1], generator=g) * 3
        if special:
            a.view(-1)[:3] = torch.tensor([float("nan"), float("inf"), -float("inf")])
            b[4] = 0.0
        return a.to(dtype), b.to(dtype)
    return make


def _div_mode(mode: str) -> Callable[[], torch.nn.Module]:
    return lambda: _Fn(lambda a, b: torch.div(a, b, rounding_mode=mode))


def div_mode_cases() -> list[OpCase]:
    """`torch.div(a, b, rounding_mode=...)`: 'floor' and 'trunc' of int32 / int64, 'trunc'
    of every float dtype (with NaN, infinities and a zero divisor in f32), aligned and
    unaligned."""
    forms = [(f"div_{mode}_int", mode, dtype, False) for mode in ("floor", "trunc")
             for dtype in (torch.int32, torch.int64)]
    forms += [("div_trunc", "trunc", dtype, False) for dtype in DTYPES]
    forms += [("div_trunc_special", "trunc", torch.float32, True)]
    return [OpCase(name, dtype, shape_name, _div_mode(mode),
                   _div_inputs(SHAPES[shape_name], dtype, special))
            for shape_name in ("aligned", "unaligned")
            for name, mode, dtype, special in forms]


# ---- `x[mask] = v`: index_put with a boolean mask of x's shape (hf:gemma3) -----------------
def _masked_write(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[x > 0.5] = -2.0
    return y * 3


def _masked_ids(ids: torch.Tensor) -> torch.Tensor:
    ids = ids.clone()
    ids[ids == 3] = 0
    return ids


def _grid(shape: tuple[int, ...], dtype: torch.dtype
          ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    """Values on a grid of 1/4 (exact in every dtype, so `x > 0.5` meets ties), or small
    integers for an integer dtype."""
    if not dtype.is_floating_point:
        return lambda g: (torch.randint(0, 8, shape, generator=g).to(dtype),)
    return lambda g: ((torch.randn(shape, generator=g) * 4).round().div(4).to(dtype),)


def masked_write_cases() -> list[OpCase]:
    """A value written where a comparison holds, into floats of every dtype and into int32 /
    int64 ids (Gemma 3's out-of-vocabulary image tokens set to 0), aligned and unaligned."""
    forms = [("index_put_mask", _masked_write, d) for d in DTYPES]
    forms += [("index_put_mask_ids", _masked_ids, d) for d in (torch.int32, torch.int64)]
    return [OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                   _grid(SHAPES[shape_name], dtype))
            for shape_name in ("aligned", "unaligned") for name, fn, dtype in forms]
