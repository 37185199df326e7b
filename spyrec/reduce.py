"""Test-case reduction: shrink a program that makes spyrec fail to a minimal one.

`reduce(program, condition)` works on the program's ATen graph (`ExportedProgram.module()`)
and keeps every change after which `condition` still holds:

1. **Cone**: the graph is cut to the dependency cone of one value, the cones tried from
   the smallest up: the failure usually needs one op and what feeds it.
2. **Bypass**: each op whose result has the shape and dtype of one of its tensor operands
   is replaced by that operand, from the output backwards, until no op can go.
3. Inputs no op reads any more are dropped.

Each candidate is exported again with `torch.export.export`, so it is a real program, and
tested in this process. Conditions (`--until`):

* `error:TEXT`: compiling fails with a message containing TEXT (`error:` alone: any error);
* `mismatch`: the program compiles but its results fail the comparison with eager
  (`spyrec.verdict`);
* `bisect:PASS`: `spyrec bisect` names PASS as the first pass out of tolerance.

The result is written as a `.pt2` and a ready pytest file that asserts the condition, with
the reduced graph's code in its docstring.
"""

from __future__ import annotations

import operator
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.fx

from spyrec.diagnostics import CompileError, SpyrecError


@dataclass
class Condition:
    """What must keep holding while the program shrinks."""

    text: str
    check: Callable[[torch.export.ExportedProgram, tuple[torch.Tensor, ...]], bool]


def _compile_error(program: torch.export.ExportedProgram) -> str | None:
    import spyrec

    try:
        spyrec.compile(program, cache=False)
    except Exception as exc:  # noqa: BLE001 - a crash is a failure to keep, like an error
        return f"{type(exc).__name__}: {exc}"
    return None


def _mismatch(program: torch.export.ExportedProgram, inputs: tuple[torch.Tensor, ...]) -> bool:
    """The results fail `spyrec.verdict.check_outputs` against eager."""
    import spyrec
    from spyrec.verdict import check_outputs

    try:
        exe = spyrec.compile(program, cache=False)
        actual = exe(*inputs)
    except Exception:  # noqa: BLE001 - not the failure being reduced
        return False
    with torch.no_grad():
        expected = program.module()(*inputs)
    return not check_outputs(_tensors(expected), _tensors(actual), exe).ok


def _tensors(value: Any) -> list[torch.Tensor]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def parse_condition(text: str) -> Condition:
    """`error:TEXT`, `mismatch` or `bisect:PASS` as a Condition (CompileError otherwise)."""
    kind, _, argument = text.partition(":")
    if kind == "error":
        def fails(program: torch.export.ExportedProgram, _: tuple[torch.Tensor, ...]) -> bool:
            error = _compile_error(program)
            return error is not None and argument in error

        return Condition(text, fails)
    if kind == "mismatch" and not argument:
        return Condition(text, _mismatch)
    if kind == "bisect" and argument:
        from spyrec.numeric_bisect import bisect

        return Condition(text, lambda p, _: bisect(p).first_bad == argument)
    raise CompileError(f"--until {text!r}: expected error:TEXT, mismatch or bisect:PASS")


@dataclass
class Reduction:
    program: torch.export.ExportedProgram
    inputs: tuple[torch.Tensor, ...]
    ops_before: int
    ops_after: int
    tests: int = 0
    files: list[Path] = field(default_factory=list)


def _ops(graph: torch.fx.Graph) -> list[torch.fx.Node]:
    return [n for n in graph.nodes if n.op == "call_function"]


def _is_tensor(node: torch.fx.Node) -> bool:
    return isinstance(node.meta.get("val"), torch.Tensor)


def _cone(output: torch.fx.Node) -> set[torch.fx.Node]:
    seen: set[torch.fx.Node] = set()
    stack = [output]
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(node.all_input_nodes)
    return seen


class _Reducer:
    def __init__(self, program: torch.export.ExportedProgram, inputs: tuple[torch.Tensor, ...],
                 condition: Condition, budget: int, log: Callable[[str], None]):
        self.root = program.module()
        self.names = [n.name for n in self.root.graph.nodes if n.op == "placeholder"]
        self.inputs = dict(zip(self.names, inputs))
        self.condition = condition
        self.budget = budget
        self.tests = 0
        self.log = log

    def build(self, graph: torch.fx.Graph, output: torch.fx.Node,
              replace: dict[torch.fx.Node, torch.fx.Node]
              ) -> tuple[torch.export.ExportedProgram, tuple[torch.Tensor, ...]] | None:
        """The program computing `output` of `graph`, with `replace`'s nodes bypassed."""
        def resolve(node: torch.fx.Node) -> torch.fx.Node:
            while node in replace:
                node = replace[node]
            return node

        needed: set[torch.fx.Node] = set()
        stack = [resolve(output)]
        while stack:
            node = stack.pop()
            if node not in needed:
                needed.add(node)
                stack.extend(resolve(n) for n in node.all_input_nodes)
        new = torch.fx.Graph()
        env: dict[torch.fx.Node, torch.fx.Node] = {}
        for node in graph.nodes:
            if node in needed:
                env[node] = new.node_copy(node, lambda n: env[resolve(n)])
        new.output(env[resolve(output)])
        module = torch.fx.GraphModule(self.root, new)
        inputs = tuple(self.inputs[n.name] for n in graph.nodes
                       if n.op == "placeholder" and n in needed)
        try:
            return torch.export.export(module, inputs), inputs
        except Exception:  # noqa: BLE001 - a candidate torch cannot export is skipped
            return None

    def holds(self, candidate: tuple[torch.export.ExportedProgram, tuple[torch.Tensor, ...]]
              | None) -> bool:
        if candidate is None or self.tests >= self.budget:
            return False
        self.tests += 1
        try:
            return bool(self.condition.check(*candidate))
        except SpyrecError:
            return False

    def run(self) -> tuple[torch.fx.Node, dict[torch.fx.Node, torch.fx.Node]]:
        graph = self.root.graph
        outputs = [n for n in _tensors(next(iter(graph.find_nodes(op="output"))).args[0])
                   if isinstance(n, torch.fx.Node)]
        candidates = sorted((n for n in _ops(graph) if _is_tensor(n)),
                            key=lambda n: len(_cone(n)))
        best = next((n for n in candidates if self.holds(self.build(graph, n, {}))), None)
        if best is None:  # no single value keeps it: keep the first output's cone
            best = outputs[0]
        self.log(f"cone: {len(_cone(best) & set(_ops(graph)))} ops after {self.tests} tests")
        replace: dict[torch.fx.Node, torch.fx.Node] = {}
        changed = True
        while changed:  # bypass ops, output first, until none can go
            changed = False
            for node in reversed([n for n in _ops(graph) if n in _cone(best)]):
                operand = None if node in replace else _same_typed_operand(node)
                if operand is not None and self.holds(self.build(
                        graph, best, {**replace, node: operand})):
                    replace[node] = operand
                    changed = True
        return best, replace


def _same_typed_operand(node: torch.fx.Node) -> torch.fx.Node | None:
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor) or node.target is operator.getitem:
        return None
    for arg in node.all_input_nodes:
        other = arg.meta.get("val")
        if (isinstance(other, torch.Tensor) and other.shape == val.shape
                and other.dtype == val.dtype):
            return arg
    return None


def reduce(program: torch.export.ExportedProgram | str | Path, condition: Condition | str,
           out_dir: str | Path | None = None, budget: int = 300, seed: int = 0,
           log: Callable[[str], None] = lambda _: None) -> Reduction:
    """Shrink `program` while `condition` holds; write the result to `out_dir` if given."""
    from spyrec.frontend.importer import load_program
    from spyrec.numeric_bisect import program_inputs

    name = "program"
    if not isinstance(program, torch.export.ExportedProgram):
        name = Path(program).stem
        program = load_program(program)
    if isinstance(condition, str):
        condition = parse_condition(condition)
    inputs = tuple(program_inputs(program, seed))
    before = len(_ops(program.graph))
    if not condition.check(program, inputs):
        raise CompileError(f"the condition {condition.text!r} does not hold for the program as "
                           "it is; nothing to reduce")
    reducer = _Reducer(program, inputs, condition, budget, log)
    best, replace = reducer.run()
    built = reducer.build(reducer.root.graph, best, replace)
    if built is None or not condition.check(*built):  # the cone alone, else the program
        built = reducer.build(reducer.root.graph, best, {})
        if built is None or not condition.check(*built):
            built = (program, inputs)
    result = Reduction(built[0], built[1], before, len(_ops(built[0].graph)), reducer.tests)
    if out_dir is not None:
        result.files = write_case(result, condition, Path(out_dir), name)
    return result


def write_case(result: Reduction, condition: Condition, out_dir: Path, name: str) -> list[Path]:
    """The reduced program as `<name>_reduced.pt2` and a pytest file next to it."""
    from spyrec.target.container import write_atomically

    out_dir.mkdir(parents=True, exist_ok=True)
    pt2 = out_dir / f"{name}_reduced.pt2"
    write_atomically(pt2, lambda stream: torch.export.save(result.program, stream))
    test = out_dir / f"test_{name}_reduced.py"
    code = textwrap.indent(result.program.graph_module.code.strip(), "    ")
    test.write_text(f'''"""Reduced by `spyrec reduce` from {name} ({result.ops_before} ops -> \
{result.ops_after}) until {condition.text!r}.

The reduced graph:

{code}
"""

from pathlib import Path

import torch

from spyrec.numeric_bisect import program_inputs
from spyrec.reduce import parse_condition

PROGRAM = Path(__file__).with_name({pt2.name!r})


def test_{name.replace("-", "_")}_reduced():
    program = torch.export.load(PROGRAM)
    inputs = tuple(program_inputs(program, seed=0))
    # fails while the bug is there, passes once it is fixed
    assert not parse_condition({condition.text!r}).check(program, inputs), (
        "still {condition.text}: see the docstring for the graph")
''')
    return [pt2, test]
