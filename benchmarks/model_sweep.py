"""Model-coverage sweep: every architecture a user may bring, exported, compiled, run on the
emulator and compared with eager; the table is docs/models.md.

    .venv/bin/python benchmarks/model_sweep.py                     # everything (hours here)
    .venv/bin/python benchmarks/model_sweep.py --limit 6 --timeout 150 --jobs 2
    .venv/bin/python benchmarks/model_sweep.py --only hf:llama --only nn:lstm
    .venv/bin/python benchmarks/model_sweep.py --resume            # continue a crashed sweep
    .venv/bin/python benchmarks/model_sweep.py --report-only       # docs/models.md from JSONL

The models are `benchmarks/sweep_models.py`'s: the Hugging Face auto-model mappings' model
types, shrunk, and torch.nn idioms. Each model runs in its own process with a time limit;
each variant (fp32, fp16; for text models also `mask`, a padded batch of two with a run-time
attention_mask, and `dynamic`, the sequence length a `torch.export.Dim`) is one JSON line
appended to the results file as soon as it is measured, so a crash or a timeout loses at
most the variant in progress and `--resume` skips the models already done.

Statuses of a variant, in the order a model can fail:
`build` (the sweep could not make a tiny instance: a config needing files or an optional
package, a shrink the architecture rejects, inputs eager refuses: the harness's gap, not
spyrec's), `export` (torch.export failed: the model's), `refused` (a `CompileError`: the
unsupported ops it lists, `ops`), `crash` (any other exception from `spyrec.compile`,
or a `PassFailure`, which wraps one a pass raised: a compiler bug), `run-refused` (the
emulator or the host refused to run it: a `SpyrecError`), `run-crash` (any other exception
while running), `mismatch` (`spyrec.verdict.check_outputs` failed against eager),
`degenerate` (matched, but every output eager gives is one value repeated, all zeros say:
the comparison shows little, the harness's gap), `ok` (matched), `timeout`.

Measured per variant, as `spyrec run` reports them (`Executable.last_profile.to_dict()`):
emulated µs, roofline ratio, off-chip bytes and the minimum; the verdict's worst element and
aggregate ratios (error / bound; over 1 fails); export and compile seconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import re
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

import sweep_models  # noqa: E402 - the catalogue beside this file

STATUSES = ("ok", "degenerate", "mismatch", "refused", "crash", "run-refused", "run-crash",
            "export", "build", "timeout", "built")  # built: --build-only's success
RECORD = "SWEEP-RECORD "  # prefix of a child's result lines on stdout
RESULTS = ROOT / "benchmarks" / "results" / "model_sweep.jsonl"  # committed with the report
OP_NAME = re.compile(r"\baten\.[\w.]+")

# test hook: applied to the device outputs before the comparison (injects a wrong answer)
Corrupt = Callable[[Any], Any]


def _one_line(exc: BaseException) -> str:
    """The exception's type and first line (with the next one when the first only introduces
    it, as a validation error's does)."""
    text = [line.strip() for line in str(exc).strip().splitlines()]
    first = " ".join(text[:2]) if len(text) > 1 and text[0].endswith(":") else (
        text[0] if text else "")
    return f"{type(exc).__name__}: {first[:300]}"


def _where(exc: BaseException) -> str:
    """The innermost frame of spyrec's own code a crash passed through: `path:line`."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if f.filename.startswith(str(ROOT)) and "/.venv/" not in f.filename]
    return (f"{Path(frames[-1].filename).relative_to(ROOT)}:{frames[-1].lineno}" if frames
            else "")


def refused_ops(exc: BaseException) -> list[str]:
    """The ops a CompileError refuses: each `aten.*` name its entries give (once per entry),
    else the first line of the message (a refusal that names no op)."""
    entries = getattr(exc, "entries", None)
    if entries:
        ops = []
        for entry in entries:
            found = OP_NAME.search(entry)
            ops.append(found.group(0) if found else entry.split(":")[-1].strip()[:120])
        return ops
    found = OP_NAME.search(str(exc))
    return [found.group(0)] if found else [_one_line(exc)[:160]]


def measure(case: sweep_models.Case, variant: str, corrupt: Corrupt | None = None,
            build_only: bool = False) -> dict[str, Any]:
    """Build, export, compile, run and compare one variant of a case; the JSON record.
    `build_only`: stop after eager ran on the built inputs (status `built`)."""
    import torch

    record: dict[str, Any] = {"model": case.name, "family": case.family, "variant": variant}
    try:
        built = sweep_models.build(case, variant)
        with torch.no_grad():
            expected = built.module(*built.run)
    except Exception as exc:  # noqa: BLE001 - any failure to build is the harness's, recorded
        default = sweep_models.default_error(case)
        return {**record, "status": "build", "error": _one_line(exc),
                **({"default_error": _one_line(default)} if default else {})}
    if built.notes:  # what the build changed from transformers' defaults
        record["notes"] = built.notes
    if build_only:
        return {**record, "status": "built"}

    import spyrec
    from spyrec.diagnostics import CompileError, PassFailure, SpyrecError
    from spyrec.verdict import check_outputs

    start = time.perf_counter()
    try:
        program = sweep_models.export(built)
    except Exception as exc:  # noqa: BLE001 - torch.export's failure is the model's, recorded
        return {**record, "status": "export", "error": _one_line(exc)}
    record["export_s"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    try:
        exe = spyrec.compile(program, cache=False)
    except PassFailure as exc:  # a pass raised something other than a SpyrecError: a bug
        cause = exc.__cause__ or exc
        return {**record, "status": "crash", "error": _one_line(exc), "where": _where(cause)}
    except CompileError as exc:
        return {**record, "status": "refused", "ops": refused_ops(exc), "error": _one_line(exc),
                "entries": [e[:300] for e in getattr(exc, "entries", [])],
                "compile_s": round(time.perf_counter() - start, 2)}
    except Exception as exc:  # noqa: BLE001 - a compiler crash: recorded with its traceback
        return {**record, "status": "crash", "error": _one_line(exc), "where": _where(exc)}
    record["compile_s"] = round(time.perf_counter() - start, 2)
    try:
        outputs = exe(*built.run)
    except SpyrecError as exc:
        return {**record, "status": "run-refused", "error": _one_line(exc)}
    except Exception as exc:  # noqa: BLE001 - a crash while running: recorded
        return {**record, "status": "run-crash", "error": _one_line(exc)}
    if corrupt is not None:
        outputs = corrupt(outputs)
    verdict = check_outputs(expected, outputs, exe)
    if not verdict.ok and variant == "fp16":  # the second look, only where it can matter
        verdict = check_outputs(expected, outputs, exe, truth=sweep_models.float64_truth(built),
                                format_reference=_in_device_format(built))
    profile = exe.last_profile.to_dict()
    record.update(
        status=("mismatch" if not verdict.ok else "degenerate" if degenerate(expected)
                else "ok"),
        element_ratio=max((o.element_ratio for o in verdict.outputs), default=0.0),
        aggregate_ratio=max((o.aggregate_ratio for o in verdict.outputs), default=0.0),
        emulated_us=profile["emulated_us"], roofline_ratio=profile["roofline_ratio"],
        offchip_bytes=profile["offchip_bytes"], min_offchip_bytes=profile["min_offchip_bytes"],
        kernels=len(profile["kernels"]))
    if not verdict.ok:
        record["error"] = str(verdict).splitlines()[0][:300]
    elif any(o.truth_note for o in verdict.outputs):
        record["truth"] = next(o.truth_note for o in verdict.outputs if o.truth_note)[:300]
    return record


def _in_device_format(built: sweep_models.Built) -> Any:
    """The model run by PyTorch with fp16 held in DL16 (`spyrec.format_reference`), the
    second look's yardstick beside eager; None if it cannot run (no second look by it)."""
    import torch

    from spyrec.format_reference import run_in_device_format

    try:
        with torch.no_grad():
            return run_in_device_format(built.module, built.run)
    except Exception:  # noqa: BLE001 - any failure only withholds this yardstick
        return None


def degenerate(expected: Any) -> bool:
    """Whether every output eager gives is one value repeated (all zeros, say): matching it
    shows little, as a wrong program can give the same constant."""
    import torch

    tensors = [t for t in (expected if isinstance(expected, (tuple, list)) else [expected])
               if isinstance(t, torch.Tensor)]
    return bool(tensors) and all(t.numel() > 1 and bool((t == t.reshape(-1)[0]).all())
                                 for t in tensors)


# ---- one model per process ----------------------------------------------------------------

def child(name: str, build_only: bool = False, variants: list[str] | None = None) -> None:
    """Measure every variant of one case (or those `variants` names), printing each record as
    soon as it is made."""
    case = {c.name: c for c in sweep_models.all_cases()}[name]
    for variant in case.variants:
        if variants and variant not in variants:
            continue
        print(RECORD + json.dumps(measure(case, variant, build_only=build_only)), flush=True)


def run_case(case: sweep_models.Case, timeout: float, build_only: bool = False
             ) -> list[dict[str, Any]]:
    """Run `child(case)` in a new process; its records, plus a `timeout` or `crash` record
    for each variant it did not report (killed at the time limit, or died)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", case.name,
               *(["--build-only"] if build_only else []),
               *(a for v in case.variants for a in ("--variant", v))]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "SPYREC_CACHE": "0"}
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT, start_new_session=True)
    start = time.perf_counter()
    try:
        out, err = proc.communicate(timeout=timeout)
        why = None
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # the child and anything it started; ours alone
        out, err = proc.communicate()
        why = "timeout"
    records = [json.loads(line[len(RECORD):]) for line in out.splitlines()
               if line.startswith(RECORD)]
    seconds = round(time.perf_counter() - start, 1)
    done = {r["variant"] for r in records}
    for variant in case.variants:
        if variant in done:
            continue
        base = {"model": case.name, "family": case.family, "variant": variant}
        if why == "timeout":
            records.append({**base, "status": "timeout",
                            "error": f"the model's process passed {timeout:.0f} s"})
        else:
            tail = err.strip().splitlines()[-1:] if err.strip() else []
            how = (f"was killed by signal {-proc.returncode} (9: the kernel's out-of-memory "
                   "killer, or another process)" if proc.returncode < 0
                   else f"exited {proc.returncode}")
            records.append({**base, "status": "crash",
                            "error": f"the process {how}: "
                                     f"{tail[0][:300] if tail else 'no message'}"})
    for r in records:
        r["process_s"] = seconds
    return records


def read_results(path: Path) -> list[dict[str, Any]]:
    """The records of a results file, the newest per model and variant (a model re-run is
    appended; a truncated last line, from a crash, is skipped)."""
    if not path.exists():
        return []
    records: dict[tuple[str, str], dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        records.pop((record["model"], record["variant"]), None)  # the newest goes last
        records[(record["model"], record["variant"])] = record
    return list(records.values())


def sample(cases: list[sweep_models.Case], limit: int | None) -> list[sweep_models.Case]:
    """At most `limit` cases per family, evenly spaced over the family's sorted list."""
    if limit is None:
        return cases
    chosen = []
    for family in dict.fromkeys(c.family for c in cases):
        members = [c for c in cases if c.family == family]
        step = max(len(members) / limit, 1.0)
        chosen += [members[int(i * step)] for i in range(min(limit, len(members)))]
    return chosen


def _commit() -> str:
    """The tree measured: the short commit, marked `+dirty` with uncommitted changes to
    anything but the results and the docs."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":(exclude)benchmarks/results", ":(exclude)docs"],
                               cwd=ROOT, text=True, capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "an unknown commit"
    return head + ("+dirty" if dirty else "")


def sweep(cases: list[sweep_models.Case], results: Path, timeout: float, jobs: int,
          resume: bool, build_only: bool = False) -> None:
    """Run the cases (skipping those `results` holds every variant of, with --resume),
    appending each model's records to `results` as it finishes. Without --resume the cases
    run again; their new records, appended, replace the earlier ones where read (the newest
    per model and variant), so a sweep stopped part-way loses nothing measured before."""
    done: set[str] = set()
    if resume:
        have: dict[str, set[str]] = {}
        for r in read_results(results):
            have.setdefault(r["model"], set()).add(r["variant"])
        done = {c.name for c in cases if set(c.variants) <= have.get(c.name, set())}
    if results.exists():  # compacted to the newest record per model and variant (a line a
        # crash cut short is dropped, so it cannot swallow the next record)
        results.write_text("".join(json.dumps(r) + "\n" for r in read_results(results)))
    todo = [c for c in cases if c.name not in done]
    lock = threading.Lock()
    commit = _commit()
    print(f"{len(todo)} model(s) to run ({len(done)} done already)", flush=True)

    def one(index_case: tuple[int, sweep_models.Case]) -> None:
        index, case = index_case
        records = [{**r, "commit": commit} for r in run_case(case, timeout, build_only)]
        with lock, results.open("a") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
        statuses = ", ".join(f"{r['variant']} {r['status']}" for r in records)
        print(f"[{index + 1}/{len(todo)}] {case.name}: {statuses}", flush=True)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, enumerate(todo)))


# ---- the report ---------------------------------------------------------------------------

def _ratio(r: dict[str, Any]) -> str:
    return f"{max(r['element_ratio'], r['aggregate_ratio']):.2f}" if "element_ratio" in r else ""


def _detail(r: dict[str, Any]) -> str:
    if r["status"] == "refused":
        return "; ".join(f"{op}: {reason}" if op else reason
                         for op, reason in sorted(refusals(r)))[:400].replace("|", "/")
    return r.get("error", "").replace("|", "/")[:160]


def _row(r: dict[str, Any]) -> str:
    measured = "emulated_us" in r
    bytes_ratio = (f"{r['offchip_bytes'] / r['min_offchip_bytes']:.2f}"
                   if measured and r["min_offchip_bytes"] else "")
    cells = [r["model"], r["variant"], r["status"], _ratio(r),
             f"{r['emulated_us']:.1f}" if measured else "",
             f"{r['roofline_ratio']:.2f}" if measured else "", bytes_ratio,
             f"{r['compile_s']:.1f}" if "compile_s" in r else "", _detail(r)]
    return "| " + " | ".join(cells) + " |"


def summary(cases: list[sweep_models.Case], records: list[dict[str, Any]]) -> list[str]:
    """The headline counts, per variant, per family and the ranked missing ops."""
    by_model = {c.name: c for c in cases}
    records = [r for r in records if r["model"] in by_model]
    measured = {r["model"] for r in records}
    variants = list(dict.fromkeys(v for c in cases for v in c.variants))
    count = Counter((r["variant"], r["status"]) for r in records)
    fp32 = Counter(r["status"] for r in records if r["variant"] == "fp32")
    compiled = sum(fp32[s] for s in ("ok", "degenerate", "mismatch", "run-refused",
                                     "run-crash"))
    hf = sum(c.name.startswith("hf:") for c in cases)
    lines = [(f"**{len(cases)} architectures enumerated** ({hf} "
             f"Hugging Face model types, {len(cases) - hf} torch.nn "
             f"idioms); **{len(measured)} measured**, the rest not run in this sweep (listed "
             "at the end). Of the measured, in fp32: "
             f"{fp32['build']} could not be built tiny by the sweep, {fp32['export']} export "
             f"failures, {fp32['refused']} compile refusals, {fp32['crash']} compiler crashes, "
             f"{fp32['timeout']} timeouts, **{compiled} compiled**, **{fp32['ok']} match "
             f"eager** ({fp32['degenerate']} matched a constant output, "
             f"{fp32['mismatch']} mismatch, "
             f"{fp32['run-refused'] + fp32['run-crash']} failed to run)."), "",
             "| status | " + " | ".join(variants) + " |",
             "|---|" + "---|" * len(variants)]
    lines += [f"| {s} | " + " | ".join(str(count[(v, s)]) for v in variants) + " |"
              for s in STATUSES if any(count[(v, s)] for v in variants)]
    by_truth = sorted(r["model"] for r in records if r.get("truth"))
    if by_truth:
        lines += ["", f"{len(by_truth)} fp16 variant(s) matched only against the float64 truth "
                  "(the device no further from exact arithmetic than twice eager fp16's own "
                  "error, or 1.25x the error of eager with fp16 held in DL16: "
                  "`spyrec.verdict`'s second look, docs/numerics.md): "
                  + ", ".join(by_truth) + "."]
    lines += ["", "Per family (measured models; `ok` = matched eager):", "",
              "| family | enumerated | measured | " + " | ".join(f"{v} ok" for v in variants)
              + " | export (fp32) | refused (fp32) | crash (any) |",
              "|---|---|---|" + "---|" * (len(variants) + 3)]
    for family in dict.fromkeys(c.family for c in cases):
        rs = [r for r in records if r["family"] == family]
        ok = Counter(r["variant"] for r in rs if r["status"] == "ok")
        cells = [family, str(sum(c.family == family for c in cases)),
                 str(len({r["model"] for r in rs})), *(str(ok[v]) for v in variants),
                 str(sum(r["status"] == "export" and r["variant"] == "fp32" for r in rs)),
                 str(sum(r["status"] == "refused" and r["variant"] == "fp32" for r in rs)),
                 str(len({r["model"] for r in rs if r["status"] in ("crash", "run-crash")}))]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


NAMED = (re.compile(r"([\w.]+) \(node [^)]*\): (.*)"), re.compile(r"node \S+ \(([\w.]+)\): (.*)"))


def refusal(text: str) -> tuple[str, str]:
    """(op, reason) of one refusal entry or message, the reason made comparable across
    models: its first clause, without source lines, node names, shapes or numbers."""
    op, reason = "", re.sub(r"^\w*Error: ", "", text)
    for pattern in NAMED:
        if (found := pattern.search(text)) is not None:
            op, reason = found.group(1), found.group(2)
            break
    reason = re.sub(r"(<memory>|<eval_with_key>[.\d]*|\S+\.py):\d+: ", "", reason)
    reason = re.sub(r" \(node [^)]*\)", "", reason)
    reason = re.split(r"\. | \(|; ", reason, maxsplit=1)[0]
    reason = re.sub(r"\[[^\]]*\]", "[..]", reason)
    return op, re.sub(r"\b\d+(?![-\d]*-D)\b", "N", reason)[:90]


def refusals(record: dict[str, Any]) -> set[tuple[str, str]]:
    """The distinct (op, reason) pairs a refused record lists."""
    if record["status"] != "refused":
        return set()
    return {refusal(e) for e in record.get("entries") or [record.get("error", "")]}


def missing_ops(records: list[dict[str, Any]], variants: tuple[str, ...],
                besides: tuple[str, ...] = ()) -> list[str]:
    """The (op, reason) pairs the compile refusals of `variants` give (and the same model's
    `besides` variants do not), ranked by the number of models refused for each."""
    models: dict[tuple[str, str], set[str]] = {}
    known = {(r["model"], key) for r in records if r["variant"] in besides
             for key in refusals(r)}
    for r in records:
        if r["variant"] in variants:
            for key in refusals(r) - {k for m, k in known if m == r["model"]}:
                models.setdefault(key, set()).add(r["model"])
    lines = ["| op | reason | models | e.g. |", "|---|---|---|---|"]
    for (op, reason), names in sorted(models.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"| {op} | {reason.replace('|', '/')} | {len(names)} | "
                     f"{', '.join(sorted(names)[:4])} |")
    return lines


def _provenance(records: list[dict[str, Any]]) -> list[str]:
    """Which tree each row was measured at: the results file keeps the newest row per model
    and variant, so the rows come from several runs."""
    where = Counter(r.get("commit") or r.get("recovered") or "an unrecorded commit"
                    for r in records)
    if not where:
        return []
    parts = [f"{n} at {at}" for at, n in where.most_common()]
    return [f"Rows measured (newest per model and variant): {'; '.join(parts)}.", ""]


def report(cases: list[sweep_models.Case], records: list[dict[str, Any]], command: str,
           timeout: float, note: str = "") -> str:
    """docs/models.md: header, provenance, counts, missing ops, crashes, every measured row,
    the rest."""
    import torch
    import transformers

    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    by_model = {c.name: c for c in cases}
    records = [r for r in records if r["model"] in by_model]
    order = {c.name: i for i, c in enumerate(cases)}
    records.sort(key=lambda r: (order[r["model"]], by_model[r["model"]].variants.index(
        r["variant"])))
    measured = {r["model"] for r in records}
    crashes = [r for r in records if r["status"] in ("crash", "run-crash")]
    lines = ["# Model coverage", "",
             ("Generated by `benchmarks/model_sweep.py` (do not edit by hand): "
             f"`{command}`, {today}, transformers {transformers.__version__}, torch "
             f"{torch.__version__}, a time limit of {timeout:.0f} s per model (all its variants) "
             "on a 2-core machine shared with other jobs. What each status means and how the "
             "models are built: benchmarks/README.md and the script's docstring."), "",
             *([note, ""] if note else []), *_provenance(records),
             *summary(cases, records), "",
             "## Missing ops, ranked (the gap list)", "",
             ("Each op a compile refusal of the fp32 or fp16 variant lists (an op with no "
             "lowering, or one whose operands the lowering refuses), by the number of models "
             "it stops:"), "", *missing_ops(records, ("fp32", "fp16")), "",
             ("Run as users run them: what refuses a model only with a run-time "
             "`attention_mask` (`mask`) or a symbolic sequence length (`dynamic`), beyond "
             "what its fp32 and fp16 variants are refused for:"), "",
             *missing_ops(records, ("mask", "dynamic"), ("fp32", "fp16")), "",
             "## Compiler crashes", ""]
    lines += ([f"- {r['model']} {r['variant']}: {r.get('error', '')} (at {r.get('where') or '?'}"
               f"; reproduce: `.venv/bin/python benchmarks/model_sweep.py --only {r['model']}`)"
               for r in crashes] or ["None in this sweep."])
    lines += ["", "## Every measured variant", "",
              ("`error/tol`: the verdict's worst ratio of error to bound (element or aggregate, "
              "docs/numerics.md; above 1 fails); `us`: emulated; `roofline`: roofline / "
              "emulated; `bytes/min`: off-chip bytes over the minimum; `compile s`: host "
              "seconds (a busy machine)."), "",
              ("| model | variant | status | error/tol | us | roofline | bytes/min | compile s "
               "| ops refused / error |"), "|---|---|---|---|---|---|---|---|---|"]
    lines += [_row(r) for r in records]
    not_run = [c.name for c in cases if c.name not in measured]
    lines += ["", f"## Not run in this sweep ({len(not_run)})", "",
              ", ".join(not_run) if not_run else "None.", ""]
    return "\n".join(lines)


def counts(cases: list[sweep_models.Case], records: list[dict[str, Any]]) -> str:
    """Per family and per status, for the terminal."""
    table = Counter((r["family"], r["status"]) for r in records)
    out = []
    for family in dict.fromkeys(c.family for c in cases):
        statuses = ", ".join(f"{s} {table[(family, s)]}" for s in STATUSES
                             if table[(family, s)])
        out.append(f"{family:>10}: {statuses or 'not run'}")
    return "\n".join(out)


def build_failures(cases: list[sweep_models.Case], records: list[dict[str, Any]]) -> str:
    """--build-only's summary: per variant, how many built, and each case some variant of
    which did not (build, timeout or a dead process), with its first error."""
    names = {c.name for c in cases}
    records = [r for r in records if r["model"] in names]
    per = Counter((r["variant"], r["status"] == "built") for r in records)
    variants = list(dict.fromkeys(v for c in cases for v in c.variants))
    lines = ["built: " + ", ".join(f"{v} {per[(v, True)]}/{per[(v, True)] + per[(v, False)]}"
                                   for v in variants if per[(v, True)] + per[(v, False)])]
    failed: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r["status"] != "built":
            failed.setdefault(r["model"], []).append(r)
    lines.append(f"{len(failed)} case(s) with a variant that did not build:")
    for model, rs in failed.items():
        default = (f" (transformers' default config fails too: {rs[0]['default_error']})"
                   if "default_error" in rs[0] else "")
        lines.append(f"  {model} [{' '.join(r['variant'] for r in rs)}] {rs[0]['status']}: "
                     f"{rs[0].get('error', '')[:200]}{default}")
    return "\n".join(lines)


def select(only: list[str], families: list[str], limit: int | None,
           variants: list[str] | None = None) -> list[sweep_models.Case]:
    """The cases --only / --family / --limit pick, in catalogue order, with only the
    --variant variants (a case with none of them is dropped)."""
    cases = sweep_models.all_cases()
    known = {c.name for c in cases}
    for name in only:
        if name not in known:
            raise SystemExit(f"--only {name}: no such model (names look like hf:llama, nn:lstm)")
    if only:
        cases = [c for c in cases if c.name in only]
    if families:
        cases = [c for c in cases if c.family in families]
    if variants:
        cases = [dataclasses.replace(c, variants=tuple(v for v in c.variants if v in variants))
                 for c in cases if set(c.variants) & set(variants)]
    return sample(cases, limit)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="a model (hf:<model_type> or nn:<idiom>); repeatable")
    parser.add_argument("--family", action="append", default=[],
                        choices=[*sweep_models.HF_FAMILIES, "nn-seq", "nn-rec", "nn-vision"])
    parser.add_argument("--limit", type=int, help="at most N models per family, evenly spaced")
    parser.add_argument("--variant", action="append", default=[],
                        help="measure only this variant (fp32, fp16, mask, dynamic); "
                             "repeatable; the other variants' rows stay")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds per model (all its variants)")
    parser.add_argument("--jobs", type=int, default=1, help="models run at once")
    parser.add_argument("--resume", action="store_true",
                        help="keep the results file and skip the models it has")
    parser.add_argument("--results", type=Path,
                        help="the JSONL file (default benchmarks/results/model_sweep.jsonl, "
                             "committed: the record docs/models.md is made from; with "
                             "--build-only model_sweep_build.jsonl)")
    parser.add_argument("--report", type=Path, default=ROOT / "docs" / "models.md")
    parser.add_argument("--report-only", action="store_true",
                        help="write the report from the results file, run nothing")
    parser.add_argument("--note", default="",
                        help="a sentence for the report's header (the commit measured, a "
                             "sweep stopped part-way)")
    parser.add_argument("--build-only", action="store_true",
                        help="only build each model tiny and run it in eager (status `built` "
                             "or `build`), list the failures; no export, no report")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.build_only, args.variant)
        return
    results = args.results or (ROOT / "model_sweep_build.jsonl" if args.build_only
                               else RESULTS)
    selected = select(args.only, args.family, args.limit, args.variant)
    if not args.report_only:
        sweep(selected, results, args.timeout, args.jobs, args.resume, args.build_only)
    records = read_results(results)
    print(counts(selected, records))
    if args.build_only:
        print(build_failures(selected, records))
        return
    # the table covers every enumerated architecture: those never measured are "not run"
    everything = sweep_models.all_cases()
    given = list(argv if argv is not None else sys.argv[1:])
    if "--note" in given:  # the note is the header's, not part of the command
        del given[given.index("--note"):given.index("--note") + 2]
    command = "python benchmarks/model_sweep.py " + " ".join(
        a for a in given if a != "--report-only")
    args.report.write_text(report(everything, records, command.strip(), args.timeout,
                                  args.note))
    print(f"wrote {args.report}")


if __name__ == "__main__":
    main()
