"""Model patterns that move the innermost (stick) dim, on the device (design note 37).

A device transpose is `identity @ x^T` per batch, a `spyre.batch_matmul` whose rhs the PT
reads as stored; bmm of two activations is the same kernel, and `q @ k^T` reads k as
stored with no transpose at all. Through it: a Hugging Face Llama with its default head
dim of 16 (the heads are split off and merged back into the innermost dim), Llama's rotary
embedding of run-time `position_ids` (`position_ids[..., None]` makes the positions a
column), a KV cache grown by `torch.cat(..., dim=-2)`, attention scores written out by hand,
and a boolean program output. Each is compared with PyTorch eager by
`spyrec.verdict.check_outputs`.
"""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_close, one

import spyrec

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _check(model: torch.nn.Module, *inputs: torch.Tensor) -> spyrec.api.Executable:
    model = model.eval()
    exe = spyrec.compile(torch.export.export(model, inputs))
    outs = exe(*inputs)
    with torch.no_grad():
        expected = model(*inputs)
    pairs = zip(outs, expected) if isinstance(expected, tuple) else [(one(outs), expected)]
    for out, want in pairs:
        assert out.dtype == want.dtype and out.shape == want.shape
    assert_close(exe, expected, outs)
    return exe


@pytest.mark.parametrize("attention,dtype", [
    ("sdpa", torch.float32), ("eager", torch.float32), ("sdpa", torch.float16),
], ids=["sdpa-fp32", "eager-fp32", "sdpa-fp16"])
def test_llama_with_its_default_head_dim_of_16(attention, dtype):
    """hidden 64 over 4 heads: heads of 16 (a quarter of an fp16 stick, half an fp32 one),
    split off the projections and merged back by transposes; rotate_half's column map reads
    the split heads, whose padding is not zero, with an exact contraction."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        use_cache=False)
    assert config.head_dim == 16
    model = transformers.LlamaForCausalLM(config)
    model.config._attn_implementation = attention
    model = model.to(dtype)

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, embeds):
            return self.model(inputs_embeds=embeds).logits

    embeds = torch.randn(1, 16, 64, generator=torch.Generator().manual_seed(1)).to(dtype)
    _check(Logits(), embeds)


def test_llama_rotary_of_run_time_positions():
    """LlamaRotaryEmbedding(x, position_ids): `position_ids[..., None].float() * inv_freq`
    turns the positions (an int64 row) into a column, a device transpose through f32; cos
    and sin then run on the SFU. Nothing is folded: the positions are an input."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = transformers.LlamaConfig(hidden_size=64, num_attention_heads=4, head_dim=64)

    class Rotary(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rope = LlamaRotaryEmbedding(config)

        def forward(self, x, positions):
            return self.rope(x, positions)

    positions = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 40, 41, 42, 43, 60, 61, 62, 63]])
    exe = _check(Rotary(), torch.randn(1, 16, 64), positions)
    assert not any(b.name.endswith(".folded") for b, _ in exe.binary.weights)


class OuterProductRotary(torch.nn.Module):
    """The rotary frequencies as transformers 4.x wrote them: `inv_freq[None, :, None]` (a
    buffer, folded) @ `position_ids[:, None, :]`, a K = 1 bmm of a constant column by the
    positions' row, transposed to [batch, tokens, dim / 2]."""

    inv_freq: torch.Tensor  # a buffer

    def __init__(self, dim: int = 64):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim))

    def forward(self, x, positions):
        inv = self.inv_freq[None, :, None].float().expand(positions.shape[0], -1, 1)
        freqs = (inv @ positions[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return x * emb.cos() + x * emb.sin()


def test_rotary_as_an_outer_product_of_positions():
    positions = torch.arange(16)[None].repeat(2, 1) + torch.tensor([[0], [9]])
    _check(OuterProductRotary(), torch.randn(2, 16, 64), positions)


class CatCache(torch.nn.Module):
    """One decode step with a DynamicCache-style cache: the new key and value rows are
    concatenated to the past ones along dim -2, and the query attends over all of them."""

    def forward(self, q, k, v, past_k, past_v):
        keys = torch.cat([past_k, k], dim=-2)
        values = torch.cat([past_v, v], dim=-2)
        return F.scaled_dot_product_attention(q, keys, values), keys, values


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_kv_cache_grown_by_cat(dtype):
    g = torch.Generator().manual_seed(2)
    new = [torch.randn(1, 2, 1, 64, generator=g).to(dtype) for _ in range(3)]
    past = [torch.randn(1, 2, 12, 64, generator=g).to(dtype) for _ in range(2)]
    _check(CatCache(), *new, *past)


class HandWrittenScores(torch.nn.Module):
    """Attention written out with a relative-position bias between the scores and the
    softmax, so it is not matched as SDPA: q @ k^T and p @ v are batch matmuls."""

    def forward(self, q, k, v, bias):
        scores = q @ k.transpose(-1, -2) / 8.0 + bias
        return torch.softmax(scores, dim=-1) @ v


def test_hand_written_scores_read_the_key_as_stored():
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 24, 64, generator=g) for _ in range(3))
    bias = torch.randn(2, 24, 24, generator=g)
    exe = _check(HandWrittenScores(), q, k, v, bias)
    # q @ k^T transposes nothing: no identity matrix is stored
    assert not any("identity" in b.name for b, _ in exe.binary.weights)


class RepeatedTransposes(torch.nn.Module):
    def forward(self, x):
        for _ in range(4):
            x = (x.transpose(-1, -2) * 1.5).transpose(-1, -2) + 1
        return x


def test_transposes_of_one_size_share_one_identity():
    """Eight device transposes of [.., 96, 128] and [.., 128, 96] read two identities (one
    per size), not eight: n^2 bytes each would grow with the number of transposes."""
    x = torch.randn(2, 128, 96, generator=torch.Generator().manual_seed(5))
    exe = _check(RepeatedTransposes(), x)
    shapes = sorted(data.shape for b, data in exe.binary.weights if "identity" in b.name)
    assert shapes == [(96, 96), (128, 128)]


def test_a_boolean_output_reaches_the_host_as_bool():
    class Compare(torch.nn.Module):
        def forward(self, positions, limit):
            return positions <= limit, limit.float() * 0.5

    g = torch.Generator().manual_seed(4)
    positions = torch.randint(-4, 5, (3, 40), generator=g)
    limit = torch.randint(-4, 5, (3, 40), generator=g)
    mask, _ = _check(Compare(), positions, limit)(positions, limit)
    assert mask.dtype == torch.bool and torch.equal(mask, positions <= limit)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_biased_matmul_over_a_gate_whose_padding_is_not_zero(dtype):
    """A squeeze-excite style gate (sigmoid(0) = 0.5 fills the padding of its 100 columns)
    before a linear layer with a bias: the matmul contracts exactly over the 100 columns as a
    batch matmul and adds the bias after it. Reading the gate's padding would add 0.5 times
    the weight's padding rows, which are zero; so the bug the test guards against is the
    refusal and a bias lost on the way, both caught by comparing with eager."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Sigmoid(), torch.nn.Linear(100, 48)).to(dtype)
    x = torch.randn(64, 100).to(dtype)
    _check(model, x)
