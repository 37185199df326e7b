"""The `spyrec` command line: compile, run, demo, inspect.

Every user error ends in a one-paragraph message and exit status 1, without a traceback
(`--debug` shows it); usage errors (a bad option or value) exit 2, as click does.
`spyrec --version` and `spyrec --help` import neither torch nor the runtime: every command
imports what it needs when it runs.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from spyrec.diagnostics import RunError, SpyrecError
from spyrec.pipelines import STAGE_NAMES
from spyrec.target import DEFAULT_TARGET, TARGETS

if TYPE_CHECKING:
    from torch import Tensor

    from spyrec.target.container import SpyreBinary
    from spyrec.target.isa import Instr


def _user_message(exc: Exception) -> str | None:
    """The one-paragraph message of an error a user can cause (a bad file, input or
    argument, a device fault their inputs provoke), or None for a bug in spyrec."""
    # imported here, when an error is being reported: `spyrec --help` stays cheap
    from spyrec.dialects.ktdp_values import KtirError
    from spyrec.runtime.memory import DeviceFault
    from spyrec.runtime.timing import DeadlockError

    if isinstance(exc, DeviceFault):
        address = "" if exc.address is None else f" (address {exc.address:#x})"
        return (f"the device faulted: {exc}{address}. The program made an access the device "
                "refuses; with indices among the inputs (an embedding's token ids, a KV-cache "
                "slot) check that they are in range: pass real inputs with --input NAME=FILE "
                "or the .pt2's example inputs with --check MODEL.pt2")
    if isinstance(exc, DeadlockError):
        return f"the device deadlocked: {exc}"
    if isinstance(exc, MemoryError):
        return (f"out of memory ({exc or 'an allocation failed'}); use smaller inputs or "
                "sizes")
    if isinstance(exc, OSError):
        if exc.filename is None:
            return str(exc)
        target = f"{exc.filename}" + (f" -> {exc.filename2}" if exc.filename2 else "")
        return f"{target}: {exc.strerror or exc}; check the path and its permissions"
    if isinstance(exc, (SpyrecError, KtirError, ValueError)):
        return str(exc)
    return None


class _Group(click.Group):
    """Turns user errors into one-paragraph messages and exit 1, unless --debug."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:  # click's own exits and usage errors pass through below
            if isinstance(exc, (click.exceptions.ClickException, click.exceptions.Exit,
                                click.exceptions.Abort)) or "--debug" in sys.argv:
                raise
            message = _user_message(exc)
            if message is None:
                raise
            click.echo(f"error: {message}", err=True)
            sys.exit(1)


# torch.export's own pytree deprecation warning is noise to spyrec's users
warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)`",
                        category=FutureWarning)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
@click.version_option(package_name="spyrec")
def main(debug: bool) -> None:
    """spyrec: compile torch.export programs for IBM Spyre and run them on the emulator.

    Exit status: 0 on success, 1 for an error (a bad file or input, a failed --check,
    a device fault), 2 for a usage error (an unknown option or a bad value).
    """


def _check_output(path: Path, option: str, *inputs: Path) -> None:
    """Refuse, before any work, an output path that writing would destroy or cannot take:
    an input of the command, a directory, a device node or other non-regular file, or a
    file in a folder that does not exist. The write itself is atomic."""
    def refuse(why: str) -> None:
        raise click.BadParameter(f"{path} {why}; name a new or regular file to write",
                                 param_hint=f"'{option}'")

    if os.path.lexists(path):
        if not path.is_file():
            kind = "a directory" if path.is_dir() else "not a regular file (a device, pipe " \
                                                        "or socket)"
            refuse(f"is {kind}")
        for source in inputs:
            if source.exists() and path.samefile(source):
                refuse(f"is the input {source}: writing it would destroy it")
    parent = path.parent
    if not parent.is_dir():
        refuse(f"is in {parent}, which is not a folder")
    if not os.access(parent, os.W_OK):
        refuse(f"is in {parent}, which this user cannot write")


def _write_text(path: Path, text: str) -> None:
    """Write `text` to `path` atomically (complete or untouched)."""
    from spyrec.target.container import write_atomically

    write_atomically(path, lambda stream: stream.write(text.encode()))


class _StageReport:
    """Each compile stage's time as it ends, and the progress passes report inside a long
    stage: on a terminal an updating line, otherwise a line every `PERIOD` seconds, so a
    log shows that a long compile is alive and how far it is."""

    PERIOD = 10.0  # seconds between progress lines in a log
    REDRAW = 0.2  # seconds between redraws of the terminal's progress line

    def __init__(self) -> None:
        import time

        self.clock = time.monotonic
        self.tty = sys.stderr.isatty()
        self.line_shown = False  # a progress line waits on the terminal to be cleared
        self.shown_what = ""  # the work the terminal's line counts
        self.last = self.clock()

    def stage(self, stage: str, seconds: float) -> None:
        self._clear()
        click.echo(f"  {stage:<10} {seconds * 1000:8.1f} ms", err=True)
        self.last = self.clock()

    def progress(self, stage: str, what: str, done: int, total: int) -> None:
        now = self.clock()
        new_work = self.tty and what != self.shown_what  # shown at once: the line says what runs
        if now - self.last < (self.REDRAW if self.tty else self.PERIOD) and not new_work:
            return
        self.last, self.shown_what = now, what
        text = f"  {stage:<10} {what}: {done}/{total}"
        if self.tty:
            sys.stderr.write(f"\r\x1b[K{text}")
            sys.stderr.flush()
            self.line_shown = True
        else:
            click.echo(text, err=True)

    def _clear(self) -> None:
        if self.line_shown:
            sys.stderr.write("\r\x1b[K")
            self.line_shown = False


def _switches(command: Callable[..., None]) -> Callable[..., None]:
    """The compile switches of `spyrec.pipelines.compile_options` as command-line flags."""
    command = click.option("--fuse/--no-fuse", default=True, show_default=True,
                           help="Fuse ops into kernels (off: every op is a kernel).")(command)
    command = click.option("--double-buffer/--no-double-buffer", default=True,
                           show_default=True,
                           help="Two LX slots per streamed tile (off: one, no overlap).")(command)
    command = click.option("--share", type=click.Choice(["ring", "none"]),
                           help="Force ring sharing of split matmuls' operand tiles on or "
                           "off (default: by the cost model).")(command)
    command = click.option("--ring-reduce/--no-ring-reduce", default=True, show_default=True,
                           help="Split reduced rows over cores, summing their partials "
                           "with ring.reduce (off: each reduced row on one core).")(command)
    command = click.option("--keep-in-lx/--no-keep-in-lx", default=True, show_default=True,
                           help="Keep a kernel's result in LX for the next kernel when the "
                           "cost model says so (off: every tensor between kernels goes "
                           "through LPDDR).")(command)
    command = click.option("--tail", type=click.IntRange(min=0), default=0,
                           help="Row pieces of a K-sliced matmul's last column tile: 1 never, "
                           "N >= 2 where legal (default 0: by the cost model).")(command)
    command = click.option("--target", type=click.Choice(sorted(TARGETS)),
                           help="The target description to plan for (default: "
                           f"{DEFAULT_TARGET.name}); recorded in the binary.")(command)
    return click.option("--resident", type=click.Choice(["a", "b", "acc"]),
                        help="Force every matmul's loop order (default: the cheapest).")(command)


def _pass_options(switches: dict[str, Any]) -> dict[str, dict[str, object]]:
    """`compile_options` from the flags of `_switches` (an unset choice is "")."""
    from spyrec.pipelines import compile_options

    options: dict[str, Any] = {k: "" if v is None else v for k, v in switches.items()}
    return compile_options(**options)


@main.command()
@click.argument("model", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path),
              help="The .spyre to write (with --emit: the file for the IR instead of stdout).")
@click.option("--emit", type=click.Choice(STAGE_NAMES), default="binary",
              help="Stop after this stage and print its IR (binary: write the .spyre). "
                   "ktir prints the kernels alone (standard dialects and ktdp, for any KTIR "
                   "tool); with -o FILE the whole program, its host launch graph included, "
                   "also goes to FILE's .host.mlir in generic form.")
@click.option("--print-ir-after-all", is_flag=True, help="Print the IR after every pass.")
@click.option("--function", help="KTIR input (.mlir): the kernel to compile (if several).")
@click.option("--arg", "constants", multiple=True, metavar="NAME=VALUE",
              help="KTIR input: bind the kernel's scalar argument NAME to VALUE at compile "
                   "time, as a Triton constexpr (repeatable); the binary records the values. "
                   "NAME=? or NAME=LO..HI leaves a row-count argument to run time (a "
                   "symbolic size; `spyrec run k.spyre --arg NAME=N`).")
@click.option("--masked-tails", is_flag=True,
              help="KTIR input: mask every access tile (lanes outside the view are not read, "
                   "reading 0, nor written), as the kernel attribute ktdp.masked_tails does; "
                   "`run --check` then runs the interpreter masked too.")
@click.option("--grid", "grid", metavar="X[,Y[,Z]]",
              help="KTIR input: launch the kernel on this grid instead of its `grid` "
                   "attribute (Triton's launch grid); the binary records it for `run --check`.")
@click.option("--cache/--no-cache", default=None,
              help="Reuse a binary compiled before from the same model, options and compiler "
                   "(default: on, unless SPYREC_CACHE=0; see `spyrec cache`).")
@_switches
def compile(model: Path, output: Path | None, emit: str, print_ir_after_all: bool,
            function: str | None, constants: tuple[str, ...], masked_tails: bool,
            grid: str | None, cache: bool | None, **switches: Any) -> None:
    """Compile MODEL (a .pt2 from torch.export.save, or a hand-written KTIR .mlir kernel)
    to a .spyre binary."""
    if model.suffix == ".spyre":
        raise click.BadParameter(f"{model} is a compiled .spyre already: run it with `spyrec "
                                 "run`, or compile the .pt2 it came from", param_hint="MODEL")
    if emit == "binary" and output is None:
        output = model.with_suffix(".spyre")
    host = output.with_suffix(".host.mlir") if output is not None and emit == "ktir" else None
    for path in (output, host):
        if path is not None:
            _check_output(path, "-o", model)
    from spyrec.cache import resolve_cache
    from spyrec.driver import compile_program, kernel_module, module_text

    report = _StageReport()
    result = compile_program(model, output if emit == "binary" else None, stop_after=emit,
                             print_ir=sys.stdout if print_ir_after_all else None,
                             on_stage=report.stage, function=function,
                             pass_options=_pass_options(switches),
                             cache=resolve_cache(cache), on_progress=report.progress,
                             constants=_constants(constants), masked_tails=masked_tails,
                             grid=_grid(grid))
    if emit != "binary":
        if print_ir_after_all:
            return
        assert result.module is not None  # only a whole binary comes from the cache
        text = module_text(kernel_module(result.module) if emit == "ktir" else result.module)
        if output is None:
            click.echo(text, nl=False)
            return
        _write_text(output, text)
        click.echo(f"wrote {output}", err=True)
        if host is not None:
            _write_text(host, module_text(result.module, generic=True))
            click.echo(f"wrote {host} (the whole program, host launch graph included, in "
                       "generic form)", err=True)
        return
    click.echo(f"wrote {output}{' (from the compile cache)' if result.cached else ''}",
               err=True)


def _grid(spec: str | None) -> tuple[int, ...] | None:
    """`--grid X[,Y[,Z]]`: one to three positive extents."""
    if spec is None:
        return None
    parts = spec.split(",")
    if not 1 <= len(parts) <= 3 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise click.UsageError(f"--grid {spec}: expected one to three positive integers "
                               "separated by commas (--grid 32, --grid 4,8)")
    return tuple(int(p) for p in parts)


def _constants(specs: tuple[str, ...]) -> dict[str, Any]:
    """`--arg NAME=VALUE` options of `compile`: each value an integer or a float, or `?` /
    `LO..HI` (either side optional) for a run-time argument (`ktir_runtime_args.RuntimeArg`)."""
    from spyrec.frontend.ktir_runtime_args import RuntimeArg

    values: dict[str, Any] = {}
    for spec in specs:
        name, sep, text = spec.partition("=")
        if not sep or not name or name in values:
            raise click.UsageError(f"--arg {spec}: expected NAME=VALUE (a number, ? or LO..HI), "
                                   "each name once")
        if text == "?" or ".." in text:
            low, _, high = text.partition("..") if text != "?" else ("", "", "")
            if not all(t.isdigit() for t in (low, high) if t):
                raise click.UsageError(f"--arg {spec}: a run-time range is LO..HI of "
                                       "non-negative integers (either may be left out) or ?")
            values[name] = RuntimeArg(int(low) if low else None, int(high) if high else None)
            continue
        try:
            values[name] = int(text)
        except ValueError:
            try:
                values[name] = float(text)
            except ValueError:
                raise click.UsageError(f"--arg {spec}: {text!r} is not a number") from None
    return values


@main.command()
@click.argument("model", type=click.Path(path_type=Path))
@click.option("--seed", default=0, show_default=True,
              help="Seed of the random inputs (when the .pt2 kept no example inputs).")
@click.option("--keep", type=click.Path(path_type=Path),
              help="Where to write the bad pass's input module (default: a temporary folder).")
@_switches
def bisect(model: Path, seed: int, keep: Path | None, **switches: Any) -> None:
    """Find the first pass whose output leaves PyTorch eager's tolerance on MODEL (a .pt2):
    the graph is run after every pass (graph and KTIR interpreters, then the emulator)."""
    from spyrec.numeric_bisect import bisect as run_bisect

    result = run_bisect(model, seed=seed, keep=keep, pass_options=_pass_options(switches))
    click.echo(result.report())
    if result.first_bad is not None:
        sys.exit(1)


@main.command()
@click.argument("model", type=click.Path(path_type=Path))
@click.option("--until", "condition", required=True,
              help="What must keep holding: error:TEXT (compiling fails with TEXT in the "
                   "message), mismatch (results leave eager's tolerance) or bisect:PASS.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("."),
              show_default=True, help="Folder for the reduced .pt2 and its pytest file.")
@click.option("--budget", default=300, show_default=True,
              help="The most candidate programs to compile.")
def reduce(model: Path, condition: str, output: Path, budget: int) -> None:
    """Shrink MODEL (a .pt2) to a minimal program for which the condition still holds, and
    write it as a .pt2 with a ready pytest case."""
    _check_folder(output, "-o")
    from spyrec.reduce import reduce as run_reduce

    result = run_reduce(model, condition, output, budget=budget,
                        log=lambda line: click.echo(line, err=True))
    click.echo(f"{result.ops_before} ops -> {result.ops_after} after {result.tests} tests")
    click.echo(result.program.graph_module.code.strip())
    for path in result.files:
        click.echo(f"wrote {path}")


@main.group()
def cache() -> None:
    """The on-disk compile cache ($SPYREC_CACHE_DIR, default ~/.cache/spyrec)."""


@cache.command("info")
def cache_info() -> None:
    """Show where the cache is, its entries and their size."""
    from spyrec.cache import CompileCache, enabled_by_default

    store = CompileCache.default()
    entries = list(store.entries())
    size = sum(p.stat().st_size for p in entries)
    state = "on" if enabled_by_default() else "off (SPYREC_CACHE=0)"
    click.echo(f"{store.directory}: {len(entries)} entries, {size / 2**20:.1f} MiB; "
               f"cache {state}")


@cache.command("clear")
def cache_clear() -> None:
    """Remove every entry of the cache."""
    from spyrec.cache import CompileCache

    store = CompileCache.default()
    click.echo(f"removed {store.clear()} entries from {store.directory}")


def _report_run(profile: Any) -> None:
    """The run's headline against the source program's roofline, then the compiled kernels'
    own figures beside it (design note 70)."""
    data = profile.to_dict()
    source = ("the source program's" if data["roofline_source"] == "program"
              else "the kernels' (no source program)")
    padded = data["program_padded_offchip_bytes"]
    shown = "" if padded is None else f", {padded} B stick-padded"
    click.echo(f"emulated time {data['emulated_us']:.2f} us, roofline {data['roofline_us']:.2f} "
               f"us (ratio {data['roofline_ratio']:.2f}, {source}), off-chip "
               f"{data['offchip_bytes']} B (minimum {data['program_min_offchip_bytes']} B{shown}; "
               f"ratio {data['bytes_ratio']:.2f}), LX peak {data['lx_peak_bytes']} B")
    if data["roofline_source"] == "program":
        click.echo(f"compiled kernels: roofline {data['kernel_roofline_us']:.2f} us (ratio "
                   f"{data['kernel_roofline_ratio']:.2f}), their own least traffic "
                   f"{data['min_offchip_bytes']} B, {data['flops']} flop "
                   f"(the program as written: {data['program_flops']})")
    uncounted = data["program_uncounted_ops"]
    if uncounted:
        click.echo("flops not counted (0 in the program's figure): "
                   + ", ".join(f"{op} x{n}" for op, n in uncounted.items()))


def _check_against(model: Path, exe: Any, inputs: list[Any], outputs: Any,
                   ep: Any = None) -> bool:
    import torch

    from spyrec.frontend.importer import load_program

    if model.suffix == ".mlir":  # compiled from hand-written KTIR: the interpreter is eager
        return _check_against_ktir(model, exe, inputs, outputs)

    ep = ep if ep is not None else load_program(model)
    with torch.no_grad():
        expected = ep.module()(*inputs)
    return compare_outputs(expected, outputs, exe)


def _check_against_ktir(source: Path, exe: Any, inputs: list[Any], outputs: Any) -> bool:
    import json

    import numpy as np

    from spyrec.api import to_numpy, to_torch
    from spyrec.frontend.ktir_fixed import FIXED_KEY
    from spyrec.frontend.ktir_specialise import CONSTANTS_KEY, GRID_KEY, MASKED_KEY
    from spyrec.ktir import Device, place_image, run_kernel
    from spyrec.runtime.layout import HOST_DTYPE

    # the scalar arguments the binary was specialised with, the run's run-time arguments
    # (its symbols), then its tensors at their compiled sizes (zero rows past a run-time
    # row count, as the host pads them); the outputs are cropped as the host crops them
    args = json.loads(exe.binary.provenance.get(CONSTANTS_KEY, "{}"))
    if args:
        click.echo("kernel constants: " + ", ".join(f"{k}={v}" for k, v in args.items()),
                   err=True)
    values = {k: v for k, v in exe.last_profile.sizes.items() if k in exe.binary.symbols}
    if values:
        click.echo("run-time arguments: " + ", ".join(f"{k}={v}" for k, v in values.items()),
                   err=True)
    args |= values
    for b, x in zip(exe.binary.inputs, inputs):
        array = to_numpy(x)  # bf16 too
        args[b.name] = np.pad(array, [(0, full - n) for n, full in zip(array.shape,
                                                                        b.layout.shape)])
    # an output stored where an input lives is that argument, updated in place (note 89)
    at = {b.addr: b.name for b in exe.binary.inputs}
    param = {b.name: at.get(b.addr, b.name) for b in exe.binary.outputs}
    for b in exe.binary.outputs:
        if param[b.name] == b.name:
            args[b.name] = np.zeros(b.layout.shape, dtype=HOST_DTYPE[b.layout.host_dtype])
    masked = exe.binary.provenance.get(MASKED_KEY) == "1"
    grid = json.loads(exe.binary.provenance.get(GRID_KEY, "null"))
    if grid:
        click.echo(f"launch grid: {grid}, as compiled", err=True)
    if masked:
        click.echo("masked tails: every access tile masked, as compiled", err=True)
    # a kernel at hard-coded addresses gets its memory image: each array at its address
    fixed = json.loads(exe.binary.provenance.get(FIXED_KEY, "{}"))
    device = Device()
    place_image(device, {name: (address, args.pop(name)) for name, address in fixed.items()})
    result = dict(run_kernel(source, exe.binary.kernels[0].name, args, grid, device=device,
                             masked_tails=masked).outputs)
    for b in exe.binary.outputs:
        if b.name in fixed:
            result[b.name] = device.read(fixed[b.name], b.layout.shape,
                                         HOST_DTYPE[b.layout.host_dtype])
    expected = [to_torch(np.asarray(result[param[b.name]])[tuple(
        slice(0, values[b.symbolic[d]]) if d in b.symbolic else slice(None)
        for d in range(len(b.layout.shape)))]) for b in exe.binary.outputs]
    return compare_outputs(expected, outputs, exe)


def compare_outputs(expected: Any, actual: Any, exe: Any) -> bool:
    """Print the verdict of `spyrec.verdict.check_outputs` per output (on failure the worst
    element: index, expected, got, bound; the aggregate error; NaN/inf class mismatches);
    True when every output passed."""
    from spyrec.verdict import check_outputs

    verdict = check_outputs(expected, actual, exe)
    click.echo(str(verdict))
    return verdict.ok


@main.command()
@click.argument("binary", type=click.Path(path_type=Path))
@click.option("--check", "check", type=click.Path(path_type=Path),
              help="The .pt2 the binary was compiled from: compare with PyTorch eager (or "
                   "the KTIR .mlir: compare with the KTIR interpreter).")
@click.option("--input", "given", multiple=True, metavar="NAME=FILE",
              help=".spyre: an input from a .npy or .pt file (torch.save of a tensor), one "
                   "per input of the binary's signature (`spyrec inspect` lists them; "
                   "repeatable). Default: the --check .pt2's example inputs, else random.")
@click.option("--seed", default=0, show_default=True,
              help="Seed of the random inputs (floats standard normal, integers in [0, 16)).")
@click.option("--numerics", type=click.Choice(["dl16", "ieee"]), default="dl16",
              show_default=True, help="Round fp16/bf16 through DL16 (the device) or IEEE.")
@click.option("--function", help="KTIR input (.mlir): the kernel function to run.")
@click.option("--arg", "args", multiple=True,
              help="KTIR input: NAME=FILE.npy | NAME=rand:SHAPExDTYPE | NAME=INT (repeatable). "
                   "A .spyre compiled from KTIR: NAME=INT, the value of a run-time argument "
                   "(`spyrec inspect` lists them).")
@click.option("--save-outputs", type=click.Path(path_type=Path), metavar="DIR",
              help="Write every output (KTIR: every array argument) after the run as "
                   "NAME.npy in DIR (bfloat16 as float32: .npy has no bfloat16).")
@click.option("--size", "sizes", multiple=True,
              help="SYMBOL=N: the value of a symbolic size for the random inputs (default: "
                   "its upper bound; `spyrec inspect` lists them; repeatable).")
@click.option("--masked-tails", is_flag=True,
              help="KTIR input: mask every access tile (lanes outside the view are not read "
                   "or written), as the kernel attribute ktdp.masked_tails does.")
@click.option("--grid", "grid", metavar="X[,Y[,Z]]",
              help="KTIR input: run the kernel on this grid instead of its `grid` attribute.")
def run(binary: Path, check: Path | None, given: tuple[str, ...], seed: int, numerics: str,
        function: str | None, args: tuple[str, ...], save_outputs: Path | None,
        sizes: tuple[str, ...], masked_tails: bool, grid: str | None) -> None:
    """Run BINARY (a .spyre on the emulator, or a KTIR .mlir in the KTIR interpreter)."""
    if save_outputs is not None:
        _check_folder(save_outputs, "--save-outputs")
    if binary.suffix == ".mlir":
        if given:
            raise click.UsageError("a KTIR kernel takes its arguments as --arg NAME=FILE.npy "
                                   "(or rand:SHAPExDTYPE, or a number), not --input")
        _run_ktir(binary, function, args, save_outputs, seed, masked_tails, _grid(grid))
        return
    if function is not None or masked_tails or grid is not None:
        raise click.UsageError(f"--function, --masked-tails and --grid are for a KTIR .mlir "
                               "kernel (a binary runs on the grid it was compiled for); "
                               f"{binary} takes its inputs as --input NAME=FILE (.npy or .pt)")
    if given and args:
        raise click.UsageError("--arg gives a run-time argument's value for random inputs; "
                               "with --input the arrays' rows give it")
    if given and sizes:
        raise click.UsageError("--size sets the shapes of random inputs; with --input the "
                               "arrays' shapes give the sizes")

    from spyrec.api import load

    exe = load(binary, numerics=numerics)
    if args and not _from_ktir(exe.binary):
        raise click.UsageError(f"--arg is for a KTIR .mlir kernel or a .spyre compiled from "
                               f"one; {binary} takes its inputs as --input NAME=FILE (.npy or "
                               ".pt), and its symbolic sizes as --size")
    values = _symbol_values(sizes, exe.binary.symbols, "--size")
    values |= _symbol_values(args, exe.binary.symbols, "--arg")
    program = None
    if check is not None and check.suffix != ".mlir":
        from spyrec.frontend.importer import load_program

        program = load_program(check)
        _check_signature(program, exe, binary, check)
    inputs = None
    if given:
        inputs = _given_inputs(given, exe)
    elif program is not None and not sizes:
        inputs = _example_inputs(program, exe)
        if inputs is not None:
            click.echo(f"inputs: the example inputs saved in {check}", err=True)
    if inputs is None:
        inputs = random_inputs(exe.binary, values, seed)
    outputs = exe(*inputs)
    _report_run(exe.last_profile)
    if save_outputs is not None:
        results = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
        _save_arrays(save_outputs, {b.name: _host_array(t)
                                    for b, t in zip(exe.binary.outputs, results)})
    if check is not None and not _check_against(check, exe, inputs, outputs, program):
        raise SystemExit(1)


# Random integer inputs (token ids, positions, cache slots) are drawn from [0, 16): a table
# smaller than that, or a size that needs other values, takes --input or --check's examples.
RANDOM_INT_BOUND = 16


def random_inputs(binary: SpyreBinary, values: dict[str, int], seed: int) -> list[Tensor]:
    """Random inputs for `binary`'s user inputs at the symbol `values` (its bounds where
    unset): floats normal, clamped to the input's limit where integers are cast from it;
    integers in [0, RANDOM_INT_BOUND) as ids and positions are, below the input's limit
    (`int_limit`, the magnitude that keeps the integers the program computes exact)."""
    import torch

    from spyrec.api import TORCH_DTYPES

    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for b in binary.user_inputs:
        shape = [values.get(b.symbolic.get(d, ""), n) for d, n in enumerate(b.layout.shape)]
        dtype = TORCH_DTYPES[b.layout.host_dtype]
        if dtype.is_floating_point:
            drawn = torch.randn(*shape, generator=gen)
            if b.int_limit is not None:
                drawn = drawn.clamp(-b.int_limit, b.int_limit)
            inputs.append(drawn.to(dtype))
        elif dtype == torch.bool:  # a mask: half of it set
            inputs.append(torch.rand(*shape, generator=gen) < 0.5)
        else:
            high = RANDOM_INT_BOUND if b.int_limit is None else min(RANDOM_INT_BOUND,
                                                                    b.int_limit + 1)
            inputs.append(torch.randint(0, high, shape, generator=gen, dtype=dtype))
    return inputs


def _check_folder(path: Path, option: str) -> None:
    """Refuse, before any work, a folder option naming an existing non-folder."""
    if os.path.lexists(path) and not path.is_dir():
        raise click.BadParameter(f"{path} exists and is not a folder; name a folder (it is "
                                 "created if missing)", param_hint=f"'{option}'")


def _host_array(tensor: Any) -> Any:
    """A result as a NumPy array for a .npy file; bfloat16 becomes float32 (exactly)."""
    import torch

    if tensor.dtype == torch.bfloat16:
        tensor = tensor.float()
    return tensor.detach().cpu().numpy()


def _save_arrays(folder: Path, arrays: dict[str, Any]) -> None:
    """Write each array as NAME.npy in `folder` (created if missing), each atomically."""
    import io

    import numpy as np

    from spyrec.target.container import write_atomically

    folder.mkdir(parents=True, exist_ok=True)
    for name, array in arrays.items():
        buffer = io.BytesIO()
        np.save(buffer, array)
        data = buffer.getvalue()
        write_atomically(folder / f"{name}.npy", lambda stream, data=data: stream.write(data))
    click.echo(f"wrote {len(arrays)} arrays to {folder}")


def _given_inputs(given: tuple[str, ...], exe: Any) -> list[Any]:
    """The --input NAME=FILE options as the binary's inputs, in its signature's order:
    every input named once, each file's shape and dtype checked against the signature."""
    import torch

    from spyrec.api import TORCH_DTYPES

    bindings = {b.name: b for b in exe.binary.user_inputs}
    known = ", ".join(bindings)
    tensors: dict[str, Any] = {}
    for item in given:
        name, sep, file = item.partition("=")
        if not sep or not name or not file:
            raise click.BadParameter(f"{item!r}: expected NAME=FILE (.npy or .pt)",
                                     param_hint="'--input'")
        if name not in bindings:
            raise click.BadParameter(f"{item!r}: the binary has no input '{name}' (its "
                                     f"inputs: {known})", param_hint="'--input'")
        if name in tensors:
            raise click.BadParameter(f"{item!r}: input '{name}' is given twice",
                                     param_hint="'--input'")
        tensors[name] = _load_tensor(Path(file), f"--input {item}")
    missing = [n for n in bindings if n not in tensors]
    if missing:
        raise click.BadParameter(f"no file for input(s) {', '.join(missing)}: give one "
                                 f"--input NAME=FILE for each of {known}",
                                 param_hint="'--input'")
    for name, tensor in tensors.items():
        b = bindings[name]
        want = TORCH_DTYPES[b.layout.host_dtype]
        shape = [b.symbolic.get(d, n) for d, n in enumerate(b.layout.shape)]
        ranges = exe.binary.symbols
        fits = tensor.dim() == len(shape) and all(
            n == s if isinstance(s, int) else ranges[s][0] <= n <= ranges[s][1]
            for n, s in zip(tensor.shape, shape))
        if tensor.dtype != want or not fits:
            bounds = "".join(f"; {s} in {ranges[s][0]}..{ranges[s][1]}"
                             for s in shape if isinstance(s, str))
            hint = " (.npy has no bfloat16: save a torch tensor as .pt)" \
                if want == torch.bfloat16 else ""
            raise RunError(f"input '{name}': {list(tensor.shape)} {tensor.dtype} does not "
                           f"match the binary's [{', '.join(map(str, shape))}] {want}{bounds}; "
                           f"convert the file to that dtype and shape{hint}")
    return [tensors[n] for n in bindings]


def _load_tensor(path: Path, what: str) -> Any:
    """A tensor from a .npy (NumPy, no pickles) or .pt (`torch.save` of one tensor) file."""
    import numpy as np
    import torch

    if not path.is_file():
        raise RunError(f"{what}: {path} is not a file")
    if path.suffix == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except ValueError as exc:
            raise RunError(f"{what}: {path} is not a NumPy array file ({exc})") from None
        if array.dtype.kind not in "fiub":
            raise RunError(f"{what}: {path} holds {array.dtype} values; save a numeric array")
        return torch.from_numpy(np.ascontiguousarray(array))
    if path.suffix == ".pt":
        try:
            value = torch.load(path, weights_only=True)
        except Exception as exc:  # noqa: BLE001 - torch raises many kinds for a file not its own
            raise RunError(f"{what}: {path} is not a torch.save file ({exc})") from None
        if not isinstance(value, torch.Tensor):
            raise RunError(f"{what}: {path} holds a {type(value).__name__}, not a tensor; "
                           "torch.save one tensor per input")
        return value
    raise RunError(f"{what}: {path} is neither .npy nor .pt; save the input with numpy.save "
                   "or torch.save")


def _check_signature(program: Any, exe: Any, binary: Path, source: Path) -> None:
    """Refuse a --check .pt2 that is not the binary's program: its inputs and outputs must
    have the binary's count, dtypes and static dims (a symbolic dim may be anything)."""
    import torch

    from spyrec.api import TORCH_DTYPES

    sig = program.graph_signature
    holders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    user = [holders[spec.arg.name].meta.get("val") for spec in sig.input_specs
            if spec.kind.name == "USER_INPUT" and spec.arg.name in holders]
    output_node = next(n for n in program.graph.nodes if n.op == "output")
    results = [getattr(v, "meta", {}).get("val") for v in output_node.args[0]]
    advice = (f"pass the .pt2 {binary} was compiled from (its signature: `spyrec inspect "
              f"{binary} --no-programs`)")
    for kind, vals, bindings in (("input", user, exe.binary.user_inputs),
                                 ("output", results, exe.binary.outputs)):
        if len(vals) != len(bindings):
            raise RunError(f"{source} has {len(vals)} {kind}(s), {binary} has "
                           f"{len(bindings)}; {advice}")
        for val, b in zip(vals, bindings):
            if not isinstance(val, torch.Tensor):
                continue
            theirs = [int(n) if isinstance(n, int) else str(n) for n in val.shape]
            ours = [b.symbolic.get(d, n) for d, n in enumerate(b.layout.shape)]
            same_dims = len(theirs) == len(ours) and all(
                t == o for t, o in zip(theirs, ours) if isinstance(t, int) and isinstance(o, int))
            want = TORCH_DTYPES.get(b.layout.host_dtype, torch.bool)
            if not same_dims or (kind == "input" and val.dtype != want):
                raise RunError(f"{source} does not match {binary}: {kind} '{b.name}' is "
                               f"{theirs} {val.dtype} in the .pt2 and {ours} {want} in the "
                               f"binary; {advice}")


def _example_inputs(program: Any, exe: Any) -> list[Any] | None:
    """The .pt2's own example inputs when they fit the binary's signature: token ids and
    positions that random numbers would make invalid (an embedding row, a KV-cache slot)."""
    from spyrec.api import TORCH_DTYPES

    example = getattr(program, "example_inputs", None)
    if not example or example[1] or len(example[0]) != len(exe.binary.user_inputs):
        return None
    import torch

    tensors = list(example[0])
    for t, b in zip(tensors, exe.binary.user_inputs):
        if not isinstance(t, torch.Tensor) or t.dtype != TORCH_DTYPES[b.layout.host_dtype] \
                or list(t.shape) != list(b.layout.shape):
            return None
    return [t.detach().clone() for t in tensors]


def _symbol_values(sizes: tuple[str, ...], symbols: dict[str, tuple[int, int]],
                   option: str) -> dict[str, int]:
    """--size SYMBOL=N options (or --arg NAME=N: a KTIR binary's run-time arguments), checked
    against the binary's symbolic sizes: known, an integer, in the compiled range."""
    values: dict[str, int] = {}
    for item in sizes:
        name, _, number = item.partition("=")
        if name not in symbols:
            known = ", ".join(symbols) or "none"
            raise click.ClickException(f"{option} {item}: no symbolic size '{name}' (the "
                                       f"binary has: {known})")
        if not number.isdigit():
            raise click.ClickException(f"{option} {item}: expected NAME=N with N an integer")
        lower, upper = symbols[name]
        if not lower <= int(number) <= upper:
            raise click.ClickException(f"{option} {item}: outside the range {lower}..{upper} "
                                       f"the binary was compiled for; recompile with a wider "
                                       f"range (spyrec compile ... --arg {name}=LO..HI)")
        values[name] = int(number)
    return values


def _from_ktir(binary: Any) -> bool:
    """Whether `binary` was compiled from a KTIR kernel (its symbols are run-time arguments)."""
    return str(binary.provenance.get("source", "")).endswith(".mlir")


def _run_ktir(source: Path, function: str | None, args: tuple[str, ...],
              save_outputs: Path | None, seed: int, masked_tails: bool,
              grid: tuple[int, ...] | None = None) -> None:
    import numpy as np

    from spyrec.ktir import parse_arg, run_kernel

    if not source.exists():
        raise click.ClickException(f"{source}: no such file")
    if function is None:
        raise click.ClickException(f"{source}: name the kernel to run with --function NAME")
    for arg in args:
        _refuse_oversized_random(arg)
    values = dict(parse_arg(a, seed + i) for i, a in enumerate(args))
    result = run_kernel(source, function, values, grid, masked_tails=masked_tails)
    click.echo(f"@{function}: {result.latency}")
    for name, array in result.outputs.items():
        click.echo(f"  {name}: {list(array.shape)} {array.dtype}, "
                   f"mean {float(np.mean(array.astype(np.float64))):.4g}")
    if save_outputs is not None:
        _save_arrays(save_outputs, result.outputs)


def _refuse_oversized_random(arg: str) -> None:
    """Refuse `NAME=rand:SHAPExDTYPE` when the array would not fit in the memory available
    now, before NumPy tries: drawing it takes 8 bytes per element (float64 draws) plus the
    array itself, and a failed or swapping allocation of tens of GB is no answer."""
    import math

    import numpy as np

    _, _, value = arg.partition("=")
    if not value.startswith("rand:"):
        return
    *dims, dtype = value.removeprefix("rand:").split("x")
    try:
        count = math.prod(int(d) for d in dims)
        itemsize = np.dtype(dtype).itemsize
    except (ValueError, TypeError):
        return  # malformed: parse_arg says how
    need = count * (8 + itemsize)
    available = _available_memory()
    if available is not None and need > available:
        raise RunError(f"--arg {arg}: {count} elements need about {need / 2**30:.1f} GiB to "
                       f"draw, {available / 2**30:.1f} GiB of memory are available; use a "
                       "smaller shape")


def _available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux's MemAvailable), or None."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


@main.command()
@click.argument("model", type=click.Path(path_type=Path))
@_switches
def explain(model: Path, **switches: Any) -> None:
    """Print each kernel's decisions for MODEL (a .pt2): fusion, core split, tiles and loop
    order, why, and the alternatives' predicted cost."""
    from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr

    from spyrec.dialects.spyre import KernelOp
    from spyrec.driver import compile_program

    result = compile_program(model, stop_after="graph", pass_options=_pass_options(switches))
    assert result.module is not None  # only a whole binary comes from the cache
    for kernel in (op for op in result.module.walk() if isinstance(op, KernelOp)):
        attrs = kernel.attributes
        fused = attrs.get("fused")
        nodes = [a.data for a in fused.data] if isinstance(fused, ArrayAttr) else []
        reason = attrs.get("reason")
        click.echo(f"kernel {kernel.sym_name.data}: {len(nodes)} op(s) "
                   f"({', '.join(dict.fromkeys(nodes))}); "
                   f"{reason.data if reason is not None else ''}")  # type: ignore[attr-defined]
        fusion = attrs.get("spyre.fusion")  # spyre-fuse's cost-model decisions (note 50)
        if isinstance(fusion, ArrayAttr):
            for decision in fusion.data:
                click.echo(f"  fusion: {decision.data}")
        for key, title in (("spyre.partition", "cores"), ("spyre.tiling", "tiles")):
            ledger = attrs.get(key)
            if not isinstance(ledger, DictionaryAttr):
                continue
            d = ledger.data
            click.echo(f"  {title}: {d['choice'].data}: {d['reason'].data}")  # type: ignore[attr-defined]
            alternatives = d.get("alternatives")
            if isinstance(alternatives, ArrayAttr) and alternatives.data:
                click.echo("    alternatives: " + "; ".join(a.data for a in alternatives.data))


@main.command()
@click.option("--model", "model_name", default="decoder", show_default=True,
              help="A model of the zoo (`--list` shows them): decoder (two Llama-shaped "
                   "layers), decoder-ffn, mlp, convnet, granite-8b-layer, granite-8b-decode. "
                   "--features and --batch apply to the first three.")
@click.option("--list", "list_models", is_flag=True, help="List the zoo's models and exit.")
@click.option("--dtype", type=click.Choice(["float16", "float32", "bfloat16"]),
              default="float16", show_default=True)
@click.option("--features", default=256, show_default=True, type=click.IntRange(1, 4096),
              help="Hidden size (the decoders: a multiple of 64, their head dim).")
@click.option("--batch", default=64, show_default=True, type=click.IntRange(1, 8192),
              help="Rows (batch x sequence; the decoders: an even number, two sequences).")
def demo(model_name: str, list_models: bool, dtype: str, features: int, batch: int) -> None:
    """Build a model in-process, export, compile, run on the emulator, compare with eager."""
    from spyrec.zoo import ZOO

    if list_models:
        for model in ZOO.values():
            click.echo(f"{model.name:18} {model.summary}")
        return
    if model_name not in ZOO:
        raise click.BadParameter(f"'{model_name}' is not in the zoo; choose one of "
                                 f"{', '.join(ZOO)}", param_hint="'--model'")
    if model_name in ("decoder", "decoder-ffn") and batch % 2:
        raise click.BadParameter(f"{batch}: the {model_name} runs two sequences of "
                                 "batch/2 rows; give an even number", param_hint="'--batch'")
    if model_name == "decoder" and features % 64:
        raise click.BadParameter(f"{features}: the decoder's attention heads are 64 wide; "
                                 "give a multiple of 64", param_hint="'--features'")
    from spyrec.demo import run_demo

    if not run_demo(dtype, features, batch, model_name):
        raise SystemExit(1)


@main.command()
@click.argument("binary", type=click.Path(path_type=Path))
@click.option("--trace", type=click.Path(path_type=Path),
              help="Write a Chrome trace-event JSON (opens in Perfetto / chrome://tracing).")
@click.option("--json", "as_json", is_flag=True, help="Print the profile as JSON.")
@click.option("--mode", type=click.Choice(["full", "timing"]), default="full", show_default=True,
              help="timing: no data is computed (for models too large to compute here).")
@click.option("--seed", default=0, show_default=True,
              help="Seed of the random inputs (floats standard normal, integers in [0, 16)).")
@click.option("--size", "sizes", multiple=True,
              help="SYMBOL=N: the value of a symbolic size (default: its upper bound; "
                   "`spyrec inspect` lists them; repeatable).")
def profile(binary: Path, trace: Path | None, as_json: bool, mode: str, seed: int,
            sizes: tuple[str, ...]) -> None:
    """Run BINARY on the emulator and report time, utilisation and the roofline per kernel."""
    if trace is not None:
        _check_output(trace, "--trace", binary)
    import json

    import numpy as np

    from spyrec.runtime.emulator import Emulator, InputError
    from spyrec.runtime.layout import HOST_DTYPE
    from spyrec.target.container import read_spyre

    b = read_spyre(binary)
    values = _symbol_values(sizes, b.symbols, "--size")
    rng = np.random.default_rng(seed)
    inputs = None
    if mode == "full":
        inputs = []
        for t in b.user_inputs:
            shape = [values.get(t.symbolic.get(d, ""), n) for d, n in enumerate(t.layout.shape)]
            dtype = HOST_DTYPE[t.layout.host_dtype]
            inputs.append(rng.standard_normal(shape).astype(dtype)
                          if dtype.kind == "f" or t.layout.host_dtype == "bfloat16" else
                          rng.integers(0, RANDOM_INT_BOUND, shape).astype(dtype))
    try:
        _, prof = Emulator(b, mode=mode).run(inputs, sizes=values)
    except InputError as error:
        raise click.ClickException(str(error)) from None
    data = prof.to_dict()
    if trace is not None:
        _write_text(trace, json.dumps({"traceEvents": prof.trace_events(),
                                       "displayTimeUnit": "ns"}))
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    _report_run(prof)
    util = ", ".join(f"{k} {v:.0%}" for k, v in data["utilisation"].items())
    click.echo(f"utilisation: {util}")
    click.echo("per kernel, against the compiled kernel's own figures:")
    click.echo(f"{'kernel':<8} {'cores':>5} {'emulated us':>12} {'roofline us':>12} {'ratio':>6} "
               f"{'bytes/min':>9}")
    for k in data["kernels"]:
        traffic = k["offchip_bytes"] / k["min_offchip_bytes"] if k["min_offchip_bytes"] else 0.0
        click.echo(f"{k['name']:<8} {k['cores']:>5} {k['emulated_us']:>12.2f} "
                   f"{k['roofline_us']:>12.2f} {k['roofline_ratio']:>6.2f} {traffic:>9.2f}")
    for warning in data.get("warnings", []):
        click.echo(f"warning: {warning}")
    if trace is not None:
        click.echo(f"wrote {trace}")


@main.command()
@click.argument("binary", type=click.Path(path_type=Path))
@click.option("--programs/--no-programs", default=True, help="Disassemble per-core programs.")
def inspect(binary: Path, programs: bool) -> None:
    """Show what is inside BINARY: signature, plans, kernels, per-core programs."""
    from spyrec.target.container import build_plans, read_spyre

    b = read_spyre(binary)
    # the kernels' dataflow (for `spyrec.verdict`) is machine-readable, one entry a kernel
    shown = {k: v for k, v in b.provenance.items() if k != "dataflow"}
    flow = " (and the kernels' dataflow)" if "dataflow" in b.provenance else ""
    click.echo(f"target {b.target}; provenance {shown}{flow}")
    for name, (lower, upper) in b.symbols.items():
        if _from_ktir(b):  # a KTIR kernel's symbols are its run-time arguments
            click.echo(f"run-time argument {name}: {lower}..{upper} (spyrec run ... --arg "
                       f"{name}=N; a symbolic size, compiled at {upper})")
        else:
            click.echo(f"symbolic size {name}: {lower}..{upper} (compiled at {upper})")
    for kind, bindings in (("input", b.inputs), ("output", b.outputs)):
        for t in bindings:
            shape = [t.symbolic.get(d, n) for d, n in enumerate(t.layout.shape)]
            stored = ("" if t.layout.perm is None else
                      f", stored as {list(t.layout.device_shape)} (dims {list(t.layout.perm)})")
            if t.layout.block is not None:  # a hand-written kernel's narrow tiles
                columns = "1 column" if t.layout.block == 1 else f"{t.layout.block} columns"
                stored += (f", stored as {list(t.layout.device_shape)} (blocks of {columns}, "
                           "each in whole sticks)")
            limit = "" if t.int_limit is None else f", |values| <= {t.int_limit}"
            made = f" (made by the host: the key mask of {t.made})" if t.made else ""
            click.echo(f"{kind} {t.name}: [{', '.join(map(str, shape))}] {t.layout.host_dtype} "
                       f"@ {t.addr:#x}{stored}{limit}{made}")
    prep, exe = build_plans(b)
    click.echo("job preparation plan:")
    for step in prep:
        click.echo(f"  {step}")
    click.echo("job execution plan:")
    for step in exe:
        shown = step
        if step.get("fn") == "patch_trips":  # listed below, one line per entry
            shown = {**step, "patches": f"<{len(step['patches'])} entries>"}
        click.echo(f"  {shown}")
    if b.patches:
        click.echo(f"patch table ({len(b.patches)} loops; trips = how many thresholds the "
                   "size reaches):")
        for p in b.patches:
            name = b.kernels[p.kernel].name
            shown = (f"runs if {p.symbol} >= {p.thresholds[0]}" if len(p.thresholds) == 1
                     else f"{p.symbol} thresholds {list(p.thresholds)}")
            click.echo(f"  kernel {name} core {p.core} pc {p.pc}: {shown}")
    if b.program_cost is not None:
        at = {name: upper for name, (_, upper) in b.symbols.items()}
        click.echo(f"source program (as written, at the upper bounds): "
                   f"{b.program_cost.flops(at)} flop, least off-chip traffic "
                   f"{b.program_cost.min_offchip_bytes(at)} B "
                   f"({b.program_cost.padded_offchip_bytes(at)} B stick-padded)")
    for k in b.kernels:
        total = sum(len(p) for p in k.programs.values())
        click.echo(f"kernel {k.name}: {k.num_cores} cores, {total} instructions, "
                   f"{k.flops} flop, fused {k.provenance}")
        if programs:
            for core, prog in sorted(k.programs.items()):
                click.echo(f"  core {core}:")
                for pc, line in enumerate(_disassembly(prog)):
                    click.echo(f"    {pc:4d}: {line}")



def _disassembly(program: list[Instr]) -> list[str]:
    """One line per instruction; loop bodies indented, loop.incr naming the field it steps."""
    from spyrec.target.isa import loop_spans

    spans = loop_spans(program)
    lines = []
    for instr, span in zip(program, spans, strict=True):
        text = instr.disassemble()
        if instr.op == "loop.incr":
            target = program[instr.arg("pc")]
            text += f"  ; {target.op} {target.spec.fields[instr.arg('field')]}"
        lines.append(("  " if span is not None else "") + text)
    return lines


if __name__ == "__main__":
    main()
