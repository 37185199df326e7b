"""Compile time per stage for decoder FFN stacks of growing depth.

Builds `DemoDecoderFFN` stacks (RMS norm + SwiGLU FFN + residual per layer) with random
weights, exports each with torch.export, compiles it to a .spyre and prints a Markdown
table of the host seconds per stage and per layer:

    .venv/bin/python benchmarks/compile_time.py [--hidden 1024] [--layers 1 2 4 8]
"""

from __future__ import annotations

import argparse
import time

import torch

from spyrec.demo import DemoDecoderFFN
from spyrec.driver import compile_program

STAGES = ("frontend", "graph", "ktir", "spyrecode", "emit")


def measure(layers: int, hidden: int, rows: int) -> dict[str, float]:
    torch.manual_seed(0)
    model = DemoDecoderFFN(hidden, layers).half().eval()
    x = torch.randn(1, rows, hidden).half()
    start = time.perf_counter()
    ep = torch.export.export(model, (x,))
    export_s = time.perf_counter() - start
    result = compile_program(ep)
    assert result.binary is not None
    instructions = sum(len(p) for k in result.binary.kernels for p in k.programs.values())
    return {"export": export_s, **result.stage_seconds, "instructions": instructions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--rows", type=int, default=128, help="sequence length (batch 1)")
    parser.add_argument("--layers", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()
    print(f"hidden {args.hidden}, FFN {2 * args.hidden}, {args.rows} rows, fp16")
    print("| layers | export s | " + " | ".join(f"{s} s" for s in STAGES)
          + " | total s | s / layer | instructions |")
    print("|---|---|" + "---|" * len(STAGES) + "---|---|---|")
    for layers in args.layers:
        r = measure(layers, args.hidden, args.rows)
        total = sum(r[s] for s in STAGES)
        print(f"| {layers} | {r['export']:.2f} | " + " | ".join(f"{r[s]:.2f}" for s in STAGES)
              + f" | {total:.2f} | {total / layers:.2f} | {int(r['instructions'])} |")


if __name__ == "__main__":
    main()
