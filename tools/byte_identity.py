"""Byte identity: the sha256 of the `.spyre` each program of a fixed set compiles to.

A refactor of the compiler must leave every hash as it is; a change that means to change the
generated code updates the golden file in the same commit and says why. The fixed set:

- the benchmark kernels: the default variant of each `benchmarks/roofline.py --quick` case
  (GEMMs, the add -> gelu -> mul chain, row softmax / layer norm / RMS norm, the long-row
  reductions, SDPA prefill and decode), fp16, as the benchmark builds them;
- the model zoo (`spyrec.zoo.ZOO`): every model at `spyrec demo`'s sizes (features 256,
  batch 64) in fp16, the two Granite-3.3-8B-shaped layers included (400 MB of weights each);
- the demo models (`spyrec.demo`) in fp32 and bf16 too, at the same sizes;
- one program with a symbolic size: the decoder of `benchmarks/symbolic_sizes.py`
  (`DemoDecoder(256, 2)` in fp16 over a sequence `Dim(min=1, max=256)`), so the frontend's
  symbols, the trip-count guards and the patch table are covered.

Each program is built with `torch.manual_seed(0)`, exported with `torch.export.export` and
compiled with the default options (no cache, nothing emulated); only the `.spyre` is hashed.

    python -m spyrec.tools.byte_identity            # compare with the golden file; 1 on a change
    python -m spyrec.tools.byte_identity --update   # rewrite the golden file (with --only:
                                                    # those programs' entries only)
    python -m spyrec.tools.byte_identity --only gemm --only mlp   # a subset (by name part)
    python -m spyrec.tools.byte_identity --skip-granite           # without the two 400 MB layers
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "test" / "golden" / "spyre_sha256.json"
SEED = 0
FEATURES, BATCH = 256, 64  # `spyrec demo`'s defaults
UPDATE_HINT = ("if the change of generated code is intended, run "
               "`python -m spyrec.tools.byte_identity --update` and commit the golden file "
               "with a message saying why the code changed")


@dataclass(frozen=True)
class Program:
    name: str
    group: str  # bench, zoo, demo, symbolic
    build: Callable[[], tuple[object, tuple[object, ...]]]  # (module, inputs), in eval mode
    options: dict[str, object]  # what the golden file records about how it was compiled
    dynamic_shapes: tuple[dict[int, object], ...] | None = None  # torch.export's, per input


def _roofline():
    """benchmarks/roofline.py, loaded from the source tree (it is not a package)."""
    path = ROOT / "benchmarks" / "roofline.py"
    spec = importlib.util.spec_from_file_location("spyrec_roofline", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _bench_programs() -> list[Program]:
    import torch

    out = []
    for case in _roofline().cases(quick=True):
        def build(case=case):
            module, inputs = case.build()  # as roofline.measure builds it
            module = module.to(torch.float16).eval()
            return module, tuple(t.to(torch.float16) if t.is_floating_point() else t
                                 for t in inputs)
        out.append(Program(f"bench/{case.name}", "bench", build, {"dtype": "float16"}))
    return out


def _zoo_programs() -> list[Program]:
    import torch

    from spyrec.zoo import ZOO

    out = []
    for name, model in ZOO.items():
        out.append(Program(f"zoo/{name} float16", "zoo",
                           lambda m=model: m.build(torch.float16, FEATURES, BATCH),
                           {"dtype": "float16", "features": FEATURES, "rows": BATCH}))
    return out


def _demo_programs() -> list[Program]:
    """The demo models (`spyrec.demo`, the zoo's small entries) in the other dtypes."""
    import torch

    from spyrec.zoo import ZOO

    return [Program(f"demo/{name} {dtype}", "demo",
                    lambda m=ZOO[name], d=dtype: m.build(getattr(torch, d), FEATURES, BATCH),
                    {"dtype": dtype, "features": FEATURES, "rows": BATCH})
            for name in ("mlp", "decoder-ffn", "decoder", "convnet")
            for dtype in ("float32", "bfloat16")]


def _symbolic_programs() -> list[Program]:
    """A decoder over a symbolic sequence length, exported as benchmarks/symbolic_sizes.py
    exports it (compiled at the upper bound, 256)."""
    import torch

    from spyrec.demo import DemoDecoder

    seq = torch.export.Dim("s", min=1, max=256)
    return [Program("symbolic/decoder float16 seq 1..256", "symbolic",
                    lambda: (DemoDecoder(FEATURES, 2).half().eval(),
                             (torch.randn(2, 16, FEATURES).half(),)),
                    {"dtype": "float16", "features": FEATURES, "seq": [1, 256]},
                    ({1: seq},))]


def programs(skip_granite: bool = False) -> list[Program]:
    found = _bench_programs() + _zoo_programs() + _demo_programs() + _symbolic_programs()
    return [p for p in found if not (skip_granite and "granite" in p.name)]


def spyre_sha256(program: Program, workdir: Path) -> str:
    """Build, export and compile `program`; the sha256 of its `.spyre` file."""
    import torch

    from spyrec.driver import compile_program

    # torch.export's own pytree deprecation, not ours (as in pyproject's pytest settings)
    warnings.filterwarnings("ignore", "`isinstance\\(treespec, LeafSpec\\)` is deprecated",
                            FutureWarning)
    torch.manual_seed(SEED)
    module, inputs = program.build()
    ep = torch.export.export(module, inputs,  # type: ignore[arg-type]
                             dynamic_shapes=program.dynamic_shapes)
    path = workdir / "program.spyre"
    compile_program(ep, path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    path.unlink()
    return digest


def compute(selected: Iterable[Program], log=None) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for program in selected:
            start = time.perf_counter()
            digest = spyre_sha256(program, Path(tmp))
            if log is not None:
                log(f"{program.name}: {digest[:16]} ({time.perf_counter() - start:.1f} s)")
            out[program.name] = {"sha256": digest, **program.options}
    return out


def header() -> dict[str, object]:
    import torch

    from spyrec import __version__
    return {"compiler": f"spyrec {__version__}", "torch": torch.__version__, "seed": SEED,
            "options": "defaults (spyrec.pipelines.compile_options()); no cache",
            "rule": "a refactor keeps every hash; a change of generated code updates this "
                    "file in the same commit and says why (docs/architecture.md, Tests)"}


def load_golden(path: Path = GOLDEN) -> dict[str, Any]:
    return json.loads(path.read_text())


def differences(golden: dict[str, Any], found: dict[str, dict[str, Any]]) -> list[str]:
    """One line per program whose hash differs from the golden file's (or that it lacks)."""
    recorded = golden["programs"]
    assert isinstance(recorded, dict)
    lines = []
    for name, entry in found.items():
        if name not in recorded:
            lines.append(f"{name}: not in the golden file")
        elif recorded[name]["sha256"] != entry["sha256"]:
            lines.append(f"{name}: {recorded[name]['sha256'][:16]} -> {entry['sha256'][:16]}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--update", action="store_true",
                        help="rewrite the golden file (with --only: those entries)")
    parser.add_argument("--only", action="append", help="programs whose name contains this")
    parser.add_argument("--skip-granite", action="store_true",
                        help="leave out the two Granite layers (400 MB of weights each)")
    parser.add_argument("--golden", type=Path, default=GOLDEN)
    args = parser.parse_args(argv)
    selected = [p for p in programs(args.skip_granite)
                if not args.only or any(o in p.name for o in args.only)]
    start = time.perf_counter()
    found = compute(selected, log=lambda line: print(line, flush=True))
    print(f"{len(found)} programs compiled in {time.perf_counter() - start:.0f} s")
    if args.update:
        kept: dict[str, object] = {}
        if (args.only or args.skip_granite) and args.golden.exists():
            kept = load_golden(args.golden)["programs"]
        merged = {**kept, **found}  # a subset updates its own entries only
        order = [p.name for p in programs()]
        merged = {name: merged[name] for name in sorted(merged, key=lambda n: (
            order.index(n) if n in order else len(order), n))}
        args.golden.parent.mkdir(parents=True, exist_ok=True)
        args.golden.write_text(json.dumps({**header(), "programs": merged}, indent=1) + "\n")
        print(f"wrote {args.golden}")
        return 0
    changed = differences(load_golden(args.golden), found)
    for line in changed:
        print(f"changed: {line}")
    if changed:
        print(f"{len(changed)} of {len(found)} programs compile to different bytes; "
              + UPDATE_HINT)
        return 1
    print(f"all {len(found)} programs byte-identical to {args.golden.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
