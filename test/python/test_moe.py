"""Top-k routing and mixture-of-experts dispatch (spyrec/frontend/moe.py, design note 76).

`topk` along the last dim becomes k passes of a row maximum and a mask: its result equals
the order "value descending, NaN largest, lowest index first among ties" exactly, for
ties, NaN, infinities and signed zeros, in the rewritten graph (run by torch) and on the
device. A tiny Hugging Face MoE model (transformers' grouped_mm experts) compiles with a
dense dispatch and matches eager; the checks are shown to catch a wrong tie order and a
swapped routing weight.
"""

from __future__ import annotations

import pytest
import torch
from conftest import assert_close
from test_hf_models import TokenLogits

import spyrec
from spyrec.frontend import moe
from spyrec.frontend.importer import decompose
from spyrec.verdict import check_outputs


class TopK(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        values, indices = torch.topk(x, self.k)
        return values, indices


def lowest_index_first(x: torch.Tensor, k: int, last: bool = False
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """The top k of each row of `x` (2-D) by value, NaN largest, ties by the lowest index
    (by the highest with `last`: a wrong tie order, for the checks to catch)."""
    tie = -1 if last else 1
    rows = []
    for row in x.tolist():
        key = [(1 if v != v else 0, v if v == v else 0.0, -tie * j) for j, v in enumerate(row)]
        rows.append(sorted(range(len(row)), key=lambda j: key[j], reverse=True)[:k])
    indices = torch.tensor(rows, dtype=torch.int64)
    return torch.gather(x, -1, indices), indices


def special_rows(dtype: torch.dtype) -> torch.Tensor:
    """Rows of ties (small integers), NaN, +-inf and signed zeros."""
    g = torch.Generator().manual_seed(0)
    x = torch.randint(-2, 3, (32, 8), generator=g).to(dtype)
    x[0, 1] = x[1, 6] = float("nan")
    x[2] = float("-inf")
    x[3, :6] = float("-inf")
    x[4, 3] = float("inf")
    x[5] = 0.0
    x[5, ::3] = -0.0
    x[6, ::2] = float("nan")
    return x


def rewritten(model: torch.nn.Module, *inputs: torch.Tensor) -> torch.export.ExportedProgram:
    ep = decompose(torch.export.export(model, inputs))
    moe.rewrite_routing(ep.graph)
    ep.graph.lint()
    ep.graph_module.recompile()
    return ep


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal element for element, NaN matching NaN and the sign of zero compared."""
    return (a.shape == b.shape and torch.equal(a.isnan(), b.isnan()) and torch.equal(
        torch.nan_to_num(a), torch.nan_to_num(b)) and torch.equal(a.signbit(), b.signbit()))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("k", [1, 2, 3, 8])
def test_topk_rewrite_is_exact(dtype: torch.dtype, k: int) -> None:
    x = special_rows(dtype)
    ep = rewritten(TopK(k), x)
    assert not any(n.target == torch.ops.aten.topk.default for n in ep.graph.nodes)
    values, indices = ep.module()(x)
    expected_values, expected_indices = lowest_index_first(x, k)
    assert torch.equal(indices, expected_indices)
    assert same(values, expected_values)
    if k > 1:  # ties occur in most rows: the highest-index order differs
        assert not torch.equal(indices, lowest_index_first(x, k, last=True)[1])


def test_topk_not_last_dim_left_alone() -> None:
    class First(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.topk(x, 2, dim=0).values

    ep = rewritten(First(), torch.randn(8, 8))
    assert any(n.target == torch.ops.aten.topk.default for n in ep.graph.nodes)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_topk_on_device(dtype: torch.dtype) -> None:
    """Ties, NaN and infinities (fp32) on the device: the indices equal the lowest-index order,
    and the check rejects the highest-index order on the same output."""
    x = special_rows(dtype)[:8]
    x = torch.cat([x, torch.randn(8, 8, generator=torch.Generator().manual_seed(1)).to(dtype)])
    if dtype == torch.float16:  # DL16 holds no infinity: large finite values instead
        x = torch.where(x.isinf(), x.sign() * 30000, x)
    exe = spyrec.compile(torch.export.export(TopK(2), (x,)))
    out = exe(x)
    assert_close(exe, lowest_index_first(x, 2), out)
    wrong = check_outputs(lowest_index_first(x, 2, last=True), out, exe)
    assert not wrong.ok


class SparseAttention(torch.nn.Module):
    """DeepSeek-V3.2's indexer mask: the keys outside a top-k of index scores masked by a
    boolean `scatter` at the indices (cast to int32 and back), and-ed into a causal mask."""

    def forward(self, q, k, v, scores):
        idx = scores.topk(4, dim=-1).indices.to(torch.int32)
        hidden = torch.ones(q.shape[0], q.shape[2], k.shape[2], dtype=torch.bool).scatter(
            -1, idx.long(), False).unsqueeze(1)
        causal = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril()
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=causal & ~hidden)


def test_a_boolean_mask_scattered_at_topk_indices_stays_a_predicate() -> None:
    """The scatter becomes `base & ~any(one-hot)`, a predicate SDPA reads as a mask (it was
    a `where` of booleans, refused); checked against eager and against the mask with one
    key too many."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 16, 64, generator=g) for _ in range(3))
    scores = torch.randn(1, 16, 16, generator=g) + torch.triu(torch.full((16, 16), -1e4), 1)
    exe = spyrec.compile(torch.export.export(SparseAttention(), (q, k, v, scores)))
    out = exe(q, k, v, scores)
    assert_close(exe, SparseAttention()(q, k, v, scores), out)
    wider = SparseAttention()(q, k, v, scores.clone().index_fill_(-1, torch.tensor([0]), 1e4))
    assert not check_outputs(wider, out, exe).ok


class IndexerMask(torch.nn.Module):
    """The folded causal mask read twice: through `mask[:, 0]` by the indexer's scores and
    and-ed (a bitwise and of booleans) with the mask of the keys the top-k leaves out."""

    def forward(self, q, k, v, scores):
        causal = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril()[None, None]
        picked = scores.masked_fill(~causal[:, 0], float("-inf")).topk(4, dim=-1).indices
        hidden = torch.ones(1, q.shape[2], k.shape[2], dtype=torch.bool).scatter(
            -1, picked, False).unsqueeze(1)
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=causal & ~hidden)


def test_a_folded_causal_mask_read_through_a_select_stays_a_predicate() -> None:
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, 2, 16, 64, generator=g) for _ in range(3))
    scores = torch.randn(1, 16, 16, generator=g)
    exe = spyrec.compile(torch.export.export(IndexerMask(), (q, k, v, scores)))
    out = exe(q, k, v, scores)
    assert_close(exe, IndexerMask()(q, k, v, scores), out)
    causal_only = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert not check_outputs(causal_only, out, exe).ok


class PaddedIndexerMask(torch.nn.Module):
    """A run-time padding mask and-ed with the causal one (a predicate on the device), read
    by the indexer through `mask[:, 0]` (a select of a predicate stays one)."""

    def forward(self, scores, keep):
        causal = torch.ones(16, 16, dtype=torch.bool).tril()[None, None]
        mask = causal & (keep[:, None, None, :] != 0)
        return scores.masked_fill(~mask[:, 0], -1e4).softmax(-1)


def test_a_select_of_a_run_time_mask_stays_a_predicate() -> None:
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(2, 16, 16, generator=g)
    keep = torch.ones(2, 16, dtype=torch.int64)
    keep[1, 11:] = 0
    exe = spyrec.compile(torch.export.export(PaddedIndexerMask(), (scores, keep)))
    out = exe(scores, keep)
    assert_close(exe, PaddedIndexerMask()(scores, keep), out)
    assert not check_outputs(PaddedIndexerMask()(scores, torch.ones_like(keep)), out, exe).ok


def _tiny_moe(dtype: torch.dtype) -> tuple[torch.nn.Module, torch.Tensor]:
    from transformers import GraniteMoeSharedConfig, GraniteMoeSharedForCausalLM

    config = GraniteMoeSharedConfig(
        vocab_size=64, hidden_size=64, intermediate_size=64, shared_intermediate_size=64,
        num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1,
        num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=32,
        use_cache=False)
    torch.manual_seed(0)
    model = TokenLogits(GraniteMoeSharedForCausalLM(config)).to(dtype).eval()
    ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(0))
    return model, ids


@pytest.mark.heavy  # a model compile, twice per dtype (about a minute); fp32 opt-in
@pytest.mark.parametrize("dtype", [pytest.param(torch.float32, marks=pytest.mark.slow),
                                   torch.float16])
def test_moe_model_matches_eager(dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-layer Granite MoE: routing, dense dispatch and combine as eager. With the
    routing weights of the two choices swapped (an injected bug) the check fails."""
    model, ids = _tiny_moe(dtype)
    ep = torch.export.export(model, (ids,), strict=False)
    exe = spyrec.compile(ep)
    with torch.no_grad():
        expected = model(ids)
    assert_close(exe, expected, exe(ids))
    rewrite_topk = moe._rewrite_topk

    def swapped(graph, node):
        picked = rewrite_topk(graph, node)
        return None if picked is None else (picked[0], picked[1][::-1])

    monkeypatch.setattr(moe, "_rewrite_topk", swapped)
    bad = spyrec.compile(torch.export.export(model, (ids,), strict=False))
    assert not check_outputs(expected, bad(ids), bad).ok


class RouterScores(torch.nn.Module):
    """Llama 4's router: the top-k values written at the top-k indices of a row of -inf."""

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        values, indices = torch.topk(logits, 2, dim=1)
        return torch.full_like(logits, float("-inf")).scatter_(1, indices, values).sigmoid()


def _distinct(rows: int, width: int) -> torch.Tensor:
    """Rows of distinct values: the top-k indices are the same in every tie order."""
    g = torch.Generator().manual_seed(0)
    return torch.rand(rows, width, generator=g).argsort(-1).float() / width - 0.5


def test_topk_values_scattered_at_topk_indices_are_a_where_per_choice(monkeypatch) -> None:
    """scatter.src at a top-k's indices: the rewritten graph equals eager bit for bit; with
    the choices' one-hot rows swapped (an injected bug) it does not."""
    x = _distinct(16, 8)
    ep = rewritten(RouterScores(), x)
    assert not any(n.target == torch.ops.aten.scatter.src for n in ep.graph.nodes)
    assert torch.equal(ep.module()(x), RouterScores()(x))
    rewrite_topk = moe._rewrite_topk

    def swapped(graph, node):
        picked = rewrite_topk(graph, node)
        return None if picked is None else (picked[0], picked[1][::-1])

    monkeypatch.setattr(moe, "_rewrite_topk", swapped)
    assert not torch.equal(rewritten(RouterScores(), x).module()(x), RouterScores()(x))


@pytest.mark.heavy  # builds and exports a tiny DeepSeek-V4 (about 30 s)
def _sweep_model(name: str):
    """The sweep's fp32 build of model `name` (benchmarks/sweep_models.py) and that module."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import sweep_models  # pyright: ignore[reportMissingImports]

    case = next(c for c in sweep_models.all_cases() if c.name == name)
    return sweep_models.build(case, "fp32"), sweep_models


def _dense_dispatch_matches_eager(built, sweep_models) -> None:
    """The exported graph with its routing rewritten (run by torch) has nothing of the
    grouped dispatch left and matches eager."""
    ep = decompose(sweep_models.export(built))
    moe.rewrite_routing(ep.graph)
    ep.graph_module.recompile()
    left = {str(n.target) for n in ep.graph.nodes} & {
        "aten.sort.default", "aten.histc.default", moe._GROUPED}
    assert not left
    with torch.no_grad():
        expected = built.module(*built.run)
        got = ep.module()(*built.run)
    got = got[0] if isinstance(got, tuple | list) else got
    assert torch.allclose(got, expected, atol=1e-5, rtol=1e-5)


def test_hash_routed_experts_take_the_dense_dispatch() -> None:
    """DeepSeek-V4's first MoE layer reads each token's experts from a table
    (`tid2eid[input_ids]`): one-hot rows of those ids make its grouped_mm dispatch dense.
    With a table of distinct and of repeated experts per token the rewritten graph (run by
    torch) matches eager, and nothing of the grouped dispatch is left."""
    built, sweep_models = _sweep_model("hf:deepseek_v4")
    tables = [b for n, b in built.module.named_buffers() if n.endswith("tid2eid")]
    assert tables
    g = torch.Generator().manual_seed(0)
    for table in tables:  # distinct experts for most tokens, the same one twice for some
        table.copy_(torch.randint(0, 4, table.shape, generator=g))
    _dense_dispatch_matches_eager(built, sweep_models)


def test_a_skip_expert_masked_to_expert_zero_takes_the_dense_dispatch() -> None:
    """Zaya routes over its experts and one skip expert, replaces a skip choice by expert 0
    with a routing weight of 0 (`masked_fill`), and hands the [B, S, k] ids to the
    grouped_mm experts: the ids are viewed as [tokens, k] and compared with the experts'
    numbers, so the dispatch is dense. With the skip expert chosen for some tokens the
    rewritten graph (run by torch) matches eager, and nothing of the grouped dispatch is
    left."""
    built, sweep_models = _sweep_model("hf:zaya")
    for name, bias in built.module.named_buffers():
        if name.endswith("balancing_biases"):
            bias[-1] = 0.1  # the skip expert: now chosen where its probability leads
    _dense_dispatch_matches_eager(built, sweep_models)
    picks = []
    for module in built.module.modules():
        if type(module).__name__ == "ZayaRouter":
            # its routing weights: 0 exactly where the skip expert was chosen
            module.register_forward_hook(lambda m, i, out: picks.append(out[1].clone()))
    with torch.no_grad():
        built.module(*built.run)
    assert any(bool((weights == 0).any()) for weights in picks)  # a skip was chosen
