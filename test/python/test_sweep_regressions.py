"""Regressions the model-coverage sweep found (docs/models.md), each reduced to the construct.

- A size only the data decides (transformers' xmod adapters: `x[mask]` per language, the
  rows written back by `out[mask] = ...`) crashed constant folding with torch's
  GuardOnDataDependentSymNode; it is refused, naming the node, its source line and the
  `torch.where` form that compiles.
- A split by counts read from a tensor (`.tolist()`, jetmoe's expert dispatch) crashed the
  same way, then stopped at a bare "not an ATen op" on the number's comparison; it is
  refused naming the `.item()` / `.tolist()` it computes with.
"""

from __future__ import annotations

import pytest
import torch

import spyrec
from spyrec.diagnostics import CompileError


class MaskedRows(torch.nn.Module):
    """xmod's language adapter: a row-wise function of the rows a mask picks, written back."""

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(x)
        mask = ids == 1
        out[mask] = torch.relu(x[mask]) * 2
        return out + x


class SplitByCounts(torch.nn.Module):
    """jetmoe's dispatch: the rows split by per-expert counts read from a tensor."""

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        counts = (ids.unsqueeze(1) == torch.arange(4)).sum(0).tolist()
        for c in counts:
            torch._check(c >= 0)
            torch._check(c <= x.shape[0])
        torch._check(sum(counts) == x.shape[0])
        return torch.stack([p.sum(0) * (i + 1) for i, p in enumerate(x.split(counts))])


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(16, 64), torch.arange(16) % 4


def test_a_size_the_data_decides_is_refused_at_its_node() -> None:
    with pytest.raises(CompileError, match=r"node index \(aten\.index\.Tensor, "
                       r"test_sweep_regressions\.py:\d+\): its dim 0 has the size u\d+, "
                       r"which only the data decides.*torch\.where"):
        spyrec.compile(torch.export.export(MaskedRows(), _inputs()), cache=False)


def test_a_split_by_counts_read_from_a_tensor_is_refused_at_its_number() -> None:
    with pytest.raises(CompileError, match=r"test_sweep_regressions\.py:\d+\): it computes "
                       r"with .*, a number read from a tensor when the program runs"):
        spyrec.compile(torch.export.export(SplitByCounts(), _inputs()), cache=False)
