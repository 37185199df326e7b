"""MLP benchmark: compile time per stage, emulated time and roofline ratio.

Runs the demo MLP (Linear -> ReLU -> Linear -> GELU -> Linear) at several sizes and dtypes,
compiles it, runs it on the emulator (full numerics) and prints a Markdown table:

    .venv/bin/python benchmarks/mlp_roofline.py [--quick]

The roofline is the source program's (design note 70): max(its flops as written / peak, its
least off-chip bytes, each input, weight and output moved once, / LPDDR bandwidth) from the
target description; the ratio is roofline time / emulated time (1.0 = at the limit), and
off-chip / min compares the bytes moved with the program's least. The last column is the
ratio against the compiled kernels' own figures (the sum of per-kernel rooflines), which is
what this table showed before note 70.
"""

from __future__ import annotations

import argparse
import time

import torch

from spyrec.api import Executable
from spyrec.demo import DemoMLP
from spyrec.driver import compile_program

CONFIGS = [
    (64, 100, torch.float16),
    (64, 256, torch.float16),
    (64, 256, torch.float32),
    (256, 1024, torch.float16),
    (1024, 2048, torch.float16),
]


def measure(batch: int, features: int, dtype: torch.dtype) -> dict[str, float]:
    torch.manual_seed(0)
    model = DemoMLP(features).to(dtype).eval()
    x = torch.randn(batch, features).to(dtype)
    ep = torch.export.export(model, (x,))
    start = time.perf_counter()
    result = compile_program(ep)
    compile_s = time.perf_counter() - start
    assert result.binary is not None
    exe = Executable(result.binary)
    start = time.perf_counter()
    exe(x)
    run_s = time.perf_counter() - start
    prof = exe.last_profile.to_dict()
    return {
        "compile_s": compile_s,
        "emulate_s": run_s,
        "emulated_us": prof["emulated_us"],
        "roofline_us": prof["roofline_us"],
        "ratio": prof["roofline_ratio"],
        "offchip_vs_min": prof["bytes_ratio"],
        "kernel_ratio": prof["kernel_roofline_ratio"],
        "cores": max(k.num_cores for k in result.binary.kernels),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="only the small configurations")
    args = parser.parse_args()
    configs = CONFIGS[:3] if args.quick else CONFIGS
    print("| batch x features | dtype | max cores | compile s | emulate s | emulated µs "
          "| roofline µs | roofline ratio | off-chip / min | kernels' ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for batch, features, dtype in configs:
        r = measure(batch, features, dtype)
        print(f"| {batch} x {features} | {str(dtype).removeprefix('torch.')} | {r['cores']} "
              f"| {r['compile_s']:.2f} | {r['emulate_s']:.2f} | {r['emulated_us']:.2f} "
              f"| {r['roofline_us']:.2f} | {r['ratio']:.2f} | {r['offchip_vs_min']:.2f} "
              f"| {r['kernel_ratio']:.2f} |")


if __name__ == "__main__":
    main()
