"""-inf computed into 16-bit tensors (`spyrec/frontend/infinities.py`, design note 100).

DL16 has no infinity: a 16-bit tensor holding -inf that is stored between kernels reads back
as NaN, and a max or softmax over it is NaN for the whole row. Each program here writes -inf
into an fp16/bf16 tensor at run time and reads it in another kernel (a row maximum, a
comparison, a softmax); every one of them gave all-NaN outputs before the values were
widened to f32 at import."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_close, one

import spyrec
from spyrec.frontend.infinities import widen_infinities

HALF = [pytest.param(torch.float16, id="fp16"), pytest.param(torch.bfloat16, id="bf16")]


class Router(torch.nn.Module):
    """Phi-MoE's sparse mixer (eval): the top expert's gate is a softmax over the scores
    masked to -inf where far below the maximum; the second's, the same after the first
    expert is scattered to -inf."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = torch.nn.Linear(64, 8, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = self.gate(x)
        top, first = scores.max(dim=-1, keepdim=True)
        factor = scores.abs().clamp(min=top)
        far = ((top - scores) / factor) > 0.02
        gate1 = torch.softmax(scores.masked_fill(far, float("-inf")), -1).gather(-1, first)
        rest = torch.scatter(scores, -1, first, float("-inf"))
        top2, second = rest.max(dim=-1, keepdim=True)
        factor2 = scores.abs().clamp(min=top2)
        far2 = ((top2 - scores) / factor2) > 0.02
        gate2 = torch.softmax(rest.masked_fill(far2, float("-inf")), -1).gather(-1, second)
        return torch.cat([gate1, gate2], -1) * 2 + top2


class LogMask(torch.nn.Module):
    """An additive mask made at run time as the log of a 0/1 mask (log 0 = -inf), read by a
    softmax over a dim other than the last (moved there by a kernel of its own)."""

    def forward(self, scores: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        masked = scores + torch.log(keep.to(scores.dtype))
        return torch.softmax(masked, 1)


def _check(model: torch.nn.Module, *inputs: torch.Tensor) -> None:
    exe = spyrec.compile(torch.export.export(model, inputs), cache=False)
    out = one(exe(*inputs))
    expected = model(*inputs)
    assert not out.isnan().any(), "NaN on the device where eager has none"
    assert_close(exe, expected, out)


@pytest.mark.parametrize("dtype", HALF)
def test_router_scatters_and_masks_minus_inf(dtype):
    torch.manual_seed(0)
    model = Router().to(dtype)
    _check(model, torch.randn(16, 64, dtype=dtype))


@pytest.mark.parametrize("dtype", HALF)
def test_log_of_a_run_time_mask(dtype):
    g = torch.Generator().manual_seed(1)
    keep = torch.rand(4, 64, 64, generator=g) > 0.3
    keep[:, 0, :] = True  # no column all masked
    _check(LogMask(), torch.randn(4, 64, 64, generator=g).to(dtype), keep)


class PaddedAttention(torch.nn.Module):
    """nn.MultiheadAttention with a boolean key padding mask: torch turns it into an
    additive mask by `masked_fill(mask, -inf)` in the query's dtype, which SDPA reads."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(128, 2, batch_first=True)

    def forward(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        return self.attn(x, x, x, key_padding_mask=padding, need_weights=False)[0]


@pytest.mark.parametrize("dtype", HALF)
def test_multihead_attention_key_padding_mask(dtype):
    torch.manual_seed(2)
    model = PaddedAttention().eval().to(dtype)
    padding = torch.zeros(2, 40, dtype=torch.bool)
    padding[1, 29:] = True
    _check(model, torch.randn(2, 40, 128, dtype=dtype), padding)


class CastBack(torch.nn.Module):
    """A no-op `.to(float16)` of a masked tensor: export checks its dtype with an
    `_assert_tensor_metadata` node, which the widened value no longer has."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x.masked_fill(x < -1, float("-inf")).to(torch.float16), 0)


def test_a_dtype_assertion_on_a_widened_value():
    x = torch.randn(16, 64, generator=torch.Generator().manual_seed(3)).half()
    _check(CastBack(), x)


class EagerPaddingMask(torch.nn.Module):
    """Eager attention with an additive padding mask made at run time with -inf: the mask
    is computed in f32, and the chain still becomes one attention kernel (the 16-bit
    scores cast up to meet the f32 mask are looked through)."""

    def forward(self, q, k, v, padding):
        mask = torch.zeros(padding.shape, dtype=q.dtype).masked_fill(padding, float("-inf"))
        scores = q @ k.transpose(-1, -2) * 0.125 + mask[:, None, None, :]
        return torch.softmax(scores, -1) @ v


@pytest.mark.parametrize("dtype", HALF)
def test_eager_attention_with_a_run_time_minus_inf_mask(dtype):
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, 2, 32, 64, generator=g).to(dtype) for _ in range(3))
    padding = torch.zeros(2, 32, dtype=torch.bool)
    padding[1, 20:] = True
    exe = spyrec.compile(torch.export.export(EagerPaddingMask(), (q, k, v, padding)),
                         cache=False)
    out = one(exe(q, k, v, padding))
    assert not out.isnan().any()
    assert_close(exe, EagerPaddingMask()(q, k, v, padding), out)
    assert len(exe.binary.kernels) == 2  # the mask, then one attention kernel


def _graph(model: torch.nn.Module, *inputs: torch.Tensor) -> torch.fx.Graph:
    ep = torch.export.export(model, inputs).run_decompositions()
    return ep.graph


def test_only_what_may_hold_an_infinity_is_widened():
    """The masked scores and their row maxima are f32; the linear before them, the softmax's
    result and everything after it keep the program's dtype."""
    torch.manual_seed(0)
    model = Router().half()
    graph = _graph(model, torch.randn(16, 64, dtype=torch.float16))
    assert widen_infinities(graph) > 0
    dtypes = {}
    for node in graph.nodes:
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            dtypes.setdefault(str(node.target), set()).add(val.dtype)
    assert dtypes["aten.mm.default"] == {torch.float16}  # the gate's matmul
    assert torch.float32 in dtypes["aten.where.self"]  # masked_fill / scatter: widened
    assert torch.float16 not in dtypes["aten.where.self"]
    assert dtypes["aten._softmax.default"] == {torch.float32}
    output = next(n for n in graph.nodes if n.op == "output")
    assert [a.meta["val"].dtype for a in output.args[0]] == [torch.float16]


def test_a_graph_without_infinities_is_left_alone():
    class Plain(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            masked = x.masked_fill(x < 0, -1e4) + torch.log(x.abs() + 1)  # features' log
            return torch.softmax(masked, -1).clamp(max=float("inf"))

    graph = _graph(Plain(), torch.randn(4, 64, dtype=torch.float16))
    before = [n.format_node() for n in graph.nodes]
    assert widen_infinities(graph) == 0
    assert [n.format_node() for n in graph.nodes] == before
