"""Regressions the model-coverage sweep found (docs/models.md), each reduced to the construct.

- A size only the data decides (transformers' xmod adapters: `x[mask]` per language, the
  rows written back by `out[mask] = ...`) crashed constant folding with torch's
  GuardOnDataDependentSymNode; it is refused, naming the node, its source line and the
  `torch.where` form that compiles.
- A split by counts read from a tensor (`.tolist()`, jetmoe's expert dispatch) crashed the
  same way, then stopped at a bare "not an ATen op" on the number's comparison; it is
  refused naming the `.item()` / `.tolist()` it computes with.
- A gather from a table larger than the span one core may address in one tensor (256 MiB:
  gemma4's per-layer embeddings, 262144 rows) compiled and faulted when it ran; it is
  refused at its node.
- A kernel no split of which keeps each core within that span (a max over one 280 MB row)
  was planned anyway; it is refused at compile time, naming the kernel and its node.
- hf:pegasus_x's local attention wrote `x.unsqueeze(-1)` and two permutations that only
  move size-1 dims, then a view: one free view as a whole, lowered op by op as a 512 x 512
  identity expanded over 1,024 rows (1 GiB, written once and read by three transposes)
  that faulted on the span rule. The chain is one view now, and a broadcast read by
  several batch matmuls is folded into each one's reads instead of materialised.
- hf:afmoe's tiny model initialises its router to zeros, so every routing score ties and
  which experts top-k picks is the sorting algorithm's (design note 76), not the model's:
  the sweep gives such matrices random values, and the routing is then exact.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from conftest import assert_matches_eager

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


class Lookup(torch.nn.Module):
    def __init__(self, rows: int) -> None:
        super().__init__()
        self.table = torch.nn.Embedding(rows, 512)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.table(ids) * 2


def test_a_gather_from_a_table_past_the_per_core_span_is_refused_at_its_node() -> None:
    rows = 256 * 1024 * 1024 // (512 * 4) + 1  # one f32 row past 256 MiB
    with pytest.raises(CompileError, match=r"test_sweep_regressions\.py:\d+: "
                       r"aten\.embedding\.default \(node embedding\): a table of 131073 rows "
                       r"of 512 spanning 256\.0 MiB, beyond the 256 MiB of one tensor a core"):
        spyrec.compile(torch.export.export(Lookup(rows), (torch.tensor([[0, 3]]),)),
                       cache=False)


class RowMax(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.amax(-1)


def test_a_kernel_every_split_of_which_spans_past_256_mib_is_refused_at_compile_time() -> None:
    x = torch.zeros(1, 70_000_000)  # one 280 MB row a max keeps whole on one core
    with pytest.raises(CompileError, match=r"kernel @k0 \(test_sweep_regressions\.py:\d+: "
                       r"spyre\.reduce_max \(node amax\)\): every split .* leaves a core "
                       r"spanning 267\.0 MiB of one tensor \(its rows\), beyond the 256 "
                       r"MiB.*on fewer rows"):
        spyrec.compile(torch.export.export(RowMax(), (x,)), cache=False)


class LmHead(torch.nn.Module):
    """A Granite-8B-sized LM head (hidden 4096, vocabulary 49152, fp16: 402 MB), whole or in
    two halves returned separately or concatenated."""

    def __init__(self, pieces: int = 1, cat: bool = False) -> None:
        super().__init__()
        self.cat = cat
        self.w = torch.nn.ParameterList(
            torch.nn.Parameter(torch.zeros(49152 // pieces, 4096, dtype=torch.float16))
            for _ in range(pieces))

    def forward(self, x: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        logits = [torch.nn.functional.linear(x, w) for w in self.w]
        if self.cat:
            return torch.cat(logits, -1)
        return tuple(logits) if len(logits) > 1 else logits[0]


@pytest.mark.heavy
def test_a_weight_no_core_split_keeps_within_the_span_is_refused_with_what_to_do() -> None:
    # it compiled and faulted when it ran (a core's columns span 384 MiB of the weight)
    x = torch.zeros(1, 4096, dtype=torch.float16)
    with pytest.raises(CompileError, match=r"spanning 383\.9 MiB of one tensor \(the matmul's "
                       r"B, down all its K rows\).*split the matmul's output features"):
        spyrec.compile(torch.export.export(LmHead(), (x,)), cache=False)


def test_a_concatenation_too_wide_for_placement_matrices_is_refused() -> None:
    # two 24,576-column halves of an LM head concatenated built 2.4 G elements of placement
    # matrices (the compile was killed out of memory); pieces of 8192 show the same refusal
    class Halves(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.cat([a * 2, b * 2], -1)

    pieces = (torch.zeros(1, 8192), torch.zeros(1, 8192))
    with pytest.raises(CompileError, match=r"aten\.cat\.default \(node cat\): a concatenation "
                       r"into 16384 columns .* past the 67108864 the compiler builds"):
        spyrec.compile(torch.export.export(Halves(), pieces), cache=False)


class ViewChain(torch.nn.Module):
    """PEGASUS-X's blocked local attention: unsqueeze(-1), two permutations of size-1 dims
    and a view, as a whole a view that keeps the stick dim."""

    def forward(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        u = x.softmax(-1).unsqueeze(5).permute(0, 1, 2, 3, 5, 4).permute(1, 3, 5, 0, 2, 4)
        return torch.bmm(u.reshape(2, 64, 64), v)


def test_a_chain_of_views_that_keeps_every_element_in_place_is_one_view() -> None:
    g = torch.Generator().manual_seed(0)
    x, v = torch.randn(1, 2, 1, 64, 64, generator=g), torch.randn(2, 64, 32, generator=g)
    exe = spyrec.compile(torch.export.export(ViewChain(), (x, v)), cache=False)
    # the softmax and the batch matmul: no device transposes (18 kernels op by op)
    assert [k.provenance[-1] for k in exe.binary.kernels] == ["softmax", "bmm"]
    assert_matches_eager(exe, ViewChain(), x, v)


class SwappedAndRestored(torch.nn.Module):
    """LongT5's local attention (`einsum("...hqk,...khd->...qhd")` once exported): the
    probabilities go through unsqueeze(5), a permutation that swaps heads and query rows
    and one that swaps them back, then a view: as a whole a view of the softmax. The
    values go through unsqueeze(5) and two permutations that move the key dim into the
    stick and out again, and the product through a permutation whose innermost dim is a
    size-1 one: as wholes, each a permutation of rows that keeps the stick dim."""

    def forward(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.einsum("...hqk,...khd->...qhd", x.softmax(-1), v)


def test_a_chain_that_swaps_dims_and_swaps_them_back_is_one_view() -> None:
    g = torch.Generator().manual_seed(0)
    x, v = torch.randn(2, 1, 4, 32, 96, generator=g), torch.randn(2, 1, 96, 4, 64, generator=g)
    ep = torch.export.export(SwappedAndRestored(), (x, v))
    exe = spyrec.compile(ep, cache=False)
    # the softmax, the values' row permutation, the batch matmul reading the softmax as
    # it is, the product's row permutation: 4 kernels (28 with the probabilities' chain
    # one view and the other two op by op: device transposes into and out of the stick)
    assert [k.provenance[-1] for k in exe.binary.kernels] == [
        "softmax", "permute_default", "bmm", "permute_default_1"]
    assert_matches_eager(exe, SwappedAndRestored(), x, v)


class SharedBroadcast(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        a = (x * 2).expand(8, 64, 64)
        return torch.bmm(a, y) + torch.bmm(a, z)


def test_a_broadcast_two_batch_matmuls_read_is_folded_into_both_reads() -> None:
    g = torch.Generator().manual_seed(0)
    inputs = (torch.randn(1, 64, 64, generator=g), torch.randn(8, 64, 32, generator=g),
              torch.randn(8, 64, 32, generator=g))
    exe = spyrec.compile(torch.export.export(SharedBroadcast(), inputs), cache=False)
    assert [k.provenance for k in exe.binary.kernels] == [
        ["mul"], ["expand", "bmm"], ["expand", "bmm_1"], ["add"]]
    assert_matches_eager(exe, SharedBroadcast(), *inputs)


def test_the_sweep_gives_zero_matrices_random_values_so_routing_does_not_tie() -> None:
    pytest.importorskip("transformers")
    benchmarks = Path(__file__).resolve().parents[2] / "benchmarks"
    spec = importlib.util.spec_from_file_location("sweep_models", benchmarks / "sweep_models.py")
    assert spec is not None and spec.loader is not None
    catalogue = importlib.util.module_from_spec(spec)
    sys.modules["sweep_models"] = catalogue
    spec.loader.exec_module(catalogue)
    case = {c.name: c for c in catalogue.all_cases()}["hf:afmoe"]
    model, _ = catalogue.hf_model(case)
    routers = [m for name, m in model.named_modules() if name.endswith("router.gate")]
    assert routers
    for name, param in model.named_parameters():
        assert param.dim() < 2 or param.any(), name
    with torch.no_grad():
        scores = routers[0](torch.randn(16, model.config.hidden_size))
    top = scores.topk(3, dim=-1).values  # the top-2 choice is decided by values, not ties
    assert bool((top[:, 1] > top[:, 2]).all())
