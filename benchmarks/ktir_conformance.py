"""KTIR conformance: every example kernel of a ktir-cpu checkout through spyrec.

    .venv/bin/python benchmarks/ktir_conformance.py /path/to/ktir-cpu
    .venv/bin/python benchmarks/ktir_conformance.py PATH --only softmax --timeout 120
    .venv/bin/python benchmarks/ktir_conformance.py PATH --interpreter-only --report /tmp/k.md

PATH is a checkout the user fetched (github.com/torch-spyre/ktir-cpu); nothing of it is
copied here. Every function of every `.mlir`/`.ktir` file under PATH/examples/{ktir, latency,
rfc, sdsc, triton-ktir} (rfc/ holds the RFC 0682 examples) is one kernel, and each goes
through, in its own process with a time limit (a crash or a hang costs that kernel only):

1. spyrec's KTIR interpreter (`spyrec.ktir.run_kernel`) on seeded inputs, compared with the
   kernel's NumPy reference (`ktir_references.py`, written for this command, keyed by file
   and function). Statuses: `match`, `mismatch` (the worst element and the bound), `error`
   (the interpreter refused or faulted: its message's first line), `no reference` (it ran,
   nothing to compare with: never counted as a pass), `no inputs` (a parameter's shape or a
   scalar's value is unknown to the command).
2. `spyrec compile FILE --function F` (scalar parameters given with `--arg NAME=V`): `ok`
   or the first line of the refusal. A masked-tail variant (`Case.masked_tails`) compiles
   with `--masked-tails` and its own scalars; other variants run in the interpreter only.
3. `spyrec run BINARY --input NAME=FILE... --check FILE` (the emulator against the
   interpreter, both on the arrays step 1 drew: the reference's distributions, e.g. a weight
   scale; a kernel without a reference case runs on `run`'s own random inputs) and `spyrec
   profile BINARY --json`: the verdict, emulated µs, off-chip bytes against the minimum,
   and beside them the kernel's own bytes: what its tiles address in step 1, each element
   once per load or store (a tiling that reads a block on several cores counts it on each;
   no stick rounding). Where the emulator's bytes are far above the minimum, this column
   says how much of that the kernel's own tiling asks for.
4. ktir-cpu's own latency estimate, when its `ktir_cpu` package imports from PATH and runs
   the kernel on the same inputs (optional).

The table goes to docs/ktir-conformance.md (`--report`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ktir_references  # noqa: E402 - the references beside this file

EXAMPLE_DIRS = ("ktir", "latency", "rfc", "sdsc", "triton-ktir")
RECORD = "KCONF-RECORD "  # prefix of the child's result line on stdout
FUNCTION = re.compile(r"func\.func\s+@([\w$.]+)")
SEED = 0


def kernels(checkout: Path) -> list[tuple[str, str, int]]:
    """(path under examples/, function name, variant) of every kernel of the checkout,
    sorted; variant 0 is the kernel as written, the others `ktir_references.VARIANTS`."""
    found = []
    for folder in EXAMPLE_DIRS:
        for path in sorted((checkout / "examples" / folder).glob("*")):
            if path.suffix in (".mlir", ".ktir"):
                rel = path.relative_to(checkout / "examples").as_posix()
                for name in FUNCTION.findall(path.read_text()):
                    extra = len(ktir_references.VARIANTS.get((rel, name), []))
                    found += [(rel, name, v) for v in range(1 + extra)]
    return found


def _first_line(text: str) -> str:
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return lines[0][:240] if lines else ""


# ---- step 1: the interpreter against NumPy (in the child process) ----------------------


def _inputs(module: Any, function: str, case: ktir_references.Case | None
            ) -> dict[str, Any] | str:
    """The kernel's arguments by parameter name, or why they cannot be made: pointer
    parameters get arrays shaped by their views (or the case), scalars the case's values."""
    from xdsl.dialects.builtin import IndexType

    from spyrec.dialects.ktdp_values import numpy_dtype
    from spyrec.runtime.ktir_args import views_of
    from spyrec.runtime.ktir_interpreter import _find_function, _parameter_names

    func = _find_function(module, function)
    if not func.body.block.args and not (case and case.image):
        return ("the kernel takes no arguments (its tensors are at fixed addresses) and has "
                "no memory image in the references")
    rng = np.random.default_rng(SEED)
    given = case.arrays if case else {}
    scalars = case.scalars if case else {}
    args: dict[str, Any] = {}
    for param, name in zip(func.body.block.args, _parameter_names(func), strict=True):
        views = views_of(param) if isinstance(param.type, IndexType) else []
        if name in given:
            shape, dtype, how = given[name]
            args[name] = ktir_references.draw(shape, np.dtype(dtype), how, rng)
        elif name in scalars:
            args[name] = scalars[name]
        elif views:
            statics = {(tuple(s[0]), str(v.type.element_type)) for v in views
                       if v.delta == 0 and (s := v.static()) is not None}
            if len(statics) != 1 or any(v.delta != 0 for v in views):
                return f"the shape of %{name} is not one static view"
            shape = next(iter(statics))[0]
            args[name] = ktir_references.draw(shape, numpy_dtype(views[0].type.element_type),
                                              "normal", rng)
        else:
            return f"no value for scalar parameter %{name}"
    return args


def compare(got: np.ndarray, want: np.ndarray, ulps: float) -> str | None:
    """None if `got` matches `want` within `ulps` roundoffs of the output type (relative to
    |want| plus 1/16 of the output's scale; integers and `ulps` = 0 exactly), else the worst
    element and its bound."""
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(w)) or not np.array_equal(
            np.isinf(g) & (g > 0), np.isinf(w) & (w > 0)):
        return "NaN or infinity where the reference has none (or the reverse)"
    finite = np.isfinite(w)
    if not finite.any():
        return None
    dtype = want.dtype
    u = float(np.finfo(dtype).eps) / 2 if np.issubdtype(dtype, np.floating) else 0.0
    scale = float(np.abs(w[finite]).max())
    bound = ulps * u * (np.abs(w) + scale / 16)
    excess = np.where(finite, np.abs(g - w) - bound, -np.inf)
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
    if excess[worst] <= 0:
        return None
    return (f"at {tuple(int(i) for i in worst)}: got {g[worst]:.6g}, expected {w[worst]:.6g} "
            f"(bound {bound[worst]:.3g})")


def interpret(path: Path, rel: str, function: str, variant: int, checkout: Path
              ) -> dict[str, Any]:
    """Run the kernel in spyrec's interpreter; compare with its reference if it has one."""
    from spyrec.dialects.ktdp_parse import parse_ktir
    from spyrec.runtime.ktir_interpreter import Device, KtirError, run_kernel

    case = ktir_references.case_of(rel, function, variant)
    masked = case is not None and case.masked_tails
    record: dict[str, Any] = {"reference": case is not None}
    try:
        module = parse_ktir(path)
        args = _inputs(module, function, case)
        if isinstance(args, str):
            return {**record, "interpreter": "no inputs", "detail": args}
        device, image = Device(), dict(case.image) if case else {}
        if image:
            placed = _place_image(device, image, args)
            if placed is not None:
                return {**record, "interpreter": "no inputs", "detail": placed}
        started = time.perf_counter()
        run = run_kernel(module, function,
                         {k: _copy(v) for k, v in args.items() if k not in image},
                         case.grid if case else None, device=device, masked_tails=masked)
        record["interpreter_s"] = round(time.perf_counter() - started, 2)
        outputs = dict(run.outputs)
        for name, (address, shape, dtype, _) in image.items():
            outputs[name] = device.read(address, shape, np.dtype(dtype))
    except KtirError as exc:
        return {**record, "interpreter": "error", "detail": _first_line(str(exc))}
    except Exception as exc:  # noqa: BLE001 - a crash of the interpreter is a finding, reported
        return {**record, "interpreter": "crash",
                "detail": f"{type(exc).__name__}: {_first_line(str(exc))}"}
    record["races"] = len(run.races)
    # the kernel's own off-chip traffic: every element its tiles name, once per access
    record["kernel_bytes"] = sum(s.lpddr_element_bytes for s in run.stats)
    if case is None:
        record["interpreter"] = "no reference"
    else:
        expected = case.reference(args)
        problems = [f"%{name} {why}" for name, want in expected.items()
                    if (why := compare(outputs[name], want, case.ulps)) is not None]
        record["interpreter"] = "mismatch" if problems else "match"
        if problems:
            record["detail"] = problems[0]
    if not masked:  # ktir-cpu has no masks (it reads zeros and drops writes everywhere)
        record["ktir_cpu_us"] = _ktir_cpu_latency(checkout, path, function, args)
    return record


def _place_image(device: Any, image: dict[str, tuple[int, tuple[int, ...], str, str]],
                 args: dict[str, Any]) -> str | None:
    """Place the arrays of a kernel with hard-coded addresses (drawn into `args`) at their
    byte addresses, zeros between (`spyrec.ktir.place_image`); None, or why they cannot be
    placed (overlap)."""
    from spyrec.ktir import ImageOverlap, place_image

    for name, (address, shape, dtype, how) in image.items():
        args[name] = ktir_references.draw(shape, np.dtype(dtype), how,
                                          np.random.default_rng(SEED + address))
    try:
        place_image(device, {name: (image[name][0], args[name]) for name in image})
    except ImageOverlap as overlap:
        _, shape, dtype, _ = image[overlap.name]
        return (f"the kernel's fixed addresses overlap: {overlap.name} "
                f"({'x'.join(map(str, shape))} {dtype}) at byte {overlap.address} starts "
                f"inside {overlap.previous}, which ends at byte {overlap.end} (KTIR offsets "
                "count elements of the view's type)")
    return None


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def _ktir_cpu_latency(checkout: Path, path: Path, function: str, args: dict[str, Any]
                      ) -> float | None:
    """ktir-cpu's own latency estimate (µs) of the kernel on the same inputs, if its package
    imports from the checkout and runs the kernel; None otherwise."""
    sys.path.insert(0, str(checkout))
    try:
        from ktir_cpu.interpreter import KTIRInterpreter  # type: ignore[import-not-found]
        from ktir_cpu.latency import HardwareConfig  # type: ignore[import-not-found]

        interp = KTIRInterpreter(latency_config=HardwareConfig())
        interp.load(str(path))
        interp.execute_function(function, **{k: _copy(v) for k, v in args.items()})
        report = interp.get_latency_report()
        return None if report is None else round(float(report.kernel_time_us), 3)
    except Exception:  # noqa: BLE001 - optional: ktir-cpu's own limits are not spyrec's
        return None
    finally:
        sys.path.remove(str(checkout))


def child(path: str, rel: str, function: str, variant: str, checkout: str) -> None:
    record = interpret(Path(path), rel, function, int(variant), Path(checkout))
    print(RECORD + json.dumps(record), flush=True)


# ---- steps 2 and 3: the command line, each in its own process ---------------------------


def _spyrec(args: list[str], timeout: float) -> tuple[int | None, str]:
    """(exit status or None on timeout, stdout + stderr) of `spyrec ARGS`."""
    command = [sys.executable, "-m", "spyrec.cli", *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd=ROOT, check=False)
    except subprocess.TimeoutExpired:
        return None, f"timeout after {timeout:.0f} s"
    return done.returncode, done.stdout + done.stderr


def _error_line(text: str) -> str:
    """The first line of the error a command printed (after its progress lines)."""
    for line in text.splitlines():
        if line.lower().startswith("error: "):
            return _first_line(line[len("error: "):])
    return _first_line(text.splitlines()[-1]) if text.strip() else ""


def _compile_takes_args() -> bool:
    """Whether `spyrec compile` binds scalar parameters (`--arg NAME=V`)."""
    _, text = _spyrec(["compile", "--help"], 120)
    return "--arg" in text


def _parameters(source: Path, function: str) -> set[str]:
    """The names of `function`'s parameters, read off its signature in `source`."""
    found = re.search(rf"func\.func\s+@{re.escape(function)}\s*\((.*?)\)\s*(->|attributes|\{{)",
                      source.read_text(), re.DOTALL)
    return set(re.findall(r"%([\w$.-]+)\s*:", found.group(1))) if found else set()


def backend(source: Path, function: str, scalars: dict[str, Any], work: Path,
            timeout: float, with_args: bool, masked: bool = False,
            case: ktir_references.Case | None = None) -> dict[str, Any]:
    """Compile, run --check and profile one kernel; a dict of the statuses and numbers.
    Scalar values go to `--arg` for the kernel's own parameters only (a case's value of a
    name the kernel computes itself is the interpreter's business, not the compiler's);
    `masked` compiles with every access tile masked (`--masked-tails`, docs/ktir.md §7), and
    a case's grid is the launch grid (`--grid`).
    `run --check` runs on the arrays the interpreter step drew for `case`
    (`_reference_inputs`)."""
    binary = work / f"{source.stem}.{function}.{'masked.' if masked else ''}spyre"
    command = ["compile", str(source), "--function", function, "-o", str(binary),
               *(["--masked-tails"] if masked else []),
               # the launch grid the case gives a kernel without a grid attribute
               *(["--grid", ",".join(map(str, case.grid))] if case and case.grid else [])]
    if with_args:
        params = _parameters(source, function)
        command += [a for name, v in scalars.items() if name in params
                    for a in ("--arg", f"{name}={v}")]
    status, text = _spyrec(command, timeout)
    if status != 0:
        return {"compile": _error_line(text) or f"exit {status}"}
    record: dict[str, Any] = {"compile": "ok"}
    given = _reference_inputs(source, function, case, binary, work, timeout)
    status, text = _spyrec(["run", str(binary), *given, "--check", str(source)], timeout)
    verdict = [line for line in text.splitlines() if line.strip()]
    record["check"] = ("match" if status == 0 else
                       "timeout" if status is None else
                       "fails: " + (_error_line(text) or _first_line(verdict[-1])))
    status, text = _spyrec(["profile", str(binary), "--json"], timeout)
    if status == 0:
        data = json.loads(text[text.index("{"):])
        record.update(emulated_us=data["emulated_us"], offchip_bytes=data["offchip_bytes"],
                      min_offchip_bytes=data["program_min_offchip_bytes"])
    return record


def _reference_inputs(source: Path, function: str, case: ktir_references.Case | None,
                      binary: Path, work: Path, timeout: float) -> list[str]:
    """`--input NAME=FILE` options giving the binary the arrays the interpreter step drew
    (`_inputs`, the same seed: the case's distributions, e.g. a weight scale) for each of
    the binary's inputs; none for a kernel without a case or whose arrays sit at fixed
    addresses (the binary's random inputs then)."""
    from spyrec.dialects.ktdp_parse import parse_ktir

    if case is None or case.image:
        return []
    args = _inputs(parse_ktir(source), function, case)
    if isinstance(args, str):
        return []
    status, text = _spyrec(["inspect", str(binary)], timeout)
    names = set(re.findall(r"^input (\S+):", text, re.MULTILINE)) if status == 0 else set()
    options = []
    for name in sorted(names):
        if isinstance(args.get(name), np.ndarray):
            path = work / f"{binary.stem}.{name}.npy"
            np.save(path, args[name])
            options += ["--input", f"{name}={path}"]
    return options


def run_kernel_case(checkout: Path, rel: str, function: str, variant: int, work: Path,
                    timeout: float, interpreter_only: bool, with_args: bool) -> dict[str, Any]:
    """One kernel, every step (a variant: the interpreter only, but for a masked-tail
    variant, which the back end compiles masked); a record for the table."""
    path = checkout / "examples" / rel
    case = ktir_references.case_of(rel, function, variant)
    base: dict[str, Any] = {"file": rel, "function": function,
                            "variant": case.variant if case else ""}
    command = [sys.executable, __file__, "--child", str(path), rel, function, str(variant),
               str(checkout)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd=ROOT, check=False)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith(RECORD)]
        if lines:
            base.update(json.loads(lines[-1][len(RECORD):]))
        else:
            base.update(interpreter="crash", detail=_first_line(done.stderr.splitlines()[-1]
                                                                if done.stderr else ""))
    except subprocess.TimeoutExpired:
        base.update(interpreter="timeout", detail=f"more than {timeout:.0f} s")
    masked = case is not None and case.masked_tails
    if not interpreter_only and (variant == 0 or masked):
        source = path
        if path.suffix != ".mlir":  # spyrec compile takes KTIR as .mlir
            source = work / (path.stem + ".mlir")
            shutil.copyfile(path, source)
        scalars = case.scalars if case else {}
        base.update(backend(source, function, scalars, work, timeout, with_args, masked,
                            case))
    for key in ("detail", "compile", "check"):  # where the files are is not the finding
        if isinstance(base.get(key), str):
            base[key] = base[key].replace(f"{checkout}/examples/", "").replace(f"{work}/", "")
    return base


# ---- the report ---------------------------------------------------------------------


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _interp_cell(r: dict[str, Any]) -> str:
    status = r.get("interpreter", "")
    detail = r.get("detail")
    if status == "match" and r.get("races"):
        return f"match, {r['races']} races"
    return f"{status}: {detail}" if detail and status != "match" else status


def report(records: list[dict[str, Any]], command: str) -> str:
    """docs/ktir-conformance.md: the counts, then one row per kernel."""
    interp = [r.get("interpreter") for r in records]
    compiled = [r for r in records if r.get("compile") == "ok"]
    lines = [
        "# KTIR conformance: the ktir-cpu examples through spyrec",
        "",
        (f"Generated by `{command}` on {datetime.date.today().isoformat()} "
         "(`benchmarks/ktir_conformance.py`; how each column is measured is in its docstring). "
         "References are spyrec's own NumPy computations of each kernel "
         "(`benchmarks/ktir_references.py`); a kernel without one is `no reference`, never a "
         "pass. `run --check` compares the emulator with the interpreter on the arrays the "
         "reference drew. Off-chip bytes are the emulator's against the program's minimum; "
         "kernel B is what the kernel's own tiles address in the interpreter (each element "
         "once per access, no stick rounding): the bytes its tiling asks for; ktir-cpu µs "
         "is ktir-cpu's own latency estimate of the same run (blank where it does "
         "not run)."),
        "",
        (f"{len({(r['file'], r['function']) for r in records})} kernels in {len(records)} "
         f"runs (a variant is a run): interpreter **{interp.count('match')} match**, "
         f"{interp.count('mismatch')} mismatch, {interp.count('no reference')} no reference, "
         f"{interp.count('error')} refused or faulted, {interp.count('no inputs')} without "
         f"inputs, {interp.count('crash') + interp.count('timeout')} crash or timeout; "
         f"**{len(compiled)} compile**, "
         f"{sum(r.get('check') == 'match' for r in compiled)} match under `run --check`."),
        "",
        ("| kernel | interpreter | compile | check | emulated µs | off-chip B / min | "
         "kernel B | ktir-cpu µs |"),
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        traffic = ""
        if r.get("offchip_bytes") is not None:
            traffic = f"{r['offchip_bytes']} / {r['min_offchip_bytes']}"
        us = f"{r['emulated_us']:.2f}" if r.get("emulated_us") is not None else ""
        ktir_cpu = "" if r.get("ktir_cpu_us") is None else f"{r['ktir_cpu_us']:.3g}"
        own = "" if r.get("kernel_bytes") is None else str(r["kernel_bytes"])
        name = f"{r['file']}: @{r['function']}" + (f" ({r['variant']})" if r.get("variant")
                                                    else "")
        lines.append("| " + " | ".join(_cell(c) for c in (
            name, _interp_cell(r), r.get("compile", ""),
            r.get("check", ""), us, traffic, own, ktir_cpu)) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(*argv[1:6])
        return
    parser = argparse.ArgumentParser(
        description="KTIR conformance: a ktir-cpu checkout's examples through spyrec")
    parser.add_argument("checkout", type=Path, help="a ktir-cpu checkout (has examples/)")
    parser.add_argument("--report", type=Path, default=ROOT / "docs" / "ktir-conformance.md")
    parser.add_argument("--results", type=Path, help="also write the records as JSON lines")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds per kernel and step (default 300)")
    parser.add_argument("--only", action="append", default=[],
                        help="kernels whose 'file: function' contains this (repeatable)")
    parser.add_argument("--interpreter-only", action="store_true",
                        help="skip compile, run --check and profile")
    args = parser.parse_args(argv)
    args.checkout = args.checkout.resolve()
    if not (args.checkout / "examples").is_dir():
        parser.error(f"{args.checkout} has no examples/ folder: pass a ktir-cpu checkout")
    selected = [(rel, fn, v) for rel, fn, v in kernels(args.checkout)
                if not args.only or any(o in f"{rel}: {fn}" for o in args.only)]
    with_args = not args.interpreter_only and _compile_takes_args()
    records = []
    with tempfile.TemporaryDirectory(prefix="ktir-conformance-") as work:
        for rel, fn, variant in selected:
            record = run_kernel_case(args.checkout, rel, fn, variant, Path(work), args.timeout,
                                     args.interpreter_only, with_args)
            print(f"{rel}: @{fn} {record['variant']}: {record.get('interpreter')}, "
                  f"compile {record.get('compile', '-')}", flush=True)
            records.append(record)
    if args.results:
        args.results.write_text("".join(json.dumps(r) + "\n" for r in records))
    shown = ["benchmarks/ktir_conformance.py PATH", *(f"--only {o}" for o in args.only),
             *(["--interpreter-only"] if args.interpreter_only else [])]
    args.report.write_text(report(records, " ".join(shown)))
    print(f"wrote {args.report}")


if __name__ == "__main__":
    main()
