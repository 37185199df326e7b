"""Emulator speed: host wall time of the emulator against PyTorch eager on the CPU.

For each model of the zoo (the demo models of `spyrec.demo`), compiled with
`spyrec.compile`, it measures the host time of one call:

* eager: the model's forward in PyTorch on the CPU (no grad);
* full: the emulator computing the numbers and the profile (`Executable.__call__`, whose
  emulator is built on the first call);
* timing: the emulator in timing-only mode (the profile, no data).

Per call, neither mode re-runs the cycle model: a kernel's schedule depends on its programs
alone and is computed once when the emulator loads the binary. The load times (decode,
validate, hazard check, schedule; in full mode also the weights converted and the
instructions bound) are reported apart, as they are paid once per binary.

Each figure is the fastest of `--repeat` calls after one warm-up call. It prints a Markdown
table; the targets are full within 3x of eager and timing-only at least 20x faster than full.

    .venv/bin/python benchmarks/emulator_speed.py [--repeat 15] [--torch-threads N]
                                                  [--profile full|timing]

`--profile` runs cProfile over the emulator calls of the last model and prints the top
functions, to find the hot spots.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

import spyrec
from spyrec.api import to_numpy
from spyrec.demo import DemoDecoder, DemoDecoderFFN, DemoMLP
from spyrec.runtime.emulator import Emulator


@dataclass(frozen=True)
class Model:
    name: str
    build: Callable[[], torch.nn.Module]
    input_shape: tuple[int, ...]


ZOO = (
    Model("DemoMLP 64x256", lambda: DemoMLP(256), (64, 256)),
    Model("DemoMLP 256x1024", lambda: DemoMLP(1024), (256, 1024)),
    Model("DemoDecoderFFN 2x32x256", lambda: DemoDecoderFFN(256), (2, 32, 256)),
    Model("DemoDecoder 2x32x256", lambda: DemoDecoder(256), (2, 32, 256)),
)


def best_seconds(call: Callable[[], object], repeat: int) -> float:
    """The fastest of `repeat` calls after a warm-up call: on a shared machine the minimum
    is the figure least disturbed by other work (as timeit recommends)."""
    call()  # warm-up: caches, lazily built state
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(model: Model, repeat: int, dtype: torch.dtype) -> dict[str, float]:
    torch.manual_seed(0)
    module = model.build().to(dtype).eval()
    x = torch.randn(model.input_shape).to(dtype)
    exe = spyrec.compile(torch.export.export(module, (x,)))
    with torch.no_grad():
        eager = best_seconds(lambda: module(x), repeat)
    start = time.perf_counter()
    exe(x)  # builds the emulator: weights to device format, programs decoded and checked
    load = time.perf_counter() - start
    full = best_seconds(lambda: exe(x), repeat)
    start = time.perf_counter()
    timing_emulator = Emulator(exe.binary, mode="timing")
    timing_load = time.perf_counter() - start
    timing = best_seconds(timing_emulator.run, repeat)
    instructions = sum(len(p) for k in exe.binary.kernels for p in k.programs.values())
    return {"kernels": len(exe.binary.kernels), "instructions": instructions, "eager": eager,
            "load": load, "full": full, "timing_load": timing_load, "timing": timing}


def profile(model: Model, mode: str, dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    module = model.build().to(dtype).eval()
    x = torch.randn(model.input_shape).to(dtype)
    exe = spyrec.compile(torch.export.export(module, (x,)))
    emulator = Emulator(exe.binary, mode=mode)
    inputs = [to_numpy(x)] if mode == "full" else None
    emulator.run(inputs)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(5):
        emulator.run(inputs)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"])
    parser.add_argument("--profile", choices=["full", "timing"])
    parser.add_argument("--torch-threads", type=int,
                        help="threads for eager PyTorch (default: PyTorch's own choice)")
    args = parser.parse_args()
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    dtype = getattr(torch, args.dtype)
    if args.profile:
        profile(ZOO[-1], args.profile, dtype)
        return
    print(f"torch threads: {torch.get_num_threads()}")
    print(f"| model ({args.dtype}) | kernels | instructions | eager ms | full ms | timing-only "
          "ms | full / eager (target <= 3) | full / timing-only (target >= 20) | load full ms | "
          "load timing-only ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model in ZOO:
        m = measure(model, args.repeat, dtype)
        print(f"| {model.name} | {m['kernels']} | {m['instructions']} | "
              f"{m['eager'] * 1e3:.2f} | {m['full'] * 1e3:.2f} | {m['timing'] * 1e3:.3f} | "
              f"{m['full'] / m['eager']:.1f} | {m['full'] / m['timing']:.0f} | "
              f"{m['load'] * 1e3:.0f} | {m['timing_load'] * 1e3:.0f} |", flush=True)


if __name__ == "__main__":
    main()
