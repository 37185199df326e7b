"""What keeps small models from their roofline: the emulated time of a few sweep models,
split into where it goes.

    .venv/bin/python benchmarks/small_model_limits.py                 # the table below
    .venv/bin/python benchmarks/small_model_limits.py --only hf:llama --dtype fp32
    .venv/bin/python benchmarks/small_model_limits.py --only hf:llama --scale 8

Each model is the model sweep's tiny instance (`benchmarks/sweep_models.py`: 2 layers,
hidden 128, 16 tokens or a 64x64 image), compiled by spyrec and run once on the emulator in
timing mode (the schedule and the profile, no data). The program's roofline is the source
program's (design note 70: its flops at the card's peak or each input, weight and output
moved once at the LPDDR bandwidth, whichever is longer). The gap between the emulated time
and that roofline is split into:

- `compiled`: the compiled kernels' own rooflines summed, minus the program's: work and
  traffic the kernels do beyond the source program (stick padding, im2col, a weight read by
  two kernels, intermediates that go through LPDDR between kernels);
- per kernel, its emulated time minus its own roofline, by what bounds it: `latency` when no
  engine of the kernel (DMA, PT, SFU, ring, the LPDDR channel) is busy for a quarter of the
  kernel's time (too little work to fill a pipeline: fixed DMA and instruction latencies
  dominate), else the busiest engine (`dma`, `pt`, `sfu`, `ring`, `lpddr`).

`--scale N` multiplies the text models' hidden and intermediate sizes (and the head count,
keeping heads of 64) and the sequence length by N, to show how the split moves with size.

Columns: the sum of each kind in µs and as a share of the gap. The script prints a markdown
table (benchmarks/README.md, "What limits small models").
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import sweep_models  # noqa: E402 - the sweep's model builders, beside this script

MODELS = ("hf:llama", "hf:gpt2", "hf:bert", "hf:t5", "hf:vit", "nn:resnet",
          "nn:gpt-masked-fill")
LATENCY_BOUND = 0.25  # below this busy fraction on every engine a kernel is latency-bound
KINDS = ("compiled", "latency", "dma", "pt", "sfu", "ring", "lpddr")


def measure(name: str, variant: str) -> dict[str, Any]:
    """The profile of one model's run, split as the module docstring says."""
    import torch

    import spyrec
    from spyrec.api import Executable

    case = next(c for c in sweep_models.all_cases() if c.name == name)
    built = sweep_models.build(case, variant)
    program = torch.export.export(built.module, built.example)
    exe = spyrec.compile(program, cache=False)
    timed = Executable(exe.binary, mode="timing")
    timed(*built.run)
    profile = timed.last_profile
    assert profile is not None
    summary = profile.to_dict()
    split: dict[str, float] = defaultdict(float)
    split["compiled"] = max(0.0, summary["kernel_roofline_us"] - summary["roofline_us"])
    for kernel in summary["kernels"]:
        gap = max(0.0, kernel["emulated_us"] - kernel["roofline_us"])
        busy = kernel["utilisation"]
        engine, fraction = max(busy.items(), key=lambda kv: kv[1])
        split["latency" if fraction < LATENCY_BOUND else engine] += gap
    return {"model": name, "variant": variant, "emulated_us": summary["emulated_us"],
            "roofline_us": summary["roofline_us"], "ratio": summary["roofline_ratio"],
            "kernels": len(summary["kernels"]), "split": dict(split)}


def scale_sizes(factor: int) -> None:
    """Make the sweep's text models `factor` times wider and longer (heads stay 64 wide)."""
    sizes = sweep_models.SIZES
    for key, value in list(sizes.items()):
        if value in (128, 256) or key in ("num_attention_heads", "n_head", "n_heads"):
            sizes[key] = value * factor
    sweep_models.SEQ *= factor


def table(rows: list[dict[str, Any]]) -> str:
    """The markdown table of `rows`."""
    head = ("| model | dtype | kernels | emulated µs | roofline µs | ratio | "
            + " | ".join(KINDS) + " |")
    lines = [head, "|" + "---|" * (6 + len(KINDS))]
    for r in rows:
        gap = sum(r["split"].values()) or 1.0
        cells = [f"{r['split'].get(k, 0.0):.1f} ({100 * r['split'].get(k, 0.0) / gap:.0f} %)"
                 for k in KINDS]
        lines.append(f"| {r['model']} | {r['variant']} | {r['kernels']} | "
                     f"{r['emulated_us']:.1f} | {r['roofline_us']:.2f} | {r['ratio']:.2f} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Where small models' emulated time goes against the program roofline.")
    parser.add_argument("--only", action="append", default=[], metavar="NAME")
    parser.add_argument("--dtype", choices=("fp16", "fp32"), default="fp16")
    parser.add_argument("--scale", type=int, default=1)
    args = parser.parse_args(argv)
    if args.scale > 1:
        scale_sizes(args.scale)
    rows = []
    for name in args.only or MODELS:
        try:
            rows.append(measure(name, args.dtype))
        except Exception as exc:  # noqa: BLE001 - one model's failure is reported, not fatal
            print(f"{name}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}",
                  file=sys.stderr)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
