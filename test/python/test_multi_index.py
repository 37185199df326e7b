"""Indexing by several index tensors (`spyrec/frontend/multi_index.py`): the indexed dims
merged by a view and the indices linearised into one, which op selection gathers by. Moves
of whole rows: eager's values bit for bit in fp32. Before, every such index was refused
("run-time index tensors at dims [0, 1]"), among them transformers' sequence classifiers
with a pad token (`logits[arange(B), last_non_pad_token]`, whose argmax is of int32)."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_close, one

import spyrec


class LastToken(torch.nn.Module):
    """transformers' GenericForSequenceClassification: the row of each sequence's last
    token that is not padding (an argmax of int32 positions times the pad mask)."""

    def forward(self, ids: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        real = (ids != 0).to(torch.int32)
        positions = torch.arange(ids.shape[-1], dtype=torch.int32)
        last = (positions * real).argmax(-1)
        return hidden[torch.arange(ids.shape[0]), last]


class Pairs(torch.nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
        return x[i, j] * 2


class Triples(torch.nn.Module):
    """Three index tensors broadcast to [2, 3], at dims 1..3 of a 5-D tensor."""

    def forward(self, x: torch.Tensor, i: torch.Tensor, j: torch.Tensor,
                k: torch.Tensor) -> torch.Tensor:
        return x[:, i, j, k] + 1


def _same(model: torch.nn.Module, compile_args: tuple, *runs: tuple) -> None:
    exe = spyrec.compile(torch.export.export(model, compile_args), cache=False)
    for args in (compile_args, *runs):  # one program, any index values
        out, expected = one(exe(*args)), model(*args)
        if expected.dtype == torch.float32:
            assert torch.equal(out, expected)
        else:
            assert_close(exe, expected, out)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_last_real_token_of_each_sequence(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(3, 16, 64, generator=g).to(dtype)
    ids = torch.randint(1, 50, (3, 16), generator=g)
    other = ids.clone()
    ids[0, 10:] = 0
    ids[2, 5:] = 0
    other[1, 3:] = 0
    _same(LastToken(), (ids, hidden), (other, hidden))


def test_pairs_with_negative_indices() -> None:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(5, 7, 64, generator=g)
    _same(Pairs(), (x, torch.tensor([0, 4, -1, 2]), torch.tensor([6, -7, 3, 0])),
          (x, torch.tensor([-5, 1, 1, 3]), torch.tensor([-1, 2, 2, 5])))


def test_three_broadcast_index_tensors_after_a_slice() -> None:
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 4, 5, 6, 64, generator=g)
    i = torch.tensor([[0], [3]])
    _same(Triples(), (x, i, torch.tensor([[1, 4, 0]]), torch.tensor([[5, 0, 2]])),
          (x, torch.tensor([[2], [1]]), torch.tensor([[0, 0, 3]]), torch.tensor([[-1, 3, 1]])))
