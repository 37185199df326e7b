"""Integer predicates, broadcasting, 0-d operands, float predicates, casts, torch.nn's
activations and division with a rounding mode."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from spyrec.opcases.core import DTYPES, SHAPES, OpCase, _coarse, _Fn, _randn

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
    out = [OpCase(name, dtype, shape_name, _div_mode(mode),
                  _div_inputs(SHAPES[shape_name], dtype, special))
           for shape_name in ("aligned", "unaligned")
           for name, mode, dtype, special in forms]
    # Python's modulus and floor division of integers, by a tensor and by numbers of both
    # signs (hashing token ids into buckets; position // chunk); a float remainder is
    # fmod-based in eager and refused
    ints: dict[str, Callable[..., torch.Tensor]] = {
        "remainder_int": lambda a, b: a % b,
        "remainder_scalar_int": lambda a, b: (a % 7) * 3 + a % -13,
        "floor_div_scalar_int": lambda a, b: a // 13 + torch.div(a, -9, rounding_mode="trunc"),
    }
    for shape_name in ("aligned", "unaligned"):
        out += [OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                       _div_inputs(SHAPES[shape_name], dtype, False))
                for name, fn in ints.items() for dtype in (torch.int32, torch.int64)]
    out.append(OpCase("remainder_float", torch.float32, "unaligned",
                      lambda: _Fn(lambda a, b: a % b),
                      _div_inputs(SHAPES["unaligned"], torch.float32, False),
                      refused="eager's float remainder is fmod-based"))
    return out
