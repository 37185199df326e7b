"""Compile time per stage for decoder stacks of growing depth.

Two models, random weights, fp16, batch 1:

* `ffn` (default): `DemoDecoderFFN` stacks, RMS norm + SwiGLU FFN (hidden 1024 -> 2048 ->
  1024) + residual per layer, 128 rows.
* `granite`: Granite-3.3-8B-shaped decoder layers (`spyrec.zoo.granite_stack`, the zoo's
  rewrite of Hugging Face's `GraniteModel`: hidden 4096, 32 query heads and 8 key/value
  heads of 128, MLP 12800, RMS norms, rotary embeddings, causal SDPA, Granite's embedding,
  residual and attention multipliers, a final norm), a sequence of 128 tokens given as
  embeddings. By default every layer is the same module, so
  the stack holds one layer's weights (400 MB) however deep it is and 40 layers fit this
  24 GB machine; the compiler stores such tied weights once and does the same work per
  layer otherwise. `--distinct-weights` gives each layer its own (400 MB per layer, twice
  over while the compile copies and transposes them).

Each depth is exported with torch.export and compiled to a .spyre image in memory; the
table gives host seconds per stage and per layer, the instructions of all cores, the
kernels and how many distinct schedule templates they needed. `--plain` schedules with the
per-core interpreter instead of templates (the compiler before design note 26).
`--warm` compiles into an empty compile cache and then once more from it (warm s: hashing
the program and reading the `.spyre` back, design note 39). `--emulate` also loads the binary
into the emulator in timing-only mode and runs it once
(load: decode, validation, hazard check and schedule, each distinct program once and the
rest relocated, design note 35; `--no-reuse` loads every kernel instruction by instruction,
the emulator before that note):

    .venv/bin/python benchmarks/compile_time.py [--model granite] [--layers 1 2 4 8]
                                                [--warm] [--emulate [--no-reuse]] [--plain]
                                                [--profile out.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import torch

from spyrec.cache import CompileCache
from spyrec.demo import DemoDecoderFFN
from spyrec.dialects.spyrecode import ProgramOp
from spyrec.driver import CompileResult, compile_program
from spyrec.target.container import EncodedPrograms
from spyrec.zoo import granite_stack

STAGES = ("frontend", "graph", "ktir", "spyrecode", "emit")


def ffn(layers: int, rows: int, hidden: int) -> tuple[torch.nn.Module, torch.Tensor]:
    return DemoDecoderFFN(hidden, layers).half().eval(), torch.randn(1, rows, hidden).half()


def _instructions(programs: Mapping[int, object]) -> int:
    """The instructions of a kernel's cores; packed cores are counted from their headers
    (decoding a 40-layer stack's seven million instructions took longer than compiling)."""
    if isinstance(programs, EncodedPrograms):
        return sum(programs.instructions(core) for core in programs)
    return sum(len(p) for p in programs.values())  # type: ignore[arg-type]


def _count(result: CompileResult) -> tuple[int, int, int]:
    """(instructions, kernels, distinct schedule templates) of a compile."""
    assert result.binary is not None and result.module is not None
    instructions = sum(_instructions(k.programs) for k in result.binary.kernels)
    programs = [p for p in result.module.body.block.ops if isinstance(p, ProgramOp)]
    templates = {p.attributes["spyre.template"].data for p in programs  # type: ignore[attr-defined]
                 if "spyre.template" in p.attributes}
    return instructions, len(programs), len(templates)


def measure(args: argparse.Namespace, layers: int) -> dict[str, float]:
    torch.manual_seed(0)
    if args.model == "granite":
        model, (x,) = granite_stack(layers, args.rows, args.distinct_weights)
    else:
        model, x = ffn(layers, args.rows, args.hidden)
    start = time.perf_counter()
    ep = torch.export.export(model, (x,))
    export_s = time.perf_counter() - start
    del model
    options: dict[str, dict[str, object]] | None = (
        {"spyre-schedule-dataflow": {"templates": False}} if args.plain else None)
    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    cache = CompileCache(Path(tempfile.mkdtemp(prefix="spyrec-cache-"))) if args.warm else None
    result = compile_program(ep, pass_options=options, cache=cache)
    if profiler:
        profiler.disable()
        profiler.dump_stats(f"{args.profile}.{layers}")
    instructions, kernels, templates = _count(result)
    row = {"export": export_s, **result.stage_seconds, "instructions": instructions,
           "kernels": kernels, "templates": templates}
    if cache is not None:  # the same program again: hashed, found and read back
        warm_profiler = cProfile.Profile() if args.profile else None
        if warm_profiler:
            warm_profiler.enable()
        start = time.perf_counter()
        assert compile_program(ep, pass_options=options, cache=cache).cached
        row["warm"] = time.perf_counter() - start
        if warm_profiler:
            warm_profiler.disable()
            warm_profiler.dump_stats(f"{args.profile}.{layers}.warm")
        shutil.rmtree(cache.directory)
    if args.emulate:
        from spyrec.runtime.emulator import Emulator

        assert result.binary is not None
        start = time.perf_counter()
        emulator = Emulator(result.binary, mode="timing", reuse=not args.no_reuse)
        row["load"] = time.perf_counter() - start
        start = time.perf_counter()
        _, profile = emulator.run()
        row["run"] = time.perf_counter() - start
        row["emulated_us"] = profile.emulated_us
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=["ffn", "granite"], default="ffn")
    parser.add_argument("--hidden", type=int, default=1024, help="ffn model width")
    parser.add_argument("--rows", type=int, default=128, help="sequence length (batch 1)")
    parser.add_argument("--layers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--distinct-weights", action="store_true",
                        help="granite: a copy of the weights per layer (400 MB each)")
    parser.add_argument("--plain", action="store_true",
                        help="schedule every core with the plain interpreter (no templates)")
    parser.add_argument("--emulate", action="store_true",
                        help="also load and run the binary in the emulator's timing-only mode")
    parser.add_argument("--no-reuse", action="store_true",
                        help="with --emulate: load every kernel in full, no templates")
    parser.add_argument("--warm", action="store_true",
                        help="compile into an empty compile cache, then again from it")
    parser.add_argument("--profile", metavar="PREFIX", help="cProfile each compile to PREFIX.N")
    args = parser.parse_args()
    if args.model == "granite":
        print("Granite-3.3-8B-shaped layers: hidden 4096, 32 heads / 8 KV heads of 128, MLP "
              f"12800, {args.rows} tokens, fp16, "
              + ("distinct weights" if args.distinct_weights else "tied weights"))
    else:
        print(f"decoder FFN: hidden {args.hidden}, FFN {2 * args.hidden}, {args.rows} rows, fp16")
    extra = (" warm s |" if args.warm else "") + (
        " load s | run s | emulated µs |" if args.emulate else "")
    print("| layers | export s | " + " | ".join(f"{s} s" for s in STAGES)
          + " | total s | s / layer | instructions | kernels | templates |" + extra)
    print("|---|---|" + "---|" * len(STAGES) + "---|---|---|---|---|"
          + "---|" * bool(args.warm) + "---|---|---|" * bool(args.emulate))
    for layers in args.layers:
        r = measure(args, layers)
        total = sum(r[s] for s in STAGES)
        line = (f"| {layers} | {r['export']:.2f} | " + " | ".join(f"{r[s]:.2f}" for s in STAGES)
                + f" | {total:.2f} | {total / layers:.2f} | {int(r['instructions'])} | "
                f"{int(r['kernels'])} | {int(r['templates'])} |")
        if args.warm:
            line += f" {r['warm']:.2f} |"
        if args.emulate:
            line += f" {r['load']:.2f} | {r['run']:.2f} | {r['emulated_us']:.0f} |"
        print(line, flush=True)


if __name__ == "__main__":
    main()
