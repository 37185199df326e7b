"""The compile driver: frontend, the pass pipeline, emission.

`compile_program` runs the pipeline of `spyrec.pipelines` pass by pass, timing each stage,
optionally printing the IR after every pass, and stopping after any stage. When a pass
fails unexpectedly it saves the module the pass received and names the `spyre-opt` command
that reproduces the failure.
"""

from __future__ import annotations

import io
import json
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import torch
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.utils.exceptions import VerifyException

from spyrec.cache import CompileCache
from spyrec.diagnostics import CompileError, PassFailure, SpyrecError
from spyrec.dialects.ktdp_types import KtirPrinter
from spyrec.dialects.spyre_plan import is_kernel, verify_plan
from spyrec.frontend.importer import ImportedProgram, import_program, load_program
from spyrec.frontend.ktir_fixed import FIXED_ATTR, FIXED_KEY
from spyrec.frontend.ktir_runtime_args import RuntimeArg
from spyrec.frontend.ktir_specialise import CONSTANTS_KEY, GRID_KEY, MASKED_KEY
from spyrec.frontend.ktir_stream import STREAMED_ATTR, STREAMED_KEY
from spyrec.pipelines import DEFAULT_PIPELINE, KTIR_PIPELINE, compile_target, pass_spec
from spyrec.progress import listening
from spyrec.registry import DIALECTS, PASSES
from spyrec.target.container import SpyreBinary, write_spyre

VERSION = "0.1.0"


@dataclass
class CompileResult:
    """What a compile produced: the final module, the binary (if emitted) and stage times."""

    module: ModuleOp | None  # None when the binary came from the compile cache
    program: ImportedProgram | None
    binary: SpyreBinary | None
    stage_seconds: dict[str, float] = field(default_factory=dict)
    cached: bool = False


def make_context() -> Context:
    ctx = Context()
    from xdsl.dialects import get_all_dialects

    for name, loader in {**get_all_dialects(), **DIALECTS}.items():
        ctx.register_dialect(name, loader)
    return ctx


def module_text(module: ModuleOp, generic: bool = False) -> str:
    """`module` as MLIR text: the custom form, or with `generic` the generic form (every op
    as `"name"(...)`, which upstream MLIR reads with unregistered dialects allowed); with the
    alias definitions KTIR types need (`ktdp_types.KtirPrinter`)."""
    out = io.StringIO()
    KtirPrinter(stream=out, print_generic_format=generic).print_module(module)
    return out.getvalue() + "\n"


def kernel_module(module: ModuleOp) -> ModuleOp:
    """The KTIR kernels of a program: a copy of `module` (its attributes included) holding
    only the functions a `spyre.launch` calls, so nothing of spyrec's host dialect is left and
    KTIR tools (the reference dialect's `ktir-opt`) read it as it is."""
    from spyrec.dialects.spyre import LaunchOp

    launched = {op.callee.root_reference.data for op in module.walk()
                if isinstance(op, LaunchOp)}
    kernels = module.clone()
    for op in list(kernels.ops):
        if not (isinstance(op, func.FuncOp) and op.sym_name.data in launched):
            op.detach()
            op.erase()
    return kernels


def _run_pass(name: str, module: ModuleOp, ctx: Context,
              options: dict[str, object] | None = None,
              verify_since: tuple[str, ...] | None = (),
              verify_kernels: bool = True,
              ) -> None:
    """Run pass `name`; check the module's planning attributes (`verify_plan`, cheap: the
    kernels and funcs only); then verify the module unless `verify_since` is None (it names
    the passes run since the last verification, which a failure may come from), the KTIR
    kernels only with `verify_kernels` (a stage that reads them and writes other ops need
    not verify them again: `Stage.verify_kernels`)."""
    options = options or {}
    try:
        PASSES[name]()(**options).apply(ctx, module)
        verify_plan(module)
        if verify_since is not None:
            try:
                _verify(module, verify_kernels)
            except VerifyException as exc:
                if verify_since:
                    raise VerifyException(
                        f"{exc}\n(verified after {', '.join([*verify_since, name])}; "
                        "compile with verify_each_pass=True to name the pass)") from exc
                raise
    except SpyrecError:
        raise
    except Exception as exc:
        with tempfile.NamedTemporaryFile("w", suffix=f".{name}.mlir", delete=False) as f:
            f.write(module_text(module))
        raise PassFailure(
            f"pass {name} failed: {type(exc).__name__}: {exc}\nIts input is saved; reproduce "
            f"with:\n  spyre-opt {f.name} -p '{pass_spec(name, options)}'"
        ) from exc


def _verify(module: ModuleOp, kernels: bool) -> None:
    """Verify `module`; without `kernels`, every top-level op but the KTIR kernels."""
    if kernels:
        module.verify()
        return
    module.verify(verify_nested_ops=False)
    for op in module.body.block.ops:
        if not (isinstance(op, func.FuncOp) and is_kernel(op)):
            op.verify()


def compile_program(
    program: torch.export.ExportedProgram | str | Path,
    output: str | Path | None = None,
    stop_after: str = "binary",
    print_ir: TextIO | None = None,
    on_stage: Callable[[str, float], None] | None = None,
    function: str | None = None,
    pass_options: dict[str, dict[str, object]] | None = None,
    verify_each_pass: bool = False,
    cache: CompileCache | None = None,
    on_progress: Callable[[str, str, int, int], None] | None = None,
    constants: Mapping[str, int | float | RuntimeArg] | None = None,
    masked_tails: bool = False,
    grid: tuple[int, ...] | None = None,
) -> CompileResult:
    """Compile `program` (an ExportedProgram, a .pt2 path, or a hand-written KTIR .mlir
    whose kernel `function` is compiled); write `output` if given. `pass_options` sets
    options of named passes over the pipeline's own (e.g. `{"spyre-schedule-dataflow":
    {"templates": False}}`). The module is verified after each stage (after each pass with
    `verify_each_pass` or `print_ir`): verifying a deep model's module costs about as much
    as a pass, so eight verifications were a fifth of the compile (design note 26).
    With a `cache`, a binary compiled before from the same program, options and compiler
    is returned (and copied to `output`) without compiling (design note 39).
    `on_progress(stage, what, done, total)` hears the progress reports passes make inside a
    long stage (`spyrec.progress`). `constants` binds a KTIR kernel's scalar arguments at
    compile time (`spyrec.frontend.ktir_specialise`); the binary's provenance records them
    (a `RuntimeArg` leaves one to run time: a symbolic size, `ktir_runtime_args`).
    `masked_tails` masks every access tile of a KTIR kernel (docs/ktir.md §7), as the
    kernel attribute `ktdp.masked_tails` does; the provenance records it. `grid` launches a
    KTIR kernel on that grid instead of its `grid` attribute (Triton's launch grid); the
    provenance records it too."""
    times: dict[str, float] = {}
    start = time.perf_counter()
    key = None
    if cache is not None and stop_after == "binary" and print_ir is None:
        key = cache.key(program if isinstance(program, torch.export.ExportedProgram)
                        else Path(program),
                        {"function": function, "pass_options": pass_options,
                         "constants": dict(constants or {}), "masked_tails": masked_tails,
                         "grid": list(grid) if grid else None,
                         # a file's path is in the binary's provenance: part of the key
                         "source": None if isinstance(program, torch.export.ExportedProgram)
                         else str(program)})
        hit = cache.get(key)
        if hit is not None:
            if output is not None:
                cache.copy_to(key, output)
            times["cache"] = time.perf_counter() - start
            if on_stage:
                on_stage("cache", times["cache"])
            return CompileResult(None, None, hit, times, cached=True)
        start = time.perf_counter()
    source = "<memory>"
    pipeline = DEFAULT_PIPELINE
    if isinstance(program, (str, Path)) and Path(program).suffix == ".mlir":
        from spyrec.frontend.ktir_input import import_ktir

        source = str(program)
        imported = import_ktir(program, function, compile_target(pass_options), constants,
                               masked_tails, grid)
        pipeline = KTIR_PIPELINE
    else:
        if constants:
            raise CompileError("constants (--arg NAME=VALUE) bind the scalar arguments of a "
                               "KTIR kernel (.mlir); an exported program has none")
        if masked_tails:
            raise CompileError("masked tails (--masked-tails) mask the access tiles of a KTIR "
                               "kernel (.mlir); an exported program has none")
        if grid:
            raise CompileError("a launch grid (--grid) places a KTIR kernel (.mlir) on cores; "
                               "an exported program is partitioned over the cores by the "
                               "compiler")
        if not isinstance(program, torch.export.ExportedProgram):
            source = str(program)
            program = load_program(program)
        imported = import_program(program, source)
    times["frontend"] = time.perf_counter() - start
    if on_stage:
        on_stage("frontend", times["frontend"])
    module = imported.module
    verify_plan(module)  # a hand-written KTIR kernel's grid
    ctx = make_context()
    if print_ir is not None:
        print_ir.write(f"// -----// IR after frontend //----- //\n{module_text(module)}")
    # IR that is shown keeps one op per instruction; the binary path packs the cores
    shown = {"spyre-schedule-dataflow": {"packed": False}} if (
        print_ir is not None or stop_after == "spyrecode") else {}
    for stage in pipeline:
        start = time.perf_counter()
        for name in stage.passes:
            options = {**stage.options_of(name), **shown.get(name, {}),
                       **(pass_options or {}).get(name, {})}
            each = verify_each_pass or print_ir is not None
            index = stage.passes.index(name)
            since = None if not each and index < len(stage.passes) - 1 else (
                () if each else stage.passes[:index])
            listener = None if on_progress is None else (
                lambda what, done, total, stage=stage.name: on_progress(stage, what, done, total))
            with listening(listener):
                _run_pass(name, module, ctx, options, since, stage.verify_kernels or each)
            if print_ir is not None:
                print_ir.write(f"// -----// IR after {name} //----- //\n{module_text(module)}")
        times[stage.name] = time.perf_counter() - start
        if on_stage:
            on_stage(stage.name, times[stage.name])
        if stage.name == stop_after or (stop_after == "graph" and pipeline is KTIR_PIPELINE):
            return CompileResult(module, imported, None, times)
    from spyrec.passes.spyrecode.spyre_emit_spyrecode import build_binary

    start = time.perf_counter()
    provenance = {"source": source, "compiler": f"spyrec {VERSION}"}
    bound = {k: v for k, v in (constants or {}).items() if isinstance(v, (int, float))}
    if bound:  # what `spyrec run --check kernel.mlir` passes the interpreter again
        provenance[CONSTANTS_KEY] = json.dumps(bound, sort_keys=True)
    if masked_tails:  # `run --check` runs the interpreter masked too
        provenance[MASKED_KEY] = "1"
    if grid:  # and on the same grid
        provenance[GRID_KEY] = json.dumps(list(grid))
    streamed = module.attributes.get(STREAMED_ATTR)
    if isinstance(streamed, StringAttr):  # rows too wide for LX, in chunks (ktir_stream)
        provenance[STREAMED_KEY] = streamed.data
    fixed = module.attributes.get(FIXED_ATTR)
    if isinstance(fixed, DictionaryAttr):  # the memory image `run --check` places again
        provenance[FIXED_KEY] = json.dumps(
            {k: v.value.data for k, v in fixed.data.items() if isinstance(v, IntegerAttr)},
            sort_keys=True)
    binary = build_binary(module, imported.weights, provenance)
    binary.program_cost = imported.cost  # None for a KTIR input: it has no source program
    if key is not None:
        cache.put(key, lambda path: write_spyre(binary, path))  # type: ignore[union-attr]
    if output is not None:
        write_spyre(binary, output)
    times["emit"] = time.perf_counter() - start
    if on_stage:
        on_stage("emit", times["emit"])
    return CompileResult(module, imported, binary, times)
