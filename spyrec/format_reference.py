"""Eager in the device's storage format: the yardstick of the verdict's second look for fp16.

Spyre holds fp16 tensors in DL16 (9 fraction bits to fp16's 10; docs/numerics.md). A model
whose outputs amplify rounding errors lies further from exact arithmetic on the device than
in eager fp16 for two reasons that are the format's, not the compiler's: the weights and
inputs are rounded once more on the way in (eager reads them exactly), and every rounding
point rounds with twice fp16's unit. `run_in_device_format` measures what the format alone
costs: the module run by PyTorch itself with its weights, buffers and inputs rounded to DL16
and every fp16 result of every op rounded to DL16 (eager's rounding points, the device's
format). `spyrec.verdict.check_outputs(..., format_reference=...)` holds the device to it.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

from spyrec.runtime.dl16 import round_dl16


def to_dl16(value: Any) -> Any:
    """An fp16 tensor rounded to the nearest value DL16 holds (kept as fp16: every DL16 value
    in fp16's range is an fp16 value; beyond it, as fp16 stores it, +-inf); anything else as
    it is."""
    if not isinstance(value, torch.Tensor) or value.dtype != torch.float16:
        return value
    rounded = np.asarray(round_dl16(value.detach().float().cpu().numpy()), dtype=np.float32)
    return torch.from_numpy(rounded.reshape(value.shape)).to(torch.float16)


class _RoundResults(TorchDispatchMode):
    """Every fp16 result of every ATen op rounded to DL16."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None
                           ) -> Any:
        return tree_map(to_dl16, func(*args, **(kwargs or {})))


def run_in_device_format(module: torch.nn.Module, inputs: tuple[Any, ...]) -> Any:
    """`module(*inputs)` by PyTorch with fp16 held in DL16: a copy of the module with its
    fp16 parameters and buffers rounded, the inputs rounded, every fp16 op result rounded.
    The module itself is not changed."""
    rounded = copy.deepcopy(module)
    with torch.no_grad():
        for tensor in [*rounded.parameters(), *rounded.buffers()]:
            if tensor.dtype == torch.float16:
                tensor.copy_(to_dl16(tensor))
        args = tuple(to_dl16(x) for x in inputs)
        with _RoundResults():
            return rounded(*args)
