"""The op coverage matrix's shared parts: the case type, shape families, inputs, the
elementwise tables and the runner."""

from __future__ import annotations

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


def elementwise_cases() -> list[OpCase]:
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
