"""spyre-opt: xDSL's opt driver with every spyrec dialect and pass registered.

A thin subclass of `xDSLOptMain`; it must not import torch (startup time), so it reads only
the registry, which imports dialects and passes lazily. Errors in the input exit 1, errors
on the command line (an unknown pass or pass option, a malformed pipeline, an input whose
kind its name does not tell) exit 2, each with a message and no traceback; `-o` is written
atomically, after every pass succeeded, so naming the input as the output is safe.
"""

from __future__ import annotations

import difflib
import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass, PassPipeline
from xdsl.targets.mlir import MLIRTarget
from xdsl.transforms import get_all_passes
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.utils.lexer import Span
from xdsl.xdsl_opt_main import xDSLOptMain

from spyrec.diagnostics import SpyrecError
from spyrec.dialects.ktdp_source import LocatingParser, locate_failure, located
from spyrec.dialects.ktdp_types import KtirPrinter
from spyrec.dialects.spyre_plan import verify_plan
from spyrec.registry import DIALECTS, PASSES


class UsageError(Exception):
    """A command line spyre-opt cannot act on; reported with exit status 2."""


class _PendingOutput(io.StringIO):
    """The output for `-o`, kept when xDSL closes the stream at the end of its run."""

    text = ""

    def close(self) -> None:
        self.text = self.getvalue()
        super().close()


@dataclass(frozen=True)
class _KtirTarget(MLIRTarget):
    """xDSL's MLIR output through `ktdp_types.KtirPrinter` (group-set aliases)."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if self.syntax_highlight:
            return super().emit(ctx, module, output)
        printer = KtirPrinter(stream=output, print_generic_format=self.print_generic_format,
                              print_properties_as_attributes=self.print_properties_as_attributes,
                              print_debuginfo=self.print_debuginfo)
        printer.print_module(module)
        printer.print_metadata(ctx.loaded_dialects)
        print("\n", file=output)


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

    def register_all_targets(self) -> None:
        """xDSL's targets, with `mlir` printing the alias definitions KTIR types need."""
        self.available_targets["mlir"] = lambda: _KtirTarget
        super().register_all_targets()

    def register_all_passes(self) -> None:
        for name, loader in {**get_all_passes(), **PASSES}.items():
            self.register_pass(name, loader)

    def setup_pipeline(self) -> None:
        """xDSL's pipeline, with its failures (a malformed pipeline string, an unknown pass,
        an unknown or ill-typed pass option) as usage errors naming the pass."""
        spec = self.args.passes
        try:
            super().setup_pipeline()
        except ArgSpecParseError as exc:  # a BaseException in xDSL 0.74
            raise UsageError(f"-p {spec!r}: {exc}") from None
        except ValueError as exc:
            raise UsageError(f"-p {spec!r}: {self._pipeline_problem(spec, exc)}") from None
        between = self.pipeline.callback

        def verified(done: ModulePass | None, module: ModuleOp, after: ModulePass | None) -> None:
            if done is not None:  # the planning attributes after every pass
                verify_plan(module)
            if between is not None:
                between(done, module, after)

        self.pipeline = PassPipeline(self.pipeline.passes, verified)

    def _pipeline_problem(self, spec: str, error: ValueError) -> str:
        """What is wrong with the pipeline `spec` that parsed but could not be built: the
        first unknown pass (with the names closest to it) or the pass whose options fail."""
        for pass_spec in parse_pipeline(spec):
            if pass_spec.name not in self.available_passes:
                close = difflib.get_close_matches(pass_spec.name, self.available_passes, 3)
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                return (f"no pass named '{pass_spec.name}'{hint}; `spyre-opt --help` lists "
                        "the passes")
            try:
                self.available_passes[pass_spec.name]().from_pass_spec(pass_spec)
            except (ValueError, TypeError) as exc:
                return (f"pass '{pass_spec.name}': {exc}; see the options in the pass's "
                        "docstring (spyrec/passes/ for spyrec's own)")
        return str(error)

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        try:
            return super().prepare_input()
        except ValueError as exc:
            if "file extension" not in str(exc):
                raise
            raise UsageError(f"{self.get_input_name()}: spyre-opt reads a file by its "
                             f"extension and knows {', '.join(sorted(self.available_frontends))}; "
                             "rename the file or name its kind with -f mlir") from None

    def prepare_output(self) -> IO[str]:
        """stdout, or a buffer that `commit_output` writes to `-o`'s file once every chunk
        succeeded: the file is complete or untouched, even when it is the input."""
        if self.args.output_file is None:
            return sys.stdout
        target = Path(self.args.output_file)
        if (target.is_symlink() and not target.exists()) \
                or (target.exists() and not target.is_file()):
            raise UsageError(f"-o {target}: not a regular file (a directory, device or "
                             "dangling link); name a new or regular file to write")
        self.pending_output = _PendingOutput()
        return self.pending_output

    def run(self) -> None:
        super().run()
        self.commit_output()

    def commit_output(self) -> None:
        """Write the buffered `-o` output to its file, atomically."""
        if self.args.output_file is not None and hasattr(self, "pending_output"):
            from spyrec.target.container import write_atomically

            output = self.pending_output
            text = (output.text if output.closed else output.getvalue()).encode()
            try:
                write_atomically(Path(self.args.output_file), lambda stream: stream.write(text))
            except OSError as exc:
                raise SpyrecError(f"cannot write {self.args.output_file}: "
                                  f"{exc.strerror or exc}; check its folder and permissions"
                                  ) from None

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
        """xDSL's passes; the planning attributes (`spyre_plan.verify_plan`: a user's
        `grid = [0, 3]` is named with the values allowed) are checked first and after each
        pass (`setup_pipeline`)."""
        self.module = prog  # verified before and after the passes: kept to locate failures
        verify_plan(prog)
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
    except UsageError as exc:
        sys.stderr.write(f"spyre-opt: error: {exc}\n")
        sys.exit(2)
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
