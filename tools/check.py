"""Run spyrec's checkers and test suite (lit + pytest) and print one `N passed, N failed` line.

    python -m spyrec.tools.check          # the fast tier: ruff, pyright, lit, the core pytest suite
    python -m spyrec.tools.check --all    # the fast and the slow tier (what CI runs)
    python -m spyrec.tools.check --slow   # the slow tier only
    python -m spyrec.tools.check --lint   # ruff and pyright only

The checkers run with the configuration in pyproject.toml (docs/design.md, note 67), beside
the lit suite (pyright uses one core for a minute or two; lit the other); each
finding is printed and counts as one failure.

The slow tier holds the models, the fuzzing and the long runs: tests marked `heavy`, and
every test of the files test/python/conftest.py lists in HEAVY_FILES. Tests marked `slow`
(over ~20 s each) run only with SPYREC_SLOW=1, in either tier. pytest runs on two worker
processes (pytest-xdist) when the machine has two cores or more, lit on as many. This is
what the README's test command and `.ci/run` (with --all) and CMake's `check-spyrec` target
run; with --all both tiers' pytest tests run in one pytest session (its two workers stay
busy to the end, where two sessions would each end with one idle). Each suite's wall time
is printed; the exit status is non-zero when any test fails or a suite cannot run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _junit_counts(xml_path: Path) -> tuple[int, int]:
    """(passed, failed) from a JUnit XML report; skipped and expected failures are neither."""
    if not xml_path.exists():
        return 0, 1
    passed = failed = 0
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            failed += 1
        elif "skipped" not in kinds:
            passed += 1
    return passed, failed


def _run(command: list[str], xml_path: Path, env: dict[str, str]) -> tuple[int, int, float]:
    """Run one suite; (passed, failed, seconds). A suite that exits non-zero without a
    failing case (a crash, a collection error) counts as one failure."""
    start = time.perf_counter()
    rc = subprocess.call(command, env=env, cwd=ROOT)
    seconds = time.perf_counter() - start
    passed, failed = _junit_counts(xml_path)
    if rc not in (0, 5) and failed == 0:  # pytest's 5: no test selected
        failed = 1
    return passed, failed, seconds


def _start(command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, float]:
    """Start a checker; its output is read by `_findings`."""
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    return process, time.perf_counter()


def _findings(checker: str, started: tuple[subprocess.Popen, float]) -> tuple[list[str], float]:
    """Wait for a checker started by `_start` (ruff or pyright, JSON output); its findings as
    `path:line:column: rule message` lines and the seconds it took. A checker that cannot
    run (not installed, unreadable output) is one finding saying so."""
    process, start = started
    stdout, stderr = process.communicate()
    seconds = time.perf_counter() - start
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        output = (stderr or stdout).strip()[-2000:]
        return [f"{checker} did not run (exit status {process.returncode}): {output}"], seconds
    if checker == "ruff":
        found = [(item["filename"], item["location"]["row"], item["location"]["column"],
                  f"{item['code']} {item['message']}") for item in report]
    else:
        found = [(item["file"], item["range"]["start"]["line"] + 1,
                  item["range"]["start"]["character"] + 1,
                  f"{item['severity']} {item.get('rule', '')}: {item['message'].splitlines()[0]}")
                 for item in report["generalDiagnostics"]]
    lines = [f"{Path(path).resolve().relative_to(ROOT).as_posix()}:{line}:{column}: {message}"
             for path, line, column, message in found]
    return lines, seconds


def _start_lint(env: dict[str, str]) -> dict[str, tuple[subprocess.Popen, float]]:
    """Start ruff and pyright over the tree. pyright (one core, 1-2 minutes) runs beside
    lit, which `main` starts meanwhile: the second core is not idle while it checks."""
    ruff = [sys.executable, "-m", "ruff", "check", "--output-format", "json", "--no-cache", "."]
    pyright = [sys.executable, "-m", "pyright", "--outputjson", "--pythonpath", sys.executable]
    return {"ruff": _start(ruff, env), "pyright": _start(pyright, env)}


def _lint(started: dict[str, tuple[subprocess.Popen, float]]) -> tuple[list[str], int, int]:
    """Wait for the checkers `_start_lint` started: (report lines, passed, failed), one pass
    per clean checker and one failure per finding."""
    lines: list[str] = []
    passed = failed = 0
    for checker, process in started.items():
        found, seconds = _findings(checker, process)
        if found:
            print("\n".join(found))
        # started beside lit: what is known is that it was done when lit was
        lines.append(f"{checker}: {len(found)} findings (done within {seconds:.0f} s)")
        passed, failed = passed + (not found), failed + len(found)
    return lines, passed, failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    tier = parser.add_mutually_exclusive_group()
    tier.add_argument("--all", action="store_true", help="the fast and the slow tier (CI)")
    tier.add_argument("--slow", action="store_true", help="the slow tier only")
    tier.add_argument("--lint", action="store_true", help="ruff and pyright only")
    args = parser.parse_args(argv)
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    jobs = max(1, min(2, os.cpu_count() or 1))
    # each test goes to whichever worker is free, except that the files conftest.py lists in
    # ORDERED_FILES run in order on one worker (test_readme.py's commands read what earlier
    # ones wrote)
    workers = ["-n", str(jobs)] if jobs > 1 else []
    lines: list[str] = []
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        def pytest(tiers: str, select: str) -> None:
            nonlocal passed, failed
            xml = Path(tmp, "pytest.xml")
            p, f, s = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            *workers, "-m", select, f"--junitxml={xml}",
                            str(ROOT / "test" / "python")], xml, env)
            lines.append(f"pytest, {tiers}: {p} passed, {f} failed in {s:.0f} s")
            passed, failed = passed + p, failed + f

        start = time.perf_counter()
        linting = _start_lint(env) if not args.slow else None
        if not (args.slow or args.lint):
            xml = Path(tmp, "lit.xml")
            p, f, s = _run([sys.executable, "-c", "from lit.main import main; main()", "-q",
                            "-j", str(jobs), f"--xunit-xml-output={xml}",
                            str(ROOT / "test" / "lit")], xml, env)
            lines.append(f"lit: {p} passed, {f} failed in {s:.0f} s")
            passed, failed = passed + p, failed + f
        if linting is not None:
            checked, p, f = _lint(linting)
            lines[:0] = checked
            passed, failed = passed + p, failed + f
        if args.all:  # both tiers in one pytest run: no worker idles at a tier's end
            pytest("fast and slow tiers", "heavy or not heavy")
        elif args.slow:
            pytest("slow tier", "heavy")
        elif not args.lint:
            pytest("fast tier", "not heavy")
    print("\n".join(lines))
    print(f"wall time {time.perf_counter() - start:.0f} s")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
