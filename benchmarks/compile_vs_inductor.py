"""spyrec's compile time per stage, cold and from a warm compile cache, next to
torch.compile's (Inductor, CPU) cold compile time, for the demo models.

    .venv/bin/python benchmarks/compile_vs_inductor.py [--models mlp decoder ...] [--no-inductor]

spyrec: `spyrec.compile` of the exported program (export time not included), once with an
empty compile cache (the stages: frontend, graph, ktir, spyrecode, emit) and once more from
the cache it filled. Inductor: `torch.compile(model)` and its first call, in a fresh process
with an empty Inductor cache (TORCHINDUCTOR_CACHE_DIR), so nothing is reused; the time is
the first call's less an eager call's. All in fp32 (Inductor's CPU code generation for fp16
is not what it is tuned for), batch and sizes as `spyrec demo` uses them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

MODELS = ("mlp", "decoder-ffn", "decoder", "convnet")


def build(name: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    from spyrec.demo import DemoConvNet, DemoDecoder, DemoDecoderFFN, DemoMLP

    torch.manual_seed(0)
    if name == "mlp":
        return DemoMLP(256).eval(), (torch.randn(64, 256),)
    if name == "decoder-ffn":
        return DemoDecoderFFN(256, 2).eval(), (torch.randn(2, 32, 256),)
    if name == "decoder":
        return DemoDecoder(256, 2).eval(), (torch.randn(2, 32, 256),)
    if name == "convnet":
        return DemoConvNet().eval(), (torch.randn(2, 3, 32, 32),)
    raise SystemExit(f"unknown model {name!r}; choose from {', '.join(MODELS)}")


def spyrec_times(name: str) -> dict[str, float]:
    from spyrec.cache import CompileCache
    from spyrec.driver import compile_program

    model, inputs = build(name)
    program = torch.export.export(model, inputs)
    cache = CompileCache(Path(tempfile.mkdtemp(prefix="spyrec-cache-")))
    start = time.perf_counter()
    cold = compile_program(program, cache=cache)
    times = {f"spyrec {k}": v for k, v in cold.stage_seconds.items()}
    times["spyrec cold"] = time.perf_counter() - start
    start = time.perf_counter()
    warm = compile_program(program, cache=cache)
    assert warm.cached
    times["spyrec warm"] = time.perf_counter() - start
    return times


def inductor_seconds(name: str) -> float:
    """Cold torch.compile time of model `name`, measured in a fresh process."""
    code = (f"import sys, time, torch; sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
            "from compile_vs_inductor import build\n"
            f"model, inputs = build({name!r})\n"
            "with torch.no_grad():\n"
            "    start = time.perf_counter(); model(*inputs); eager = time.perf_counter() - start\n"
            "    compiled = torch.compile(model)\n"
            "    start = time.perf_counter(); compiled(*inputs)\n"
            "    print(time.perf_counter() - start - eager)\n")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=tempfile.mkdtemp(prefix="inductor-"))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, check=False)
    if result.returncode:
        raise RuntimeError(f"Inductor failed on {name}: {result.stderr[-2000:]}")
    return float(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--no-inductor", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = parser.parse_args()
    rows = []
    header = ("| model (fp32) | frontend s | graph s | ktir s | spyrecode s | emit s "
              "| spyrec cold s | spyrec warm s | Inductor cold s | Inductor / spyrec cold |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for name in args.models:
        times = spyrec_times(name)
        if not args.no_inductor:
            times["inductor cold"] = inductor_seconds(name)
        rows.append({"model": name, **times})
        stages = [times.get(f"spyrec {s}", 0.0) for s in
                  ("frontend", "graph", "ktir", "spyrecode", "emit")]
        inductor = times.get("inductor cold")
        ratio = f"{inductor / times['spyrec cold']:.0f}x" if inductor else "-"
        print(f"| {name} | " + " | ".join(f"{s:.2f}" for s in stages)
              + f" | {times['spyrec cold']:.2f} | {times['spyrec warm']:.3f} | "
              + (f"{inductor:.1f}" if inductor else "-") + f" | {ratio} |", flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
