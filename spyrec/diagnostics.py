"""User-facing errors of spyrec.

Every error a user can cause is a `SpyrecError` with a one-paragraph message that names the
file, node, op or value and says what to do. The CLI prints the message and exits non-zero
without a traceback (unless `--debug`).
"""

from __future__ import annotations


class SpyrecError(Exception):
    """Base of all errors reported to users without a traceback."""


class CompileError(SpyrecError):
    """The program cannot be compiled as given."""


class UnsupportedOpsError(CompileError):
    """Ops without a Spyre lowering; lists every one of them at once."""

    def __init__(self, source: str, entries: list[str]):
        self.entries = entries
        lines = "\n".join(f"  {e}" for e in entries)
        super().__init__(
            f"{source}: {len(entries)} op(s) have no Spyre lowering yet:\n{lines}\n"
            "Rewrite the model to avoid them, or file an issue with the op names above."
        )


class PassFailure(CompileError):
    """A pass failed; carries the spyre-opt command that reproduces it."""


class RunError(SpyrecError):
    """A compiled program cannot run with the inputs given."""
