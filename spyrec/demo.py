"""`spyrec demo`: the embedded default model, end to end, with a short report.

Builds an MLP (Linear -> ReLU -> Linear -> GELU -> Linear) with random weights, exports it
with torch.export, compiles it, runs it on the emulator and compares with PyTorch eager.
"""

from __future__ import annotations

import time

import torch
from rich.console import Console
from rich.table import Table

from spyrec.api import Executable


class DemoMLP(torch.nn.Module):
    """The demo model."""

    def __init__(self, features: int):
        super().__init__()
        self.fc1 = torch.nn.Linear(features, features)
        self.fc2 = torch.nn.Linear(features, features)
        self.fc3 = torch.nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc1(x))
        x = torch.nn.functional.gelu(self.fc2(x))
        return self.fc3(x)


def run_demo(dtype: str, features: int, batch: int) -> bool:
    """Run the demo; print the report; True when the results match eager."""
    from spyrec.cli import compare_outputs
    from spyrec.driver import compile_program

    console = Console(stderr=False)
    torch_dtype = getattr(torch, dtype)
    torch.manual_seed(0)
    model = DemoMLP(features).to(torch_dtype).eval()
    x = torch.randn(batch, features).to(torch_dtype)
    times: dict[str, float] = {}
    with console.status("exporting with torch.export"):
        start = time.perf_counter()
        ep = torch.export.export(model, (x,))
        times["export"] = time.perf_counter() - start
    with console.status("compiling") as status:
        def on_stage(stage: str, seconds: float) -> None:
            times[stage] = seconds
            status.update(f"compiling: {stage} done")
        result = compile_program(ep, on_stage=on_stage)
    assert result.binary is not None
    exe = Executable(result.binary)
    with console.status("running on the Spyre emulator"):
        start = time.perf_counter()
        out = exe(x)
        times["emulate"] = time.perf_counter() - start
    with torch.no_grad():
        expected = model(x)
    table = Table(title=f"spyrec demo: MLP {batch}x{features} {dtype}")
    table.add_column("stage")
    table.add_column("host time", justify="right")
    for stage, seconds in times.items():
        table.add_row(stage, f"{seconds * 1000:.1f} ms")
    console.print(table)
    ok = compare_outputs(expected, out, exe)
    prof = exe.last_profile.to_dict()
    ratio = prof["roofline_us"] / prof["emulated_us"] if prof["emulated_us"] else 0.0
    console.print(f"kernels: {len(result.binary.kernels)}, cores used: "
                  f"{', '.join(str(k.num_cores) for k in result.binary.kernels)}")
    console.print(f"emulated time {prof['emulated_us']:.2f} us; roofline {prof['roofline_us']:.2f} "
                  f"us; roofline ratio {ratio:.2f}")
    console.print("[green]match[/green]" if ok else "[red]MISMATCH[/red]")
    return ok
