"""Symbolic sizes: emulated device time of one .spyre at several actual sizes.

A dim exported with `torch.export.Dim` is compiled once at its upper bound (design note
32). With the trip-count guards of note 49 the host's program correction patches, per
call, the loops that hold work only padded positions need, so the device time falls with
the actual size. For each model this compiles one `.spyre` and runs it on the emulator in
timing mode (`Emulator.run(sizes=...)`, the schedule of the patched programs) at several
sizes; "upper bound" is the time every size cost before (the whole program, which the
binary still runs at its maximum). It also checks each size once in full mode against
PyTorch eager (max abs error; tolerance as `spyrec run --check`) and reports the patch
table's size and the seconds the guard analysis added to the compile.

    .venv/bin/python benchmarks/symbolic_sizes.py [--only decoder|mlp]
"""

from __future__ import annotations

import argparse
import os
import time

import torch

import spyrec
from spyrec.demo import DemoDecoder
from spyrec.passes.spyrecode.spyre_place_guards import SpyrePlaceGuards
from spyrec.runtime.emulator import Emulator


def _decoder():
    return DemoDecoder(256, 2).half().eval(), (2, 256, 256), 1


def _mlp():
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(),
                                torch.nn.Linear(1024, 256)).half().eval()
    return model, (512, 256), 0


MODELS = {"decoder": ("DemoDecoder(256, 2), [2, seq, 256], seq = Dim(max=256)", _decoder),
          "mlp": ("MLP 256-1024-256 over tokens = Dim(max=512)", _mlp)}


def measure(name: str) -> None:
    title, build = MODELS[name]
    torch.manual_seed(0)
    model, shape, dim = build()
    upper = shape[dim]
    example = list(shape)
    example[dim] = 16
    ep = torch.export.export(model, (torch.randn(*example).half(),),
                             dynamic_shapes=({dim: torch.export.Dim("s", min=1, max=upper)},))
    placed = {}
    place = SpyrePlaceGuards.apply

    def timed(self, ctx, op):
        start = time.perf_counter()
        place(self, ctx, op)
        placed["s"] = time.perf_counter() - start

    SpyrePlaceGuards.apply = timed
    try:
        start = time.perf_counter()
        exe = spyrec.compile(ep)
        compile_s = time.perf_counter() - start
    finally:
        SpyrePlaceGuards.apply = place
    binary = exe.binary
    (symbol,) = binary.symbols
    emulator = Emulator(binary, mode="timing")
    whole = emulator.run()[1].to_dict()["emulated_us"]
    print(f"\n{title}: {len(binary.kernels)} kernels, {len(binary.patches)} patch-table "
          f"entries, compile {compile_s:.1f} s of which guards {placed.get('s', 0):.1f} s\n")
    print("| size | emulated µs | upper bound µs | ratio | max abs error vs eager |")
    print("|---|---|---|---|---|")
    for size in sorted({1, 2, 17, upper // 4, upper // 4 + 1, upper // 2 + 3, upper}):
        us = emulator.run(sizes={symbol: size})[1].to_dict()["emulated_us"]
        shape_now = list(shape)
        shape_now[dim] = size
        x = torch.randn(*shape_now).half()
        with torch.no_grad():
            out = exe(x)
            assert isinstance(out, torch.Tensor)  # one output
            err = (out.float() - model(x).float()).abs().max().item()
        print(f"| {size} | {us:.1f} | {whole:.1f} | {us / whole:.2f} | {err:.4f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--only", choices=sorted(MODELS), action="append")
    args = parser.parse_args()
    os.environ.setdefault("SPYREC_CACHE", "0")
    for name in args.only or list(MODELS):
        measure(name)


if __name__ == "__main__":
    main()
