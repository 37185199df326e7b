"""Located errors for KTIR source: `file:line:col: error: ...`, as MLIR prints them.

xDSL 0.74's parser keeps no source location on the ops it builds, so a verifier error can
only be shown as the whole module in generic form with the op underlined. `LocatingParser`
remembers where each op started; `locate_failure` finds the op whose own verifier raised and
names its line and column. Used by `spyre-opt` and by `ktdp_parse.parse_ktir`.
Imports nothing but xDSL: `spyre-opt` must start fast (`ktdp_parse.parse_ktir` builds on it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.lexer import Span


def located(span: Span[str] | Span[bytes], message: str, severity: str = "error: ") -> str:
    """`file:line:col: error: message`, then the source line with a caret under the span.

    `severity` may be "" for callers that put their own `error:` in front.
    """
    _, *context = span.print_with_context().splitlines()
    return "\n".join([f"{span.get_location()}: {severity}{message}", *context])


class LocatingParser(Parser):
    """xDSL's parser, recording in `spans` the first token of every operation it parses."""

    def __init__(self, *args: Any, spans: dict[Operation, Span], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.spans = spans

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        op = super().parse_operation()
        self.spans[op] = start
        return op


def _message(error: Exception) -> str:
    return str(error.args[0]) if error.args else str(error)


def locate_failure(
    module: ModuleOp | None,
    spans: Mapping[Operation, Span],
    error: DiagnosticException,
    line_offset: int = 0,
    severity: str = "error: ",
) -> str:
    """The located message for `error`, raised while verifying `module`.

    The op is the first whose own verifier (nested ops aside) raises the same message. An
    op a pass created has no span: the nearest enclosing op from the source is shown. Lines
    count from the start of the file when `line_offset` is that of the parsed chunk.
    """
    message = _message(error)
    failing: Operation | None = None
    for op in module.walk() if module is not None else ():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as own:
            failing = failing or op
            if _message(own) == message:
                failing = op
                break
    if failing is None:
        return f"{severity}{message}"
    what = f"'{failing.name}' op"
    shown: Operation | None = failing
    while shown is not None and shown not in spans:
        shown = shown.parent_op()
    if shown is None:
        return f"{severity}{what} {message}"
    if shown is not failing:
        what += f" (inside '{shown.name}')"
    start = spans[shown]
    span = Span(start.start, start.end, start.input, line_offset)
    return located(span, f"{what} {message}", severity)
