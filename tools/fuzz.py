"""Run the fuzzers of `spyrec.fuzz` for longer and print what they found.

    .venv/bin/python -m spyrec.tools.fuzz [--programs 200] [--ir 2000] [--spyre 2000]
                                          [--seed 0] [--max-steps 5]

Each failure is printed with the example that caused it (a random program as its steps,
damaged IR or bytes by size); the last lines are the counts for docs/fuzzing.md. Needs the
`dev` extra (hypothesis).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import traceback
from pathlib import Path
from typing import cast

import torch
from hypothesis import HealthCheck, Phase, given, seed, settings

from spyrec.fuzz import (
    Counts,
    check_ir_text,
    check_program,
    check_spyre_bytes,
    damaged_bytes,
    damaged_texts,
    programs,
)

ROOT = Path(__file__).resolve().parent.parent


def _run(strategy, examples: int, rng_seed: int, check, work: Path) -> list[str]:
    """Draw `examples` values, call `check` on each and collect its failures (the run goes
    on after a failure; nothing is shrunk). Each failure's whole message, with the input
    that caused it, is written to `work/failure-N.txt`."""
    failures: list[str] = []

    @seed(rng_seed)
    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              # the enum's metaclass hides its deprecated members from iteration (and pyright)
              suppress_health_check=cast("list[HealthCheck]", list(HealthCheck)))
    @given(strategy)
    def body(value):
        try:
            check(value)
        except Exception as exc:  # noqa: BLE001 - a failed check, or the harness crashing
            text = str(exc) if isinstance(exc, AssertionError) else traceback.format_exc()
            path = work / f"failure-{len(list(work.glob('failure-*.txt')))}.txt"
            path.write_text(text)
            failures.append(f"{text.splitlines()[0][:300]} [{path}]")

    body()
    return failures


def _damage(strategy, check, examples: int, rng_seed: int, work: Path, what: str,
            labels: dict[str, str]) -> str:
    """Run a damaged-input fuzzer: print its failures, return its counts as one line."""
    outcomes: dict[str, int] = {}
    start = time.perf_counter()

    def counted(value) -> None:
        result = check(value)
        outcomes[result] = outcomes.get(result, 0) + 1

    failures = _run(strategy, examples, rng_seed, counted, work)
    for f in failures:
        print(f"{what}:", f, flush=True)
    counts = ", ".join(f"{outcomes.get(key, 0)} {label}" for key, label in labels.items())
    return (f"{sum(outcomes.values()) + len(failures)} tried, {counts}, {len(failures)} "
            f"crashes ({time.perf_counter() - start:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--ir", type=int, default=2000)
    parser.add_argument("--spyre", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="spyrec-fuzz-"))
    lines = []

    if args.programs:
        counts = Counts()
        start = time.perf_counter()
        failures = _run(programs(args.max_steps), args.programs, args.seed,
                        lambda spec: check_program(spec, counts), work)
        for f in failures:
            print("program:", f, flush=True)
        lines.append(f"random programs: {counts.tried} tried, {counts.passed} matched eager, "
                     f"{sum(counts.refused.values())} refused as unsupported, {len(failures)} "
                     f"failed ({time.perf_counter() - start:.0f} s)")
        for reason, n in sorted(counts.refused.items(), key=lambda kv: -kv[1]):
            lines.append(f"  refused {n}x: {reason}")

    if args.ir:
        seeds = [p.read_text() for p in sorted((ROOT / "test" / "lit").rglob("*.mlir"))]
        lines.append("damaged IR: " + _damage(
            damaged_texts(seeds), lambda text: check_ir_text(text, None, work), args.ir,
            args.seed, work, "spyre-opt", {"ok": "parsed", "error": "clean errors"}))

    if args.spyre:
        import spyrec
        from spyrec.demo import DemoDecoder

        torch.manual_seed(args.seed)
        model = DemoDecoder(128, 1).half().eval()
        program = torch.export.export(model, (torch.randn(1, 16, 128).half(),))
        spyrec.compile(program, output=work / "seed.spyre", cache=False)
        data = (work / "seed.spyre").read_bytes()
        lines.append(f"damaged .spyre ({len(data)} bytes): " + _damage(
            damaged_bytes(data), lambda damaged: check_spyre_bytes(damaged, work), args.spyre,
            args.seed, work, ".spyre loader", {"refused": "refused", "loaded": "loaded"}))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
