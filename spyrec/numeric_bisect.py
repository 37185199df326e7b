"""Pass-level numeric bisection: which pass made the results wrong?

`bisect(program)` compiles the program pass by pass and, after every pass, runs what the
compile has so far on the same inputs and compares it with PyTorch eager:

* after the graph passes (spyre-legalize ... spyre-tile) the `spyre` graph in the graph
  interpreter (`spyrec.graph_interpreter`);
* after convert-spyre-to-ktir and spyre-place-memory the graph with its kernels lowered,
  each `spyre.launch` in the KTIR reference interpreter;
* after spyre-schedule-dataflow (and spyre-place-guards) the emitted binary on the
  emulator (full mode), so this checkpoint covers the scheduler and the emission.

A pass that leaves the module unchanged gets no checkpoint of its own.

The first checkpoint out of tolerance names the pass; its input module is written to a file
and the `spyre-opt` command that runs that pass on it is returned. Results are compared by
`spyrec.verdict.check_outputs`: for the interpreters with each output's cone of graph ops
(`graph_model_info`, IEEE rounding after every op), for the emulator with the binary's own
per-output error model.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from xdsl.dialects.builtin import ModuleOp

from spyrec.api import Executable
from spyrec.diagnostics import SpyrecError
from spyrec.driver import _run_pass, make_context, module_text
from spyrec.frontend.importer import import_program, load_program
from spyrec.graph_interpreter import GraphInterpreter, InterpretError, graph_model_info
from spyrec.pipelines import DEFAULT_PIPELINE, pass_spec
from spyrec.verdict import ModelInfo, Verdict, check_outputs


@dataclass
class Checkpoint:
    """The comparison after one pass."""

    after: str
    how: str  # "graph interpreter", "KTIR interpreter", "emulator"
    status: str  # "ok", "out of tolerance", "not run: <why>", "failed: <error>"
    error: float = 0.0  # the largest error / bound over the outputs and criteria
    worst: str = ""  # the worst output's verdict

    @property
    def bad(self) -> bool:
        return self.status == "out of tolerance" or self.status.startswith("failed")


@dataclass
class BisectResult:
    checkpoints: list[Checkpoint] = field(default_factory=list)
    first_bad: str | None = None
    reproducer: str | None = None  # the spyre-opt command that runs the bad pass on its input

    def report(self) -> str:
        lines = [f"{'after pass':<26} {'checked by':<18} {'error / allowed':>15}  result"]
        for c in self.checkpoints:
            ratio = f"{c.error:.3g}" if c.status in ("ok", "out of tolerance") else "-"
            lines.append(f"{c.after:<26} {c.how:<18} {ratio:>15}  {c.status}"
                         + (f" ({c.worst})" if c.worst and c.bad else ""))
        if self.first_bad is None:
            lines.append("every checkpoint is within tolerance of eager")
        else:
            failed = self.checkpoints[-1].status.startswith("failed")
            lines.append(f"first {'failing pass' if failed else 'pass out of tolerance'}: "
                         f"{self.first_bad}")
            lines.append(f"reproduce: {self.reproducer}")
        return "\n".join(lines)


def program_inputs(program: torch.export.ExportedProgram, seed: int,
                   examples: bool = True) -> list[torch.Tensor]:
    """The program's example inputs if it kept them (and `examples`), else random ones of
    its input specs."""
    example = getattr(program, "example_inputs", None)
    if examples and example is not None and example[0] and not example[1]:
        tensors = list(example[0])
        if all(isinstance(t, torch.Tensor) for t in tensors):
            return [t.detach().clone() for t in tensors]
    generator = torch.Generator().manual_seed(seed)
    inputs = []
    for node in program.graph.nodes:
        if node.op != "placeholder" or node.name not in program.graph_signature.user_inputs:
            continue
        val = node.meta["val"]
        if val.dtype.is_floating_point:
            inputs.append(torch.randn(*val.shape, generator=generator).to(val.dtype))
        else:
            inputs.append(torch.randint(0, 16, tuple(val.shape), generator=generator,
                                        dtype=val.dtype))
    return inputs


def _worst(verdict: Verdict) -> tuple[float, str]:
    """The largest error / bound over the outputs and criteria (infinite for a class or
    shape mismatch) and that output's verdict in one line."""
    worst, note = 0.0, ""
    for output in verdict.outputs:
        ratio = max(output.element_ratio, output.aggregate_ratio,
                    math.inf if output.class_mismatches or output.note else 0.0)
        if ratio >= worst:
            worst, note = ratio, " ".join(str(output).split())
    return worst, note


def bisect(program: torch.export.ExportedProgram | str | Path, seed: int = 0,
           keep: str | Path | None = None,
           pass_options: dict[str, dict[str, object]] | None = None) -> BisectResult:
    """Compile `program` pass by pass, checking each pass's output against eager."""
    source = "<memory>"
    if not isinstance(program, torch.export.ExportedProgram):
        source = str(program)
        program = load_program(program)
    imported = import_program(program, source)
    # a program with symbolic sizes is compiled, and so checked, at their upper bounds (the
    # specialised program's shapes; its example inputs are zeros, so random ones)
    inputs = (program_inputs(imported.symbolic.program, seed, examples=False)
              if imported.symbolic is not None else program_inputs(program, seed))
    with torch.no_grad():
        eager = program.module()(*inputs)
    expected = list(eager) if isinstance(eager, (tuple, list)) else [eager]
    names = [spec.name for spec in imported.outputs]
    module = imported.module
    ctx = make_context()
    result = BisectResult()
    keep_dir = Path(keep) if keep is not None else Path(tempfile.mkdtemp(prefix="spyrec-bisect-"))
    graph_info: ModelInfo | None = None

    text = module_text(module)
    for stage in DEFAULT_PIPELINE:
        for name in stage.passes:
            options = {**stage.options_of(name), **(pass_options or {}).get(name, {})}
            before = text
            try:
                _run_pass(name, module, ctx, options, ())
            except SpyrecError as exc:
                result.checkpoints.append(Checkpoint(name, "-", f"failed: {exc}"))
                _name_bad(result, name, options, before, keep_dir)
                return result
            text = module_text(module)
            if text == before:  # the pass changed nothing (spyre-place-guards on static sizes)
                continue
            if graph_info is None:  # the graph as imported: every op still its own
                graph_info = graph_model_info(module, len(expected))
            how = {"graph": "graph interpreter", "ktir": "KTIR interpreter"}.get(
                stage.name, "emulator")
            try:
                if how == "emulator":
                    actual, info = _emulate(module, imported.weights, inputs)
                else:
                    actual = GraphInterpreter(module, imported.weights).run(inputs)
                    info = graph_info
            except InterpretError as exc:
                result.checkpoints.append(Checkpoint(name, how, f"not run: {exc}"))
                continue
            except SpyrecError as exc:
                result.checkpoints.append(Checkpoint(name, how, f"failed: {exc}"))
                _name_bad(result, name, options, before, keep_dir)
                return result
            verdict = check_outputs(expected, actual, info, names)
            ratio, note = _worst(verdict)
            status = "ok" if verdict.ok else "out of tolerance"
            result.checkpoints.append(Checkpoint(name, how, status, ratio, note))
            if status != "ok":
                _name_bad(result, name, options, before, keep_dir)
                return result
    return result


def _emulate(module: ModuleOp, weights: dict[str, np.ndarray],
             inputs: list[torch.Tensor]) -> tuple[list[torch.Tensor], Executable]:
    """The emitted binary's results on the emulator, and the executable (its error model)."""
    from spyrec.passes.spyrecode.spyre_emit_spyrecode import build_binary

    exe = Executable(build_binary(module, weights))
    out = exe(*inputs)
    return (list(out) if isinstance(out, tuple) else [out]), exe


def _name_bad(result: BisectResult, name: str, options: dict[str, object], before: str,
              keep_dir: Path) -> None:
    keep_dir.mkdir(parents=True, exist_ok=True)
    path = keep_dir / f"{name}.input.mlir"
    path.write_text(before)
    result.first_bad = name
    result.reproducer = f"spyre-opt {path} -p '{pass_spec(name, options)}'"
