"""Attention masks as users pass them, against PyTorch eager.

`F.scaled_dot_product_attention(q, k, v, attn_mask=bias)` and eager attention (`q @ k^T *
scale + bias`, softmax, `@ v`) with an additive float bias of every shape that broadcasts to
the scores [B, H, L, S]: a per-(batch, head) bias [B, H, L, S] (T5 relative bias, Swin
window bias), one shared by the batch [1, H, L, S] (ALiBi), one shared by the heads
[B, 1, L, S], a padding mask [B, 1, 1, S] and an [L, S] one; fp32 and fp16, at unaligned
lengths (L = 37 queries, S = 45 keys). Each runs as one attention kernel that reads the
bias block of each (batch, head) through its row map (a dim of size 1 is never copied).
Compared by `spyrec.verdict.check_outputs` (via `assert_close`); a bias read for the wrong
head is caught (`test_a_bias_read_for_the_wrong_head_is_caught`).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from conftest import assert_close, one

import spyrec

B, H, L, S, E = 2, 2, 37, 45, 64

SHAPES = {"BHLS": [B, H, L, S], "1HLS": [1, H, L, S], "B1LS": [B, 1, L, S],
          "B11S": [B, 1, 1, S], "LS": [L, S], "HLS": [H, L, S]}


class Sdpa(nn.Module):
    def forward(self, q, k, v, bias):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)


class Eager(nn.Module):
    def forward(self, q, k, v, bias):
        scores = q @ k.transpose(-2, -1) * E ** -0.5 + bias
        return torch.softmax(scores, dim=-1) @ v


def _inputs(shape: list[int], dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, ...]:
    torch.manual_seed(seed)
    q, k, v = (torch.randn(B, H, n, E).to(dtype) for n in (L, S, S))
    # a bias of the size T5 / ALiBi biases reach, with some keys masked outright
    bias = torch.randn(shape) * 4 + torch.where(torch.rand(shape) < 0.2, -30000.0, 0.0)
    bias[..., 0] = 0.0  # every query sees a key
    return q, k, v, bias.to(dtype)


def _check(model: nn.Module, *inputs: torch.Tensor) -> spyrec.api.Executable:
    exe = spyrec.compile(torch.export.export(model, inputs))
    with torch.no_grad():
        expected = model(*inputs)
    assert_close(exe, expected, one(exe(*inputs)))
    return exe


@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_sdpa_bias_of_any_broadcast_shape(shape: str, dtype: torch.dtype) -> None:
    exe = _check(Sdpa(), *_inputs(SHAPES[shape], dtype))
    assert len(exe.binary.kernels) == 1  # the bias is read as stored, never broadcast


@pytest.mark.parametrize("shape", ["BHLS", "B11S", "1HLS"])
def test_eager_attention_bias_is_one_attention_kernel(shape: str) -> None:
    exe = _check(Eager(), *_inputs(SHAPES[shape], torch.float32, seed=1))
    assert len(exe.binary.kernels) == 1


def test_bf16_padding_mask() -> None:
    _check(Sdpa(), *_inputs(SHAPES["B11S"], torch.bfloat16, seed=2))


class Alibi(nn.Module):
    """Causal attention with ALiBi: head h adds slope_h * (j - i) to the score of query i
    and key j (the bias and the causal mask folded into one [1, H, L, L] constant)."""

    slopes: torch.Tensor

    def __init__(self, heads: int, length: int):
        super().__init__()
        self.register_buffer("slopes", 2.0 ** (-8.0 * torch.arange(1, heads + 1) / heads))
        self.length = length

    def forward(self, q, k, v):
        pos = torch.arange(self.length)
        distance = (pos[None, :] - pos[:, None]).float()
        causal = torch.where(distance > 0, -30000.0, 0.0)
        bias = (self.slopes[:, None, None] * distance + causal)[None].to(q.dtype)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_alibi(dtype: torch.dtype) -> None:
    torch.manual_seed(3)
    q, k, v = (torch.randn(B, H, L, E).to(dtype) for _ in range(3))
    _check(Alibi(H, L).to(dtype), q, k, v)


def test_a_bias_read_for_the_wrong_head_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check is not blind to the row map: with the mask origin of every head shifted
    to its neighbour's block, the comparison with eager fails."""
    from spyrec.passes.ktir import ktir_attention

    real = ktir_attention.mask_origin
    monkeypatch.setattr(ktir_attention, "mask_origin",
                        lambda shape, q_lead: (real(shape, q_lead) + L) % (B * H * L))
    q, k, v, bias = _inputs(SHAPES["BHLS"], torch.float32, seed=4)
    exe = spyrec.compile(torch.export.export(Sdpa(), (q, k, v, bias)))
    with torch.no_grad():
        expected = Sdpa()(q, k, v, bias)
    with pytest.raises(AssertionError):
        assert_close(exe, expected, one(exe(q, k, v, bias)))


class Lengths(nn.Module):
    """SDPA with a boolean mask computed in the program (True = attend) from run-time
    sequence lengths: a padding mask [B, 1, 1, S], or one and-ed with a banded [L, S]
    causal pattern into [B, 1, L, S]."""

    def __init__(self, form: str):
        super().__init__()
        self.form = form

    def forward(self, q, k, v, lengths):
        keep = (torch.arange(S)[None, :] < lengths[:, None])[:, None, None, :]
        if self.form == "B1LS":
            keep = keep & (torch.arange(S)[None, :] <= torch.arange(L)[:, None] + 8)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)


@pytest.mark.parametrize("form", ["B11S", "B1LS"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_boolean_mask_computed_at_run_time(form: str, dtype: torch.dtype) -> None:
    """One program, several lengths, a sequence of no keys at all among them (SDPA gives
    its queries zeros; so does the kernel)."""
    torch.manual_seed(6)
    q, k, v = (torch.randn(B, H, n, E).to(dtype) for n in (L, S, S))
    model = Lengths(form)
    exe = spyrec.compile(torch.export.export(model, (q, k, v, torch.tensor([S, 20]))))
    for lengths in ([S, 20], [3, S], [S, 0]):
        inputs = (q, k, v, torch.tensor(lengths))
        with torch.no_grad():
            expected = model(*inputs)
        assert_close(exe, expected, one(exe(*inputs)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_boolean_input_mask(dtype: torch.dtype) -> None:
    """A torch.bool mask passed as an input of the program (nn.MultiheadAttention's and
    TransformerEncoder's padding masks reach SDPA so): 0/1 on the device, a predicate."""
    q, k, v, _ = _inputs(SHAPES["LS"], dtype)
    g = torch.Generator().manual_seed(7)
    exe = spyrec.compile(torch.export.export(Sdpa(), (q, k, v, torch.rand(B, 1, L, S) < 0.5)))
    for _ in range(2):  # one program, any mask
        mask = torch.rand(B, 1, L, S, generator=g) < 0.6
        mask[..., 0] = True  # every query sees a key
        with torch.no_grad():
            expected = Sdpa()(q, k, v, mask)
        assert_close(exe, expected, one(exe(q, k, v, mask)))


# ---- Hugging Face models with a padded batch --------------------------------------------

TINY_DECODER = {"vocab_size": 256, "hidden_size": 64, "intermediate_size": 128,
                "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
                "head_dim": 64, "max_position_embeddings": 64, "use_cache": False}
TINY_ENCODER = {"vocab_size": 256, "hidden_size": 128, "num_hidden_layers": 1,
                "num_attention_heads": 2, "intermediate_size": 256,
                "max_position_embeddings": 64}


def _hf(name: str) -> Any:
    transformers = pytest.importorskip("transformers")
    builders = {
        "llama": lambda: transformers.LlamaForCausalLM(transformers.LlamaConfig(**TINY_DECODER)),
        "qwen3": lambda: transformers.Qwen3ForCausalLM(transformers.Qwen3Config(**TINY_DECODER)),
        "mistral": lambda: transformers.MistralForCausalLM(
            transformers.MistralConfig(**TINY_DECODER)),
        "bert": lambda: transformers.BertModel(transformers.BertConfig(**TINY_ENCODER)),
        "electra": lambda: transformers.ElectraModel(transformers.ElectraConfig(
            embedding_size=128, **TINY_ENCODER)),
        "distilbert": lambda: transformers.DistilBertModel(transformers.DistilBertConfig(
            vocab_size=256, dim=128, n_layers=1, n_heads=2, hidden_dim=256,
            max_position_embeddings=64)),
    }
    return builders[name]()


class Padded(nn.Module):
    """The model on token ids with a run-time `attention_mask` ([B, S], 1 = a token)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids=input_ids, attention_mask=attention_mask)
        return out.logits if hasattr(out, "logits") else out.last_hidden_state


def _padding(side: str) -> torch.Tensor:
    """Two sequences of 16 tokens, the second with 5 of padding on `side`."""
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, 11:] = 0 if side == "right" else 1
    mask[1, :5] = 0 if side == "left" else 1
    return mask


HEAVY = pytest.mark.heavy  # ~10-20 s each: the slow tier


@pytest.mark.parametrize("name,dtype,attention,side", [
    pytest.param("qwen3", torch.float32, "sdpa", "right", marks=HEAVY, id="qwen3"),
    pytest.param("mistral", torch.float16, "sdpa", "right", marks=HEAVY, id="mistral-fp16"),
    pytest.param("llama", torch.float32, "sdpa", "left", marks=HEAVY, id="llama-left"),
    pytest.param("llama", torch.float32, "eager", "right", marks=HEAVY, id="llama-eager"),
    pytest.param("distilbert", torch.float32, "sdpa", "right", marks=HEAVY, id="distilbert"),
    pytest.param("electra", torch.float32, "sdpa", "right", marks=HEAVY, id="electra"),
    pytest.param("bert", torch.float32, "eager", "left", id="bert-eager-left"),
])
def test_padded_batch_with_a_run_time_attention_mask(name: str, dtype: torch.dtype,
                                                     attention: str, side: str) -> None:
    """One program, two masks: a padded batch and the same tokens unpadded, each against
    eager (every row, padded queries included: SDPA gives a query that sees no key zeros,
    and the kernel does too). The padded result fails the check against the unpadded
    eager one, so a program that ignored the run-time mask could not pass."""
    torch.manual_seed(5)
    model = _hf(name)
    model.config._attn_implementation = attention
    wrapped = Padded(model.to(dtype).eval())
    ids = torch.randint(0, 256, (2, 16))
    padded, full = _padding(side), torch.ones(2, 16, dtype=torch.long)
    exe = spyrec.compile(torch.export.export(wrapped, (ids, padded)))
    expected, actual = [], []
    for mask in (padded, full):
        with torch.no_grad():
            expected.append(wrapped(ids, mask))
        actual.append(one(exe(ids, mask)))
        assert not expected[-1].isnan().any()
        assert_close(exe, expected[-1], actual[-1])
    with pytest.raises(AssertionError):  # the padded result is not the unpadded one
        assert_close(exe, expected[1], actual[0])
