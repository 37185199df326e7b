"""The comparison catches compiler bugs: a mutation suite for `spyrec.verdict`.

Each test injects one typical compiler bug into the pipeline (by monkeypatching a
spyre-legalize selector, the scheduler's instruction stream, or the binary), compiles a
small decoder block afresh (cache=False: the compile cache is keyed by the compiler's
sources, which a monkeypatch does not change) and requires `check_outputs` to reject the
result; the unmutated compile of the same block passes. Each test prints the criteria that
caught the bug, and whether the rule this one replaced (one bound, 4u(sqrt(depth) +
sqrt(steps)) x max|output|, depth and steps summed over the whole program) would have
accepted it: docs/numerics.md tabulates both.

The block (`Block`): an RMS norm, causal two-head attention with biased q/k/v/o
projections, a residual, a LayerNorm and a GELU MLP with biases, a residual, and a head
whose logits are divided by 8 (Granite's `logits_scaling`; weights drawn so the logits are
about 1 and the softmax is peaked, not flat) and soft-maxed; outputs: the hidden state, the
logits and the probabilities. 64 tokens of width 128.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import replace

import pytest
import torch
from torch import nn
from xdsl.ir import Operation, SSAValue

import spyrec
from spyrec.api import Executable
from spyrec.demo import RMSNorm
from spyrec.dialects.spyre import UNARY_OPS
from spyrec.passes.graph import spyre_legalize as legalize
from spyrec.passes.graph.graph_build import binary_op, emit
from spyrec.passes.graph.legalize import elementwise as legalize_elementwise
from spyrec.passes.graph.legalize import matmul as legalize_matmul
from spyrec.passes.graph.legalize.base import cast_to
from spyrec.passes.graph.legalize.movement import device_transpose
from spyrec.passes.graph.legalize.reductions import reduce_last
from spyrec.passes.spyrecode import core_walk
from spyrec.target.isa import Instr, loop_spans
from spyrec.verdict import Verdict, check_outputs, kernel_depth, kernel_steps

TOKENS, WIDTH, HEADS, HIDDEN = 64, 128, 2, 256


class Block(nn.Module):
    """A decoder block with every part a mutation below breaks."""

    def __init__(self) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(WIDTH)
        self.q, self.k, self.v, self.o = (nn.Linear(WIDTH, WIDTH) for _ in range(4))
        self.mlp_norm = nn.LayerNorm(WIDTH)
        self.up, self.down = nn.Linear(WIDTH, HIDDEN), nn.Linear(HIDDEN, WIDTH)
        self.head = nn.Linear(WIDTH, TOKENS)
        with torch.no_grad():  # logits of about 1 after the division: a peaked softmax
            self.head.weight.normal_(0.0, 0.5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        n = self.attn_norm(x)
        q, k, v = (p(n).view(1, TOKENS, HEADS, WIDTH // HEADS).transpose(1, 2)
                   for p in (self.q, self.k, self.v))
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = x + self.o(a.transpose(1, 2).reshape(TOKENS, WIDTH))
        h = h + self.down(nn.functional.gelu(self.up(self.mlp_norm(h))))
        logits = self.head(h) / 8.0
        return h, logits, logits.softmax(-1)


def _block(dtype: torch.dtype) -> tuple[Block, torch.export.ExportedProgram]:
    torch.manual_seed(0)
    model = Block().to(dtype).eval()
    return model, torch.export.export(model, (_input(dtype, 1),))


def _input(dtype: torch.dtype, seed: int) -> torch.Tensor:
    return torch.randn(TOKENS, WIDTH, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _verdict(model: Block, exe: Executable, seed: int = 1) -> Verdict:
    x = _input(next(model.parameters()).dtype, seed)
    with torch.no_grad():
        expected = model(x)
    return check_outputs(expected, exe(x), exe)


def old_rule_accepts(exe: Executable, expected: tuple[torch.Tensor, ...],
                     actual: torch.Tensor | tuple[torch.Tensor, ...]) -> bool:
    """The rule `check_outputs` replaced: per output, max|error| <= atol + rtol * scale with
    scale = max|expected|, atol = 4u(sqrt(depth) + sqrt(steps)) * scale, rtol =
    4u * sqrt(steps), u of the coarsest host dtype, depth and steps summed over every kernel
    of the program; finite results only."""
    binary = exe.binary
    programs = [next(iter(k.programs.values()), []) for k in binary.kernels]
    depth = sum(kernel_depth(p) for p in programs)
    steps = 1 + sum(kernel_steps(p) for p in programs)
    u = max({"float16": 2.0**-10, "bfloat16": 2.0**-8, "float32": 2.0**-24}.get(
        b.layout.host_dtype, 0.0) for b in binary.inputs + binary.outputs)
    for want, got in zip(expected, actual):
        e, a = want.double(), got.double()
        scale = float(e.abs().max())
        err = float((a - e).abs().max())
        if not bool(torch.isfinite(a).all()) or err > 4 * u * (
                math.sqrt(depth) + 2 * math.sqrt(steps)) * scale:
            return False
    return True


def _caught(model: Block, exe: Executable, seed: int = 1) -> tuple[list[str], bool]:
    """The criteria that reject `exe`'s results, per output with how far past its bound
    (error / bound), and whether the old rule accepted them."""
    x = _input(next(model.parameters()).dtype, seed)
    with torch.no_grad():
        expected = model(x)
    actual = exe(x)
    verdict = check_outputs(expected, actual, exe)
    print(verdict)
    ratios = {"element": lambda o: o.element_ratio, "aggregate": lambda o: o.aggregate_ratio,
              "class": lambda o: float(o.class_mismatches), "shape": lambda o: math.inf}
    caught = [f"{o.name}: " + ", ".join(f"{c} {ratios[c](o):.3g}x" for c in o.failed)
              for o in verdict.outputs if not o.ok]
    return caught, old_rule_accepts(exe, expected, actual)


@pytest.fixture(autouse=True)
def _in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Schedule templates built in this process, so scheduler monkeypatches apply."""
    monkeypatch.setenv("SPYREC_JOBS", "1")


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
def test_the_unmutated_block_passes(dtype: torch.dtype) -> None:
    model, ep = _block(dtype)
    exe = spyrec.compile(ep, cache=False)
    for seed in (1, 2):
        verdict = _verdict(model, exe, seed)
        assert verdict.ok, str(verdict)


# ---- the mutations ----------------------------------------------------------------------------

def _drop_bias(monkeypatch: pytest.MonkeyPatch) -> None:
    """The MLP's down projection (K = HIDDEN) loses its bias."""
    original = legalize_matmul.MatmulOp

    def matmul(lhs, rhs, bias, result_type, **kwargs):
        if bias is not None and rhs.type.get_shape()[0] == HIDDEN:
            bias = None
        return original(lhs, rhs, bias, result_type, **kwargs)

    monkeypatch.setattr(legalize_matmul, "MatmulOp", matmul)


def _residual_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first residual add (x + attention) adds x once more."""
    original = legalize.SELECTORS["aten.add.Tensor"]
    done: list[bool] = []

    def add(op, rewriter):
        result = original(op, rewriter)
        if done or len(op.operands) != 2:
            return result
        done.append(True)
        value = emit(rewriter, op, result) if isinstance(result, Operation) else result
        assert isinstance(value, SSAValue)
        return binary_op(op, rewriter, "add", value, op.operands[0])

    monkeypatch.setitem(legalize.SELECTORS, "aten.add.Tensor", add)


def _mask_shifted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The causal mask's diagonal one key late: each query also sees the next key."""
    original = core_walk._Stream.emit

    def emit(self, op, reads, writes, unit=0, **fields):
        if op == "sfu.mask":
            fields["diag"] = fields["diag"] + 1
        return original(self, op, reads, writes, unit, **fields)

    monkeypatch.setattr(core_walk._Stream, "emit", emit)


def _softmax_wrong_axis(monkeypatch: pytest.MonkeyPatch) -> None:
    """The head's softmax normalises columns instead of rows (a square [64, 64] input)."""
    def softmax(op, rewriter):
        x = cast_to(op, rewriter, op.operands[0], op.results[0])
        xt = device_transpose(op, rewriter, x)
        shifted = binary_op(op, rewriter, "sub", xt, reduce_last(op, rewriter, "max", xt))
        e = emit(rewriter, op, UNARY_OPS["exp"](shifted, shifted.type))
        y = binary_op(op, rewriter, "div", e, reduce_last(op, rewriter, "sum", e))
        return device_transpose(op, rewriter, y)

    for target in ("aten._softmax.default", "aten.softmax.int"):
        monkeypatch.setitem(legalize.SELECTORS, target, softmax)


def _scale_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The logits' scalar division (by 8) off by 1 %."""
    original = legalize_elementwise._scalar_op

    def scalar(op, rewriter, kind, x, value, reverse=False):
        if kind == "div" and value == 8.0:
            value *= 1.01
        return original(op, rewriter, kind, x, value, reverse)

    monkeypatch.setattr(legalize_elementwise, "_scalar_op", scalar)


MUTATIONS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "dropped bias": _drop_bias,
    "residual added twice": _residual_twice,
    "causal mask shifted by one": _mask_shifted,
    "softmax over the wrong axis": _softmax_wrong_axis,
    "scale off by 1%": _scale_off,
}
CASES = [(name, torch.float16) for name in MUTATIONS] + [("scale off by 1%", torch.float32)]


@pytest.mark.parametrize("name,dtype", CASES,
                         ids=[f"{n}-{str(d).removeprefix('torch.')}" for n, d in CASES])
def test_a_mutation_fails_the_check(name: str, dtype: torch.dtype,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    model, ep = _block(dtype)
    with monkeypatch.context() as patch:
        MUTATIONS[name](patch)
        exe = spyrec.compile(ep, cache=False)
    caught, old_ok = _caught(model, exe)
    print(f"MUTATION {name} {dtype}: caught by {caught}; old rule "
          f"{'accepted' if old_ok else 'rejected'} it")
    assert caught, f"{name} passed the check"


def _skip_one_store(binary, kernel: int) -> None:
    """Replace core 0's first dma.store outside a loop in `kernel` by a barrier of that
    core alone (an instruction that does nothing): one output tile is never written."""
    image = binary.kernels[kernel]
    core = min(image.programs)
    program = list(image.programs[core])
    spans = loop_spans(program)
    pc = next(i for i, instr in enumerate(program)
              if instr.op == "dma.store" and spans[i] is None)
    program[pc] = Instr("sync.barrier", (core, 1, 1, 4095), program[pc].unit, program[pc].deps)
    programs = {c: list(image.programs[c]) for c in image.programs}
    programs[core] = program
    binary.kernels[kernel] = replace(image, programs=programs)


def test_a_stale_output_tile_fails_the_check() -> None:
    """One store of the hidden state's last kernel skipped: that tile keeps what device
    memory held from the call before (run on another input first), or an earlier kernel's
    bytes at that address."""
    model, ep = _block(torch.float16)
    exe = spyrec.compile(ep, cache=False)
    # the kernel that writes the hidden state (output 0), from the recorded dataflow
    last = json.loads(exe.binary.provenance["dataflow"])["outputs"][0][-1]
    _skip_one_store(exe.binary, last)
    stale = Executable(exe.binary)
    stale(_input(torch.float16, 2))  # the previous call
    caught, old_ok = _caught(model, stale, seed=1)
    print(f"MUTATION stale output tile float16: caught by {caught}; old rule "
          f"{'accepted' if old_ok else 'rejected'} it")
    assert caught, "a stale tile passed the check"


def test_the_old_rule_accepted_bugs_the_new_one_rejects(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule replaced by `check_outputs` accepted a 1 % scale error in fp16: the bound
    scaled by the whole output's maximum and the whole program's depth hid it."""
    model, ep = _block(torch.float16)
    with monkeypatch.context() as patch:
        _scale_off(patch)
        exe = spyrec.compile(ep, cache=False)
    caught, old_ok = _caught(model, exe)
    assert caught and old_ok


def test_run_check_exits_1_on_a_mutated_binary(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path) -> None:
    """`spyrec run --check` on the 1 % scale mutation (fp16, the hardest to see): a verdict
    per output, the failed criterion, exit status 1; the unmutated binary exits 0."""
    from click.testing import CliRunner

    from spyrec.cli import main

    _, ep = _block(torch.float16)
    pt2 = tmp_path / "block.pt2"
    torch.export.save(ep, pt2)
    good, bad = tmp_path / "good.spyre", tmp_path / "bad.spyre"
    spyrec.compile(ep, output=good, cache=False)
    with monkeypatch.context() as patch:
        _scale_off(patch)
        spyrec.compile(ep, output=bad, cache=False)
    runner = CliRunner()
    res = runner.invoke(main, ["run", str(good), "--check", str(pt2)])
    assert res.exit_code == 0 and "FAILED" not in res.output, res.output
    res = runner.invoke(main, ["run", str(bad), "--check", str(pt2)])
    assert res.exit_code == 1, res.output
    assert "div: FAILED (aggregate)" in res.output and "worst element" in res.output
