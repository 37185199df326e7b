"""The compiler's cost model against the emulator's clock on the MLP benchmark kernels.

spyre-tile records the predicted cycles of the tiling it chose; the emulator measures the
same kernel. They share the target description, so they must agree within 15 %
(benchmarks/README.md and docs/design.md record the measured ratios).
"""

from __future__ import annotations

import pytest
import torch

from spyrec.api import Executable
from spyrec.demo import DemoMLP
from spyrec.driver import compile_program
from spyrec.target import DEFAULT_TARGET


@pytest.mark.parametrize("rows,features,dtype", [
    (64, 100, torch.float16),
    (64, 256, torch.float16),
    (256, 1024, torch.float16),
    (256, 512, torch.float32),
])
def test_predicted_cycles_within_15_percent(rows, features, dtype):
    torch.manual_seed(0)
    model = DemoMLP(features).to(dtype).eval()
    x = torch.randn(rows, features).to(dtype)
    result = compile_program(torch.export.export(model, (x,)))
    predicted = [
        op.attributes["spyre.decisions"].data["spyre.tiling"].data["predicted_cycles"].value.data
        for op in result.module.walk() if op.name == "spyrecode.program"]
    exe = Executable(result.binary)
    exe(x)
    measured = [k["emulated_us"] * DEFAULT_TARGET.clock_hz / 1e6
                for k in exe.last_profile.to_dict()["kernels"]]
    assert len(predicted) == len(measured) == 3
    for p, m in zip(predicted, measured):
        assert 0.85 <= p / m <= 1.15, (p, m)
