"""Special values through the op coverage matrix: NaN, +-inf, +-0 and values that overflow.

Every op of `spyrec.opcases` (one shape family each: `aligned`, and `broadcast`, `image`,
`heads16` where those are the op's families) runs on inputs carrying special values at
fixed places, and the device's result is compared with eager by class (design note 62):
NaN where eager has NaN, the same infinities, finite values within tolerance.

The special values of a float input, placed in its rows (a row is the innermost dim):

- row 0: a NaN in column 3;
- row 1: +inf in column 5, row 2: -inf in column 7 (fp32 only: a 16-bit input holding an
  infinity is refused at run time, since DL16 has none, `test_ieee.py`);
- row 3: zeros, +0 and -0 alternating;
- row 4: a large positive value in column 9, row 5: its negative in column 11 (fp16 and
  bf16: 60000, near fp16's largest finite value, so squares and exps overflow fp16; bf16
  values beyond DL16's range, 8.57e9, are refused as inputs like infinities; fp32: 1e30);
- row 6: -inf throughout (fp32 only), the row a mask hides completely.

An input with fewer rows takes the rows it has; integer inputs (ids, positions) are left
as they are. The class criterion is the point: an output that holds 1e30 has an rms, and so
element bounds, to match, which the other finite values meet easily (the ordinary op cases
hold those to their real bounds).

`KNOWN` lists the ops whose device result differs from eager's on special values, each with
the reason, and `KNOWN_16BIT` those that differ in 16-bit programs only;
`test_special_values.py` requires the others to match and the fp32 ones of `KNOWN` to still
differ (so the list cannot outlive the deviation).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from spyrec.opcases import OpCase, cases

SPECIAL_SHAPES = ("aligned", "broadcast", "image", "heads16")
LARGE = {torch.float16: 60000.0, torch.bfloat16: 60000.0, torch.float32: 1e30}

# op -> why its device result differs from eager's on special values (design notes 62, 63)
KNOWN: dict[str, str] = {
    "conv2d_groups2": "a grouped convolution runs as a dense one (zero weights between the "
                      "groups), and 0 times a NaN or an infinity is NaN: a NaN reaches the "
                      "other group's channels too",
    "gelu": "eager's fp32 GELU at -inf is NaN or -0 depending on the CPU's vector kernel "
            "(NaN on AVX2, as the SFU's 0.5 x erfc(-x / sqrt 2): -inf * 0); where eager "
            "gives -0 the classes differ",
    **dict.fromkeys(
        ("to_int32", "to_int64"),
        "a float NaN, infinity or value beyond the integer range cast to an integer is "
        "undefined in PyTorch (a C++ conversion: x86 gives the lowest integer); the device "
        "gives 0 there, and every in-range value exactly"),
    "topk4_indices": "the row of zeros ties: eager's CPU topk orders equal values as its "
                     "selection algorithm leaves them (std::nth_element), the device lowest "
                     "index first (design note 76)",
    "scatter_topk_values": "rows with several -inf tie: eager's CPU topk picks among equal "
                           "values as its selection algorithm leaves them, the device the "
                           "lowest index first, so the value lands in another tied place "
                           "(as topk4_indices; design notes 76, 97)",
}

# KNOWN ops whose eager result on special values depends on the CPU PyTorch runs on: they
# may match on one machine and differ on another, so a match does not retire them
CPU_DEPENDENT = {"gelu"}


# ops that compute with integers cast from their float input: the binary limits the input's
# magnitude (design note 85), so an infinity or an overflowing value is refused at run time
# by name (`test_int_range.py`) rather than computed
LIMITED = {"int32_to_int64", "int64_to_int32"}


# ops whose device result differs from eager's only in 16-bit programs, where no infinity
# is injected (so what a NaN makes of the other values shows) and fp16 overflows early
KNOWN_16BIT: dict[str, str] = {
    "cos": "cos(x * 3) with x = 60000: eager's fp16 product is inf (cos gives NaN), the "
           "device's fp32 tile holds 180000 (DL16's range is wider than fp16's)",
    "sin": "60000 is not a DL16 value (9 fraction bits): the device reads 60032, and sin "
           "of an argument that large turns that rounding into a different result",
    "conv2d_of_transpose": "eager's fp16 convolution gives inf where the exact result is "
                           "finite and within fp16's range (12641 in fp32 at [0, 0, 8, 3]: "
                           "eager's partial sums of the +-60000 inputs overflow fp16); the "
                           "device accumulates in fp32 and is within 0.3 % of fp32",
    "tan": "tan(x / 4) with x = 60000: 60000 is not a DL16 value (9 fraction bits), the "
           "device reads 60032, and tan of an argument that large turns that rounding into "
           "a different result (as sin)",
    "asinh": "asinh(3 x) with x = 60000: eager's fp16 product is inf (asinh gives inf), the "
             "device's fp32 tile holds 180000 (asinh 12.8; DL16's range is wider than fp16's)",
    "cube": "bf16's range is wider than DL16's: 60000^3 = 2.2e14 is a bf16 value but beyond "
            "DL16's largest finite 8.57e9, so the device's result is NINF (NaN)",
}


def known(op: str, dtype: torch.dtype) -> str:
    """Why `op` in `dtype` differs from eager on special values, or "" if it must not."""
    return KNOWN.get(op, "") or (KNOWN_16BIT.get(op, "") if dtype != torch.float32 else "")


@dataclass(frozen=True)
class SpecialGroup:
    """Op cases of one dtype and shape family that take the same inputs, compiled as one
    program with one output per op (one compile instead of one per op)."""

    cases: tuple[OpCase, ...]

    @property
    def id(self) -> str:
        first = self.cases[0]
        ops = "+".join(c.op for c in self.cases)
        return f"{str(first.dtype).removeprefix('torch.')}-{first.shape}-{ops}"

    def module(self) -> torch.nn.Module:
        return _Outputs([c.module() for c in self.cases])

    def inputs(self, g: torch.Generator) -> tuple[torch.Tensor, ...]:
        return tuple(inject(t) for t in self.cases[0].inputs(g))


class _Outputs(torch.nn.Module):
    def __init__(self, modules: list[torch.nn.Module]):
        super().__init__()
        self.ops = torch.nn.ModuleList(modules)

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(m(*inputs) for m in self.ops)


def inject(t: torch.Tensor, large: bool = True) -> torch.Tensor:
    """`t` with the special values of the module docstring in its rows (without the large
    values when `large` is False)."""
    if not t.dtype.is_floating_point or t.numel() < 16:
        return t
    out = t.detach().contiguous().clone()
    rows = out.view(-1, out.shape[-1])  # writes land in `out`
    n, cols = rows.shape
    wide = out.dtype == torch.float32
    places: list[tuple[int, int, float]] = [(0, 3, float("nan"))]
    if wide:
        places += [(1, 5, float("inf")), (2, 7, float("-inf"))]
    if large:
        places += [(4, 9, LARGE[out.dtype]), (5, 11, -LARGE[out.dtype])]
    for row, col, value in places:
        rows[row % n, col % cols] = value
    if n > 3:
        rows[3] = 0.0
        rows[3, 1::2] = -0.0
    if wide and n > 6:
        rows[6] = float("-inf")
    return out


def special_groups(group_size: int = 8) -> list[SpecialGroup]:
    """The op cases of `SPECIAL_SHAPES` (known gaps of the matrix left out), grouped by
    dtype, shape family and inputs: cases whose input makers give the same tensors share a
    program, up to `group_size` ops each."""
    groups: dict[tuple[object, ...], list[OpCase]] = {}
    for case in cases():
        if case.shape not in SPECIAL_SHAPES or case.refused or case.op in LIMITED:
            continue
        made = case.inputs(torch.Generator().manual_seed(0))
        key = (case.dtype, case.shape,
               tuple((t.dtype, tuple(t.shape), t.float().sum().item()) for t in made))
        groups.setdefault(key, []).append(case)
    return [SpecialGroup(tuple(members[i:i + group_size]))
            for members in groups.values() for i in range(0, len(members), group_size)]
