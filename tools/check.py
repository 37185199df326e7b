"""Run spyrec's whole test suite (lit + pytest) and print one `N passed, N failed` line.

This is what the README's test command, `.ci/run` and CMake's `check-spyrec` target run.
Exit status is non-zero when any test fails or a suite cannot run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
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


def main() -> int:
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    jobs = str(max(1, min(2, os.cpu_count() or 1)))
    with tempfile.TemporaryDirectory() as tmp:
        lit_xml, py_xml = Path(tmp, "lit.xml"), Path(tmp, "pytest.xml")
        lit_rc = subprocess.call(
            [sys.executable, "-c", "from lit.main import main; main()", "-q", "-j", jobs, f"--xunit-xml-output={lit_xml}",
             str(ROOT / "test" / "lit")], env=env, cwd=ROOT)
        py_rc = subprocess.call(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             f"--junitxml={py_xml}", str(ROOT / "test" / "python")], env=env, cwd=ROOT)
        lit_p, lit_f = _junit_counts(lit_xml)
        py_p, py_f = _junit_counts(py_xml)
    passed, failed = lit_p + py_p, lit_f + py_f
    if (lit_rc or py_rc) and failed == 0:
        failed = 1  # a suite crashed without reporting a failing case
    print(f"lit: {lit_p} passed, {lit_f} failed; pytest: {py_p} passed, {py_f} failed")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
