"""NumPy / PyTorch broadcasting on the device, against eager, on a generated matrix of shapes.

Every ordered pair of `SHAPES` that broadcasts (0-d tensors, size-1 dims in every position
of 1-D to 4-D tensors, both operand orders) is one output of one program per op and dtype,
so a program checks dozens of pairs at once; the same pairs run with the second operand a
constant (a 0-d or size-1 buffer: the SFU's immediate when it holds one element). The widths
(80) are whole sticks in no dtype. A mutation test injects a broadcast along the wrong dim
and requires the check to fail.
"""

from __future__ import annotations

import itertools

import pytest
import torch

import spyrec
from spyrec.verdict import check_outputs

B, H, M, N = 2, 3, 5, 80
SHAPES: tuple[tuple[int, ...], ...] = (
    (), (1,), (N,), (1, N), (M, 1), (M, N), (B, 1, N), (B, M, 1), (1, M, N), (B, 1, 1),
    (B, H, 1, N), (1, H, M, 1), (B, 1, M, N), (B, H, M, N),
)


def _broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    try:
        torch.broadcast_shapes(a, b)
    except RuntimeError:
        return False
    return True


PAIRS = [(a, b) for a, b in itertools.product(SHAPES, SHAPES) if _broadcasts(a, b)]
OPS = {
    "sub": torch.sub,
    "div": lambda a, b: a / (b.abs() + 0.5),
    "mul": torch.mul,
    "maximum": torch.maximum,
    "where_lt": lambda a, b: torch.where(a < b, a, b),
}


class _Pairs(torch.nn.Module):
    """One output per pair: op(inputs[2i], inputs[2i + 1]); with `constant`, the second
    operand of each pair is a buffer instead of an input."""

    def __init__(self, fn, seconds: list[torch.Tensor] | None = None):
        super().__init__()
        self.fn = fn
        self.constant = seconds is not None
        for i, t in enumerate(seconds or []):
            self.register_buffer(f"b{i}", t)

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if self.constant:
            return tuple(self.fn(x, getattr(self, f"b{i}")) for i, x in enumerate(inputs))
        return tuple(self.fn(inputs[i], inputs[i + 1]) for i in range(0, len(inputs), 2))


def _tensor(shape: tuple[int, ...], dtype: torch.dtype, g: torch.Generator) -> torch.Tensor:
    # a grid of 1/4: comparisons meet ties, and every value is exact in every dtype
    return (torch.randn(shape, generator=g) * 4).round().div(4).to(dtype)


def _check(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], names: list[str]):
    exe = spyrec.compile(torch.export.export(model, inputs), cache=False)
    with torch.no_grad():
        expected = model(*inputs)
    return check_outputs(expected, exe(*inputs), exe, names=names)


def _pair_program(op: str, dtype: torch.dtype, constant: bool, pairs=None):
    g = torch.Generator().manual_seed(0)
    pairs = PAIRS if pairs is None else pairs
    firsts = [_tensor(a, dtype, g) for a, _ in pairs]
    seconds = [_tensor(b, dtype, g) for _, b in pairs]
    names = [f"{op}{list(a)}x{list(b)}" for a, b in pairs]
    if constant:
        return _Pairs(OPS[op], seconds), tuple(firsts), names
    return _Pairs(OPS[op]), tuple(t for pair in zip(firsts, seconds) for t in pair), names


def _cases(ops: list[str], fast: str) -> list[object]:
    """(op, dtype) parameters: `fast` in fp16 in the fast tier (a non-commutative op, so
    both operand orders matter); the rest, about a minute each on two cores, in the
    opt-in tier (SPYREC_SLOW=1): the broadcasting is the same in every dtype, and the op
    matrix's broadcast family runs every pair kind in fp16 in CI."""
    def marks(op: str, dtype: torch.dtype) -> tuple:
        if (op, dtype) == (fast, torch.float16):
            return ()
        return (pytest.mark.heavy, pytest.mark.slow)
    return [pytest.param(op, dtype, id=f"{op}-{str(dtype).removeprefix('torch.')}",
                         marks=marks(op, dtype))
            for op in ops for dtype in (torch.float16, torch.bfloat16, torch.float32)]


@pytest.mark.parametrize(("op", "dtype"), _cases(list(OPS), "sub"))
def test_every_broadcastable_pair_matches_eager(op, dtype):
    model, inputs, names = _pair_program(op, dtype, constant=False)
    verdict = _check(model, inputs, names)
    assert verdict.ok, str(verdict)


@pytest.mark.parametrize(("op", "dtype"), _cases(["sub", "div"], "div"))
def test_constant_second_operand_matches_eager(op, dtype):
    """A buffer operand: one element (0-d, [1]) is the SFU's immediate, in either order."""
    model, inputs, names = _pair_program(op, dtype, constant=True)
    verdict = _check(model, inputs, names)
    assert verdict.ok, str(verdict)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
def test_zero_d_operands_of_other_dtypes_promote_as_pytorch(dtype):
    """0-d tensors of another dtype (a float, an int, a bool, as input or constant) and
    Python numbers of every type: the result's dtype is PyTorch's, and so are its values."""
    g = torch.Generator().manual_seed(0)
    x = _tensor((M, N), dtype, g)
    s32 = _tensor((), torch.float32, g)
    ints = torch.tensor(3)

    class Mixed(torch.nn.Module):
        def forward(self, x, s32, ints):
            return (x * s32, s32 - x, x / ints, x * torch.tensor(2.5), x + True,
                    x * torch.tensor(False), 2 - x, x / 4, torch.where(s32 > 0, x, 2 * x))

    model = Mixed()
    exe = spyrec.compile(torch.export.export(model, (x, s32, ints)), cache=False)
    out = exe(x, s32, ints)
    with torch.no_grad():
        expected = model(x, s32, ints)
    assert [t.dtype for t in out] == [t.dtype for t in expected]
    verdict = check_outputs(expected, out, exe)
    assert verdict.ok, str(verdict)


def test_a_broadcast_along_the_wrong_dim_is_caught(monkeypatch):
    """Inject a wrong broadcast: an operand [B, 1, N] meant to repeat over H is expanded as
    [1, B, N] over H instead (rows tiled, not repeated). The check must fail."""
    from spyrec.dialects.spyre import ExpandRowsOp, ReshapeOp
    from spyrec.passes.graph.graph_build import emit, shape
    from spyrec.passes.graph.legalize import base

    real = base.broadcast_rows

    def wrong(op, rewriter, value, out, column=False):
        dims = shape(value)
        if len(dims) == 3 and dims[1] == 1 < out[1] and dims[0] > 1:
            tiled = emit(rewriter, op, ReshapeOp(value, base.with_shape(value, [1, *dims[::2]])))
            moved = emit(rewriter, op, ExpandRowsOp(
                tiled, base.with_shape(value, [out[1], dims[0], dims[2]])))
            return emit(rewriter, op, ReshapeOp(moved, base.with_shape(value, out)))
        return real(op, rewriter, value, out, column)

    pairs = [((B, 1, N), (B, H, N))]
    model, inputs, names = _pair_program("sub", torch.float16, constant=False, pairs=pairs)
    assert _check(model, inputs, names).ok
    monkeypatch.setattr(base, "broadcast_rows", wrong)
    verdict = _check(model, inputs, names)
    assert not verdict.ok, "a wrong broadcast passed the check"
