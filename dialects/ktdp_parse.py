"""KTIR text to a verified module, with located errors: what `spyrec compile kernel.mlir`
(the frontend) and the KTIR interpreter both read kernels with.

Text that does not parse or verify raises `KtirSourceError` naming the file, line and
column (`ktdp_source.LocatingParser` remembers where each op started).
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.utils.lexer import Span

from spyrec.dialects.ktdp_source import LocatingParser, locate_failure, located
from spyrec.dialects.ktdp_values import KtirError


class KtirSourceError(KtirError):
    """The KTIR text does not parse or verify; the message starts with `file:line:col:`."""


def ktir_context() -> Context:
    """A context with xDSL's dialects and spyrec's (ktdp and the extended standard ones)."""
    from spyrec.registry import DIALECTS  # the registry imports every dialect module

    ctx = Context()
    for name, loader in {**get_all_dialects(), **DIALECTS}.items():
        ctx.register_dialect(name, loader)
    return ctx


def parse_ktir(source: str | Path | ModuleOp) -> ModuleOp:
    """A verified module from MLIR text, a path to a .mlir file, or a module.

    Text that does not parse or verify raises `KtirSourceError` with the line and column.
    """
    if isinstance(source, ModuleOp):
        return source
    text = source
    name = "<ktir>"
    if isinstance(source, Path) or (
        isinstance(source, str) and "\n" not in source and source.endswith(".mlir")
    ):
        name = str(source)
        text = Path(source).read_text()
    spans: dict[Operation, Span] = {}
    module = None
    try:
        module = LocatingParser(ktir_context(), cast(str, text), name, spans=spans).parse_module()
        module.verify()
    except ParseError as error:
        raise KtirSourceError(located(error.span, error.msg, severity="")) from None
    except DiagnosticException as error:
        raise KtirSourceError(locate_failure(module, spans, error, severity="")) from None
    return module
