"""Data movement users meet: strided and negative-step slices, views, padding and indexing
by constant or run-time indices, on the device (`passes/graph/legalize/gather.py`, design
note 71).

A pure move does no arithmetic, so the device result must be eager's exactly, special
values included (NaN where eager has NaN, the same infinities): the tolerance of
`check_outputs` would accept a move that rounds, this test does not. Moves of whole rows
(gathers, row slices) keep the sign of zero too; a column map on the PT does not (-0.0
times 1 plus +0.0 products is +0.0, design note 63), so for those -0.0 may come back as
+0.0, the one difference allowed. The op-matrix cases of the same ops
(`spyrec.opcases.movement.movement_cases`) run in test_ops.py.
"""

from __future__ import annotations

import pytest
import torch
from conftest import one

import spyrec
from spyrec.diagnostics import SpyrecError
from spyrec.opcases.core import _Fn
from spyrec.opcases.gathers import _ids
from spyrec.opcases.movement import INDEXED, MOVES, _Bag
from spyrec.special_values import _Outputs, inject
from spyrec.verdict import check_outputs

# moves of whole rows only: these keep the sign of zero as well
ROW_MOVES = {"slice_step3_dim0", "flip_dim0"}


def _same_bits(expected: torch.Tensor, actual: torch.Tensor, zero_sign: bool = True) -> bool:
    """Equal bit for bit, but for NaN payloads (and the sign of zero unless `zero_sign`):
    NaN exactly where eager has NaN, every other element the same bits."""
    if expected.shape != actual.shape or expected.dtype != actual.dtype:
        return False
    nan = expected.isnan()
    if not torch.equal(nan, actual.isnan()):
        return False
    if not zero_sign:
        return torch.equal(expected[~nan], actual[~nan])  # -0.0 == +0.0
    bits = {2: torch.int16, 4: torch.int32}[expected.element_size()]
    return torch.equal(expected[~nan].view(bits), actual[~nan].view(bits))


def _input(shape: tuple[int, ...], dtype: torch.dtype, g: torch.Generator) -> torch.Tensor:
    """Values holding NaN, +-0, large values (and +-inf and a row of -inf in fp32). An fp16
    tensor crosses to the device as DL16 (9 fraction bits against fp16's 10), so fp16
    inputs lie on a grid of 1/64, and their large value is left out (60000 is no DL16
    value): every fp16 value given is then one the device holds exactly."""
    x = torch.randn(*shape, generator=g)
    if dtype == torch.float16:
        x = (x * 64).round() / 64
    return inject(x.to(dtype), large=dtype != torch.float16)


def _moves(dtype: torch.dtype, shape: tuple[int, ...]) -> tuple[_Outputs, torch.Tensor]:
    """Every move of `MOVES` as one program with an output per move, and its input."""
    x = _input(shape, dtype, torch.Generator().manual_seed(0))
    return _Outputs([_Fn(fn) for fn in MOVES.values()]), x


# the unaligned shape runs the same moves plus the stick padding, and bfloat16 is stored as
# DL16 like float16: the aligned shape and bfloat16 are in the opt-in tier (SPYREC_SLOW=1,
# design note 99)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16,
                                   pytest.param(torch.bfloat16, marks=pytest.mark.slow)],
                         ids=str)
@pytest.mark.parametrize("shape", [pytest.param((64, 128), marks=pytest.mark.slow), (67, 255)],
                         ids=str)
def test_moves_are_bit_exact(dtype, shape):
    model, x = _moves(dtype, shape)
    exe = spyrec.compile(torch.export.export(model, (x,)))
    expected, actual = model(x), exe(x)
    wrong = [name for name, e, a in zip(MOVES, expected, actual)
             if not _same_bits(e, a, zero_sign=name in ROW_MOVES)]
    assert not wrong, wrong


class _Indexed(torch.nn.Module):
    """Every op of `INDEXED` on one x, each with its own index: one program."""

    def forward(self, x: torch.Tensor, *indices: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(fn(x, i) for (fn, _, _), i in zip(INDEXED.values(), indices))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_runtime_indexing_is_bit_exact(dtype):
    """Gathers by run-time indices along every dim (int64 and int32 indices alternately),
    both ends of each dim, on an input holding special values."""
    shape = (2, 5, 100)
    g = torch.Generator().manual_seed(1)
    x = _input(shape, dtype, g)
    indices = [_ids(ids(shape), bound(shape), (torch.int64, torch.int32)[k % 2], g)
               for k, (_, ids, bound) in enumerate(INDEXED.values())]
    model = _Indexed()
    exe = spyrec.compile(torch.export.export(model, (x, *indices)))
    wrong = [name for name, e, a in zip(INDEXED, model(x, *indices), exe(x, *indices))
             if not _same_bits(e, a, zero_sign=False)]
    assert not wrong, wrong


def test_interleaved_rotary_matches_eager():
    """GPT-J-style rotary on interleaved pairs, with its cos/sin tables, in fp16."""

    class Rotary(torch.nn.Module):
        def forward(self, x, cos, sin):
            x1, x2 = x[..., ::2], x[..., 1::2]
            rotated = torch.stack((-x2, x1), dim=-1).flatten(-2)
            return x * cos + rotated * sin

    g = torch.Generator().manual_seed(2)
    x, cos, sin = (torch.randn(2, 4, 16, 64, generator=g).half() for _ in range(3))
    model = Rotary()
    exe = spyrec.compile(torch.export.export(model, (x, cos, sin)))
    verdict = check_outputs(model(x, cos, sin), exe(x, cos, sin), exe)
    assert verdict.ok, str(verdict)


def test_an_off_by_one_strided_slice_is_caught(monkeypatch):
    """An injected bug, the start of every innermost strided slice one column late (same
    column count): both the bit-exact comparison and `check_outputs` reject the result."""
    from spyrec.passes.graph.legalize import columns

    original = columns._last_dim_slice

    def late(op):
        kept = original(op)
        return None if kept is None else slice(kept.start + 1, kept.stop + 1, kept.step)

    model = _Fn(lambda x: x[..., :-1:2])
    x = torch.randn(64, 128, generator=torch.Generator().manual_seed(3))
    exe = spyrec.compile(torch.export.export(model, (x,)))
    assert _same_bits(model(x), one(exe(x)))  # the unmutated compile is exact
    monkeypatch.setattr(columns, "_last_dim_slice", late)
    bad = spyrec.compile(torch.export.export(model, (x,)), cache=False)
    out = one(bad(x))
    assert not _same_bits(model(x), out)
    assert not check_outputs(model(x), out, bad).ok


def test_an_index_out_of_range_faults_when_it_runs():
    """A run-time index outside its dim (eager raises; a negative one eager wraps) is a
    device fault naming the gather, never a row of a neighbouring slice."""
    model = _Fn(lambda x, i: x[:, i])
    x, index = torch.randn(3, 16, 64), torch.tensor([0, 1, 2])
    exe = spyrec.compile(torch.export.export(model, (x, index)))
    for bad in (torch.tensor([0, 16, 2]), torch.tensor([0, -1, 2])):
        with pytest.raises(Exception, match="outside the table's rows"):
            exe(x, bad)


@pytest.mark.parametrize("model, inputs, reason", [
    (_Bag("sum"), (torch.randint(0, 40, (10,)), torch.tensor([0, 3, 7])),
     "offsets computed at run time"),
    (_Bag("max"), (torch.randint(0, 40, (4, 5)),), "mode='max'"),
    (_Fn(lambda x, i, j: x[i, :, j]), (torch.randn(8, 4, 64), torch.tensor([1, 2]),
                                       torch.tensor([0, 3])),
     "run-time index tensors at dims"),  # not adjacent (adjacent: test_multi_index.py)
    (_Fn(lambda x, i, s: x.scatter(-1, i, s)), (torch.randn(4, 64), torch.zeros(4, 2).long(),
                                                torch.randn(4, 2)), "duplicate indices"),
], ids=["bag_runtime_offsets", "bag_max", "two_apart_runtime_indices", "scatter"])
def test_unsupported_forms_are_refused_by_node(model, inputs, reason):
    with pytest.raises(SpyrecError) as info:
        spyrec.compile(torch.export.export(model, inputs))
    message = str(info.value)
    assert reason in message and "(node " in message, message


def test_an_index_read_from_a_0d_tensor_is_refused_with_what_to_write():
    """x[t] with a 0-d t exports as a number read from t (`_local_scalar_dense`); the
    error names the node and the 1-D form that compiles."""
    model = _Fn(lambda x, t: x[t])
    x, t = torch.randn(16, 64), torch.tensor(3)
    with pytest.raises(SpyrecError, match=r"node select .*index with a 1-D tensor"):
        spyrec.compile(torch.export.export(model, (x, t)))
    exe = spyrec.compile(torch.export.export(model, (x, t.view(1))))
    assert torch.equal(one(exe(x, t.view(1))), x[t.view(1)])


def test_a_gather_of_integer_data_is_exact():
    """torch.gather of an int64 tensor by run-time positions (RoBERTa-family token type ids:
    a buffer gathered at the position ids): the data moves as its f32 cast, exact below
    2^24, and comes back as int64; a value that moved to the wrong row is caught exactly."""

    class TypeIds(torch.nn.Module):
        def forward(self, table: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
            return torch.gather(table, 1, positions) * 3 + 1

    g = torch.Generator().manual_seed(2)
    table = torch.randint(-(2 ** 22), 2 ** 22, (2, 40), generator=g)  # x * 3 + 1 < 2^24
    positions = torch.randint(0, 40, (2, 33), generator=g)
    exe = spyrec.compile(torch.export.export(TypeIds(), (table, positions)))
    out = one(exe(table, positions))
    assert out.dtype == torch.int64 and torch.equal(out, TypeIds()(table, positions))
