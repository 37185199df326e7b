"""Writes into slices (`t[..., a:b].copy_(x)`, `t[:, a:b] = x`, `t[i] = x`) reach the graph
as copy + slice_scatter / select_scatter and are rewritten as the concatenations they are
(`spyrec/frontend/slice_writes.py`): moves of whole elements, eager's values bit for bit in
fp32 (16-bit inputs are rounded to the device's DL16 as everywhere, and judged by
`assert_close`); a strided write stays refused by name."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_close, one

import spyrec
from spyrec.diagnostics import UnsupportedOpsError


class KeyStates(torch.nn.Module):
    """DeepSeek-V3's key states: an empty tensor whose two slices are copied into."""

    def forward(self, k_nope: torch.Tensor, k_rot: torch.Tensor) -> torch.Tensor:
        keys = k_nope.new_empty(*k_nope.shape[:-1], 96)
        keys[..., :64].copy_(k_nope)
        keys[..., 64:].copy_(k_rot.expand(-1, k_nope.shape[1], -1, -1))
        return keys * 2


class Rows(torch.nn.Module):
    """Rows 2..4 of a copy of x replaced, then row 0 (slice_scatter, select_scatter)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        t = x.clone()
        t[:, 2:5] = y
        t[:, 0] = y[:, 1] * 3
        return t + 1


class Columns(torch.nn.Module):
    """A block of columns in the middle of the last dim, a dtype-changing copy."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        t = x * 1.0
        t[..., 40:72].copy_(y.float())
        return t


def _run(model: torch.nn.Module, *inputs: torch.Tensor) -> None:
    exe = spyrec.compile(torch.export.export(model, inputs), cache=False)
    out = one(exe(*inputs))
    expected = model(*inputs)
    if all(t.dtype == torch.float32 for t in inputs):
        assert torch.equal(out, expected)  # moves only: exact (16-bit inputs live as DL16)
    else:
        assert_close(exe, expected, out)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_key_states_copied_into_an_empty_tensor(dtype):
    g = torch.Generator().manual_seed(0)
    _run(KeyStates(), torch.randn(2, 4, 8, 64, generator=g).to(dtype),
         torch.randn(2, 1, 8, 32, generator=g).to(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_rows_written_by_slice_and_index(dtype):
    g = torch.Generator().manual_seed(1)
    _run(Rows(), torch.randn(2, 7, 64, generator=g).to(dtype),
         torch.randn(2, 3, 64, generator=g).to(dtype))


def test_columns_written_with_a_cast():
    g = torch.Generator().manual_seed(2)
    _run(Columns(), torch.randn(3, 16, 128, generator=g),
         torch.randn(3, 16, 32, generator=g).half())


def test_a_strided_write_is_refused_by_name():
    class Strided(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            t = x.clone()
            t[:, ::2] = y
            return t

    x, y = torch.randn(4, 8, 64), torch.randn(4, 4, 64)
    with pytest.raises(UnsupportedOpsError, match="slice_scatter"):
        spyrec.compile(torch.export.export(Strided(), (x, y)), cache=False)


class BlockBias(torch.nn.Module):
    """DeepSeek-V4's block bias: 0.0 written at run-time indices (duplicates included) into
    a row of -inf, then added to scores; and a boolean mask cleared at the same places."""

    def forward(self, scores: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        bias = torch.full_like(scores, float("-inf")).scatter(-1, index, 0.0)
        keep = torch.ones_like(scores, dtype=torch.bool).scatter(-1, index, False)
        return torch.where(keep, scores * 2, scores + bias)


def _block_bias_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    return torch.randn(2, 16, 64, generator=g), torch.randint(0, 64, (2, 16, 6), generator=g)


def test_a_value_scattered_at_run_time_indices_is_a_where(monkeypatch):
    """One value at run-time indices, some repeated: exact (every duplicate writes the same
    value); with only the places written twice or more set (an injected bug) the check fails."""
    from spyrec.frontend import slice_writes

    scores, index = _block_bias_inputs()
    assert (index[..., :, None] == index[..., None, :]).sum() > index.numel()  # duplicates
    model = BlockBias()
    exe = spyrec.compile(torch.export.export(model, (scores, index)), cache=False)
    assert torch.equal(one(exe(scores, index)), model(scores, index))
    rewrite = slice_writes._scatter_value

    def once_more(graph, node):  # only places written twice or more
        new = rewrite(graph, node)
        for n in graph.nodes:
            if n.target == torch.ops.aten.gt.Scalar and n.args[1] == 0.0:
                n.args = (n.args[0], 1.0)
        return new

    monkeypatch.setattr(slice_writes, "_scatter_value", once_more)
    bad = spyrec.compile(torch.export.export(model, (scores, index)), cache=False)
    assert not torch.equal(one(bad(scores, index)), model(scores, index))


class MaskedRowWrite(torch.nn.Module):
    """T5Gemma 2's end-of-image embedding: `x[ids == t] = v`, a boolean mask over the
    leading dims and one row for every picked position (`where(mask[..., None], v, x)`;
    the mask's new trailing dim moves the predicate, which stays one)."""

    def __init__(self) -> None:
        super().__init__()
        self.row = torch.nn.Parameter(torch.randn(64, generator=torch.Generator().manual_seed(4)))

    def forward(self, ids: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        x = x * 2
        x[ids == 3] = self.row
        return x


def test_rows_written_through_a_boolean_mask() -> None:
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 16, 64, generator=g)
    ids = torch.randint(0, 6, (2, 16), generator=g)
    model = MaskedRowWrite()
    exe = spyrec.compile(torch.export.export(model, (ids, x)), cache=False)
    for run in (ids, torch.randint(0, 6, (2, 16), generator=g)):  # any mask, one program
        assert torch.equal(one(exe(run, x)), model(run, x))
