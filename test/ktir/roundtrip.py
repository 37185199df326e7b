"""Check that every KTIR kernel in a directory parses, verifies and round-trips in spyre-opt.

    python roundtrip.py test/ktir/conformance

For each `*.mlir` file, with spyre-opt's own driver (`SpyreOptMain`, run in this process so
that a dozen kernels take a second rather than a process start-up each):

- the custom form is a fixed point: print(parse(print(file))) == print(file);
- the generic form is a fixed point, and parsing it back prints the same custom form;
- every `func.func` has a `// CHECK-LABEL: func.func @name`, and FileCheck passes on the
  printed custom form.

Prints one line per file, `<file>: @f1, @f2` (what lit's CHECK lines match), and exits 1
with the reason on the first failure.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from xdsl.utils.exceptions import DiagnosticException, ParseError

from spyrec.tools.spyre_opt import SpyreOptMain

FUNCTION = re.compile(r"^\s*func\.func @([\w$.-]+)", re.MULTILINE)
LABEL = re.compile(r"^\s*// CHECK-LABEL: func\.func @([\w$.-]+)", re.MULTILINE)


class RoundTripError(Exception):
    """A kernel that does not parse, verify or print back to itself."""


def spyre_opt(text: str, *flags: str, name: str) -> str:
    """What `spyre-opt <flags>` prints for `text`."""
    with tempfile.TemporaryDirectory() as tmp:
        source, output = Path(tmp, name), Path(tmp, "out.mlir")
        source.write_text(text)
        try:
            SpyreOptMain(args=[str(source), "-o", str(output), *flags]).run()
        except (ParseError, DiagnosticException) as error:  # both name file, line, column
            raise RoundTripError(f"spyre-opt {' '.join(flags)} failed:\n{error}") from None
        return output.read_text()


def check(path: Path) -> list[str]:
    """Round-trip one kernel file; return its function names."""
    source = path.read_text()
    pretty = spyre_opt(source, name=path.name)
    _same("the custom form is not a fixed point", pretty, spyre_opt(pretty, name=path.name))
    generic = spyre_opt(source, "--print-op-generic", name=path.name)
    again = spyre_opt(generic, "--print-op-generic", name=path.name)
    _same("the generic form is not a fixed point", generic, again)
    back = spyre_opt(generic, name=path.name)
    _same("the generic form parses to a different module", pretty, back)
    functions, labels = FUNCTION.findall(source), LABEL.findall(source)
    if functions != labels:
        raise RoundTripError(f"functions {functions} but CHECK-LABELs {labels}")
    filecheck = [sys.executable, "-m", "filecheck", str(path)]
    checked = subprocess.run(filecheck, input=pretty, capture_output=True, text=True, check=False)
    if checked.returncode:
        raise RoundTripError(f"FileCheck failed:\n{checked.stderr}")
    return functions


def _same(what: str, first: str, second: str) -> None:
    if first == second:
        return
    pairs = zip(first.splitlines(), second.splitlines(), strict=False)
    for number, (one, other) in enumerate(pairs, 1):
        if one != other:
            raise RoundTripError(f"{what}; line {number}:\n  {one}\n  {other}")
    raise RoundTripError(f"{what}; the outputs differ in length")


def main(directory: str) -> int:
    kernels = sorted(Path(directory).glob("*.mlir"))
    if not kernels:
        print(f"no kernels in {directory}", file=sys.stderr)
        return 1
    for path in kernels:
        try:
            functions = check(path)
        except RoundTripError as error:
            print(f"{path.name}: {error}", file=sys.stderr)
            return 1
        print(f"{path.name}: {', '.join('@' + f for f in functions)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
