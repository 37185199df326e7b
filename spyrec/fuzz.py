"""Fuzzers: random programs against eager, random damage to IR text and to `.spyre` files.

* `programs()` is a hypothesis strategy of small PyTorch programs built from the ops spyrec
  lowers: elementwise ops with broadcasting and scalars, reductions, linear layers, softmax
  and layer norm, views of leading dims, in fp16, bf16 and fp32, on shapes that are
  stick-aligned, unaligned or of size 1. `check_program` compiles one with spyrec, runs it
  on the emulator and compares with eager; a clean "not supported" error is a refusal, and
  anything else that goes wrong (a wrong result, a crash, an unclear error) raises. Half
  of the programs take inputs with special values (NaN, +-inf in fp32, +-0, large
  values; `special_values.inject`), compared with eager by class.
* `check_ir_text` feeds damaged IR to spyre-opt: it must finish, or exit 1 with a message.
* `check_spyre_bytes` feeds a damaged `.spyre` to the loader: it must load, or refuse with
  a ContainerError.

The test suite runs a bounded, derandomised number of each (test_fuzz.py);
`python -m spyrec.tools.fuzz` runs many more and prints the counts (docs/fuzzing.md).
"""

from __future__ import annotations

import contextlib
import io
import math
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch
from hypothesis import strategies as st

from spyrec.special_values import inject

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
SIZES = (1, 3, 16, 17, 32, 64, 67, 100, 128)  # aligned to a stick, unaligned, size 1
MAX_ELEMENTS = 1 << 14

UNARY = ("relu", "gelu", "silu", "sigmoid", "tanh", "neg", "abs", "exp_small", "sqrt_abs")
# eager's fp32 GELU is NaN at +-inf, the device's gives the limits (special_values.KNOWN):
# fp32 programs with it draw no special values
_GELU = ("unary", (UNARY.index("gelu"),))
BINARY = ("add", "sub", "mul", "maximum")
SCALARS = (-1.5, 0.5, 2.0, 3.0, 0.03)


@dataclass(frozen=True)
class Step:
    """One op of a random program; `arg` holds what the op needs (a dim, a size, ...)."""

    op: str
    arg: tuple[int, ...] = ()

    def __str__(self) -> str:
        return f"{self.op}{list(self.arg) if self.arg else ''}"


@dataclass(frozen=True)
class ProgramSpec:
    dtype: str
    shape: tuple[int, ...]
    steps: tuple[Step, ...]
    seed: int = 0
    specials: bool = False
    """The inputs carry NaN, +-inf (fp32), +-0 and large values (`special_values.inject`)."""

    def __str__(self) -> str:
        specials = " with special values" if self.specials else ""
        return (f"{self.dtype} {list(self.shape)}{specials}: "
                + " -> ".join(str(s) for s in self.steps))


class RandomProgram(torch.nn.Module):
    """Runs the steps of a ProgramSpec; linear layers and broadcast operands are made once."""

    def __init__(self, spec: ProgramSpec):
        super().__init__()
        self.spec = spec
        generator = torch.Generator().manual_seed(spec.seed)
        self.layers = torch.nn.ModuleList()
        self.operands: list[tuple[int, ...]] = []
        shape = list(spec.shape)
        for step in spec.steps:
            if step.op == "linear":
                layer = torch.nn.Linear(shape[-1], step.arg[0], bias=bool(step.arg[1]))
                with torch.no_grad():
                    for p in layer.parameters():
                        p.copy_(torch.randn(p.shape, generator=generator) / math.sqrt(shape[-1]))
                self.layers.append(layer)
            if step.op == "binary_tensor":
                self.operands.append(_broadcast_shape(shape, step.arg[1]))
            shape = _result_shape(shape, step)

    def input_shapes(self) -> list[tuple[int, ...]]:
        return [self.spec.shape, *self.operands]

    def forward(self, x: torch.Tensor, *others: torch.Tensor) -> torch.Tensor:
        layers = iter(self.layers)
        extra = iter(others)
        for step in self.spec.steps:
            x = _apply(step, x, layers, extra)
        return x


def _broadcast_shape(shape: list[int], mask: int) -> tuple[int, ...]:
    """`shape` with the dims whose bit is set in `mask` made 1 (numpy broadcasting)."""
    return tuple(1 if mask >> i & 1 else n for i, n in enumerate(shape))


def _result_shape(shape: list[int], step: Step) -> list[int]:
    op, arg = step.op, step.arg
    if op == "linear":
        return [*shape[:-1], arg[0]]
    if op in ("sum_last", "mean_last", "amax_last"):
        return [*shape[:-1], 1]
    if op == "sum_lead":
        return shape[:arg[0]] + shape[arg[0] + 1:]
    if op == "merge_lead":
        return [shape[0] * shape[1], *shape[2:]]
    if op == "swap_lead":
        out = list(shape)
        out[arg[0]], out[arg[1]] = out[arg[1]], out[arg[0]]
        return out
    if op == "unsqueeze":
        return [1, *shape]
    if op == "slice_lead":
        return [len(range(arg[1], shape[0], arg[2])), *shape[1:]]
    return shape


def _apply(step: Step, x: torch.Tensor, layers: Iterator[torch.nn.Module],
           extra: Iterator[torch.Tensor]) -> torch.Tensor:
    op, arg = step.op, step.arg
    if op == "linear":
        return next(layers)(x)
    if op == "binary_tensor":
        y = next(extra)
        return {"add": torch.add, "sub": torch.sub, "mul": torch.mul,
                "maximum": torch.maximum}[BINARY[arg[0]]](x, y)
    if op == "binary_scalar":
        value = SCALARS[arg[1]]
        return {"add": x + value, "sub": x - value, "mul": x * value,
                "maximum": torch.clamp(x, min=value)}[BINARY[arg[0]]]
    if op == "unary":
        name = UNARY[arg[0]]
        if name == "exp_small":
            return torch.exp(x * 0.25)
        if name == "sqrt_abs":
            return torch.sqrt(torch.abs(x) + 1.0)
        return getattr(torch, name)(x) if hasattr(torch, name) else getattr(
            torch.nn.functional, name)(x)
    if op == "sum_last":
        return x.sum(-1, keepdim=True)
    if op == "mean_last":
        return x.mean(-1, keepdim=True)
    if op == "amax_last":
        return x.amax(-1, keepdim=True)
    if op == "sum_lead":
        return x.sum(arg[0])
    if op == "softmax":
        return torch.softmax(x, -1)
    if op == "layer_norm":
        return torch.nn.functional.layer_norm(x, x.shape[-1:])
    if op == "rms_norm":  # eps=None: torch's default, the fp32 machine epsilon
        return torch.nn.functional.rms_norm(x, x.shape[-1:])
    if op == "merge_lead":
        return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])
    if op == "swap_lead":
        return x.transpose(arg[0], arg[1])
    if op == "unsqueeze":
        return x.unsqueeze(0)
    if op == "slice_lead":
        return x[arg[1]::arg[2]]
    raise ValueError(f"unknown step {step}")


@st.composite
def _step(draw: st.DrawFn, shape: list[int]) -> Step:
    rank = len(shape)
    choices = ["unary", "binary_scalar", "binary_tensor", "linear", "sum_last", "mean_last",
               "amax_last", "softmax", "rms_norm"]
    if shape[-1] > 1:  # over one column the exact result is 0 and eager's is rounding noise
        choices.append("layer_norm")
    if rank >= 2:
        choices += ["sum_lead", "slice_lead"]
    if rank >= 3:
        choices += ["merge_lead", "swap_lead"]
    if rank <= 3:
        choices.append("unsqueeze")
    op = draw(st.sampled_from(choices))
    if op == "unary":
        return Step(op, (draw(st.integers(0, len(UNARY) - 1)),))
    if op == "binary_scalar":
        return Step(op, (draw(st.integers(0, len(BINARY) - 1)),
                         draw(st.integers(0, len(SCALARS) - 1))))
    if op == "binary_tensor":
        return Step(op, (draw(st.integers(0, len(BINARY) - 1)),
                         draw(st.integers(0, (1 << rank) - 1))))
    if op == "linear":
        return Step(op, (draw(st.sampled_from(SIZES[2:])), draw(st.integers(0, 1))))
    if op == "sum_lead":
        return Step(op, (draw(st.integers(0, rank - 2)),))
    if op == "swap_lead":
        a, b = draw(st.lists(st.integers(0, rank - 2), min_size=2, max_size=2, unique=True))
        return Step(op, (a, b))
    if op == "slice_lead":
        start = draw(st.integers(0, max(shape[0] - 1, 0)))
        return Step(op, (0, start, draw(st.integers(1, 3))))
    return Step(op)


@st.composite
def programs(draw: st.DrawFn, max_steps: int = 5) -> ProgramSpec:
    """Random small programs over the ops spyrec lowers."""
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    rank = draw(st.integers(1, 4))
    shape = [draw(st.sampled_from(SIZES)) for _ in range(rank)]
    while math.prod(shape) > MAX_ELEMENTS:
        shape[shape.index(max(shape))] = 3
    steps = []
    current = list(shape)
    for _ in range(draw(st.integers(1, max_steps))):
        step = draw(_step(current))
        nxt = _result_shape(current, step)
        if math.prod(nxt) > MAX_ELEMENTS or not nxt:
            continue
        steps.append(step)
        current = nxt
    if not steps:
        steps.append(Step("unary", (0,)))
    specials = draw(st.booleans()) and not (
        dtype == "float32" and any((s.op, s.arg) == _GELU for s in steps))
    return ProgramSpec(dtype, tuple(shape), tuple(steps), draw(st.integers(0, 2**16)), specials)


@dataclass
class Counts:
    tried: int = 0
    passed: int = 0
    refused: dict[str, int] = field(default_factory=dict)


def check_program(spec: ProgramSpec, counts: Counts | None = None) -> str:
    """Compile and run `spec`; return "ok" or "refused: ..."; raise AssertionError on a
    wrong result or an error that is not a clean refusal."""
    import spyrec
    from spyrec.diagnostics import CompileError, PassFailure, SpyrecError, UnsupportedOpsError
    from spyrec.verdict import check_outputs

    dtype = DTYPES[spec.dtype]
    model = RandomProgram(spec).to(dtype).eval()
    generator = torch.Generator().manual_seed(spec.seed + 1)
    inputs = tuple(torch.randn(s, generator=generator).to(dtype)
                   for s in model.input_shapes())
    if spec.specials:
        # 16-bit programs take no large values: an fp16 intermediate beyond 65504 is inf in
        # eager and finite in DL16 (wider range), which a later step can tell apart
        inputs = tuple(inject(t, large=dtype == torch.float32) for t in inputs)
    if counts is not None:
        counts.tried += 1
    with torch.no_grad():
        expected = model(*inputs)
    program = torch.export.export(model, inputs)
    try:
        exe = spyrec.compile(program, cache=False)
    except PassFailure as exc:  # a pass crashed or broke the IR: a bug
        raise AssertionError(f"{spec}: compile error: {exc}") from exc
    except (UnsupportedOpsError, CompileError) as exc:  # a limitation, said clearly
        lines = str(exc).splitlines()
        reason = lines[1].strip() if isinstance(exc, UnsupportedOpsError) and len(lines) > 1 \
            else lines[0]
        if counts is not None:
            key = reason.split(": ", 1)[-1][:90]
            counts.refused[key] = counts.refused.get(key, 0) + 1
        return f"refused: {reason}"
    except SpyrecError as exc:
        raise AssertionError(f"{spec}: error: {exc}") from exc
    actual = exe(*inputs)
    assert isinstance(actual, torch.Tensor), f"{spec}: {len(actual)} outputs"
    assert actual.shape == expected.shape, f"{spec}: shape {list(actual.shape)}"
    verdict = check_outputs(expected, actual, exe)
    assert verdict.ok, f"{spec}:\n{verdict}"
    if counts is not None:
        counts.passed += 1
    return "ok"


@contextlib.contextmanager
def time_limit(seconds: int, what: str) -> Iterator[None]:
    """Raise AssertionError if the body runs longer than `seconds` (a hang)."""
    def expire(signum: int, frame: object) -> None:
        raise AssertionError(f"{what}: still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def damaged_texts(seeds: list[str]) -> st.SearchStrategy[str]:
    """IR texts with a random edit: a span deleted, duplicated or overwritten, or cut."""
    @st.composite
    def damage(draw: st.DrawFn) -> str:
        text = draw(st.sampled_from(seeds))
        if not text:
            return text
        a = draw(st.integers(0, len(text) - 1))
        b = draw(st.integers(a, min(len(text), a + 40)))
        edit = draw(st.sampled_from(["delete", "duplicate", "overwrite", "cut"]))
        if edit == "delete":
            return text[:a] + text[b:]
        if edit == "duplicate":
            return text[:b] + text[a:b] + text[b:]
        if edit == "cut":
            return text[:a]
        noise = draw(st.text(alphabet="%@^#{}()<>[]:,=x0123456789-.\"!", min_size=1,
                             max_size=8))
        return text[:a] + noise + text[b:]

    return damage()


def check_ir_text(text: str, passes: str | None, workdir: Path) -> str:
    """Run spyre-opt on `text`; return "ok" or "error"; raise AssertionError on a crash."""
    from spyrec.tools.spyre_opt import main

    path = workdir / "input.mlir"
    path.write_text(text)
    args = [str(path), "--split-input-file", *(["-p", passes] if passes else [])]
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                time_limit(30, "spyre-opt"):
            main(args)
    except SystemExit as exc:
        if exc.code in (0, None):
            return "ok"
        assert "error" in err.getvalue().lower(), (
            f"spyre-opt exited {exc.code} without an error message on:\n{text[:2000]}")
        return "error"
    except AssertionError:
        raise
    except Exception as exc:
        raise AssertionError(f"spyre-opt crashed ({type(exc).__name__}: {exc}) on:\n"
                             f"{text[:2000]}") from exc
    return "ok"


def damaged_bytes(data: bytes) -> st.SearchStrategy[bytes]:
    """`data` with bytes flipped, a range zeroed, cut short, or a range moved."""
    @st.composite
    def damage(draw: st.DrawFn) -> bytes:
        out = bytearray(data)
        edit = draw(st.sampled_from(["flip", "zero", "cut", "move", "header"]))
        if edit == "header":  # the first bytes hold the magic, version and lengths
            position = draw(st.integers(0, min(63, len(out) - 1)))
            out[position] ^= draw(st.integers(1, 255))
        elif edit == "flip":
            for _ in range(draw(st.integers(1, 8))):
                out[draw(st.integers(0, len(out) - 1))] ^= draw(st.integers(1, 255))
        elif edit == "zero":
            a = draw(st.integers(0, len(out) - 1))
            n = len(out[a:a + draw(st.integers(1, 4096))])
            out[a:a + n] = bytes(n)
        elif edit == "cut":
            del out[draw(st.integers(0, len(out) - 1)):]
        else:
            a = draw(st.integers(0, len(out) - 1))
            b = draw(st.integers(0, len(out) - 1))
            chunk = out[a:a + 256]
            out[b:b + len(chunk)] = chunk
        return bytes(out)

    return damage()


def check_spyre_bytes(data: bytes, workdir: Path) -> str:
    """Load `data` as a `.spyre`; return "loaded" or "refused"; raise on anything else."""
    from spyrec.target.container import ContainerError, read_spyre

    path = workdir / "damaged.spyre"
    path.write_bytes(data)
    try:
        with time_limit(30, "the .spyre loader"):
            read_spyre(path)
    except ContainerError:
        return "refused"
    except AssertionError:
        raise
    except Exception as exc:
        raise AssertionError(f"the .spyre loader crashed: {type(exc).__name__}: {exc}") from exc
    return "loaded"
