"""spyre-opt: xDSL's opt driver with every spyrec dialect and pass registered.

A thin subclass of `xDSLOptMain`; it must not import torch (startup time), so it reads only
the registry, which imports dialects and passes lazily.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.transforms import get_all_passes
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.utils.lexer import Span
from xdsl.xdsl_opt_main import xDSLOptMain

from spyrec.diagnostics import SpyrecError
from spyrec.registry import DIALECTS, PASSES
from spyrec.runtime.ktir_source import LocatingParser, locate_failure, located


class SpyreOptMain(xDSLOptMain):
    """xDSL opt main over xDSL's own dialects and passes plus spyrec's registry.

    Errors in the input are reported as `file:line:col: error: message` with the source line,
    and exit 1: parse errors where the parser stopped, verifier errors at the failing op
    (xDSL 0.74 keeps no op locations, so the frontend records where each op started).
    """

    spans: dict[Operation, Span]
    module: ModuleOp | None = None
    line_offset: int = 0

    def register_all_dialects(self) -> None:
        loaders = dict(get_all_dialects())
        loaders.update(DIALECTS)  # spyrec's definitions win over any stock one of the same name
        for name, loader in loaders.items():
            self.ctx.register_dialect(name, loader)

    def register_all_passes(self) -> None:
        for name, loader in {**get_all_passes(), **PASSES}.items():
            self.register_pass(name, loader)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.spans = {}

        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            parser = LocatingParser(self.ctx, io.read(), self.get_input_name(), spans=self.spans)
            return parser.parse_module(not self.args.no_implicit_module)

        self.available_frontends["mlir"] = parse_mlir

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        self.line_offset = start_offset  # of this chunk, under --split-input-file
        try:
            return super().parse_chunk(chunk, file_extension, start_offset)
        except (ParseError, DiagnosticException):
            raise
        except Exception as exc:  # xDSL failing on malformed input (e.g. an i644 type)
            raise SpyrecError(f"{self.get_input_name()}: the input cannot be parsed "
                              f"({type(exc).__name__}: {exc})") from exc

    def apply_passes(self, prog: ModuleOp) -> None:
        self.module = prog  # verified before and after the passes: kept to locate failures
        if not self.args.disable_verify:
            try:  # xDSL's verifiers can crash on malformed input (a func.func without
                prog.verify()  # its function_type): that is the input's fault, said so
            except DiagnosticException:
                raise
            except Exception as exc:
                raise SpyrecError(f"{self.get_input_name()}: malformed input, the verifier "
                                  f"failed on it ({type(exc).__name__}: {exc})") from exc
        super().apply_passes(prog)

    def locate(self, error: DiagnosticException) -> str:
        return locate_failure(self.module, self.spans, error, self.line_offset)


def main(args: Sequence[str] | None = None) -> None:
    opt: SpyreOptMain | None = None
    try:
        opt = SpyreOptMain(description="spyrec modular optimizer driver", args=args)
        opt.run()
    except ParseError as exc:
        sys.stderr.write(located(exc.span, exc.msg) + "\n")
        sys.exit(1)
    except DiagnosticException as exc:
        sys.stderr.write((opt.locate(exc) if opt is not None else f"error: {exc}") + "\n")
        sys.exit(1)
    except SpyrecError as exc:
        # a user-facing failure of a spyrec pass: its message, no traceback
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(1)
    except OSError as exc:  # the input file is missing or unreadable
        name = exc.filename if exc.filename is not None else "the input"
        sys.stderr.write(f"error: cannot read {name}: {exc.strerror or exc}; check the path "
                         "(or pass the module on stdin)\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
