"""Tolerances for comparing device results with PyTorch eager, derived from numerics.

On Spyre, fp16 and bf16 data are rounded to DL16 (9 fraction bits, unit roundoff 2^-10)
when they enter the device and when a kernel writes them; bf16 keeps its own 7 fraction bits
on the host side (2^-8); fp32 stays fp32 (2^-24). A result reached through a reduction of
depth K carries a rounding error that grows like sqrt(K) for independent roundings (the
inputs of each product are rounded once; the fp32 accumulation adds far less). So for an
output whose largest magnitude is `scale`, reached through reductions of total depth `depth`
and `steps` rounding points (ops that write DL16):

    atol = 4 * u * (sqrt(depth) + sqrt(steps)) * scale      rtol = 4 * u * sqrt(steps)

Rounding points along a program also combine like a random walk (independent roundings of
values that are not correlated), hence sqrt(steps); a first version added them linearly and
was up to 100x looser than the errors measured on 28-kernel decoders. The factor 4 covers the
two-sided rounding of eager's own fp16 output and the constant of the random-walk estimate;
tests assert with these bounds, never looser ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

UNIT_ROUNDOFF = {"float16": 2.0**-10, "bfloat16": 2.0**-8, "float32": 2.0**-24}


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float

    def allows(self, error: float, reference: float) -> bool:
        return error <= self.atol + self.rtol * reference


def tolerance(dtype: str, depth: int, steps: int, scale: float) -> Tolerance:
    """Tolerance for results of dtype `dtype` (torch dtype name without 'torch.')."""
    u = UNIT_ROUNDOFF[dtype]
    steps = max(steps, 1)
    return Tolerance(atol=4 * u * (math.sqrt(max(depth, 1)) + math.sqrt(steps)) * scale,
                     rtol=4 * u * math.sqrt(steps))
