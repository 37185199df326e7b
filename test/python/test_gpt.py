"""A GPT-style decoder written in torch.nn (token and position embeddings looked up on the
device, pre-norm blocks with a fused q/k/v projection split along the hidden dim, causal
SDPA, tanh-GELU MLP, a final LayerNorm and an LM head tied to the token embedding) against
eager."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from conftest import assert_close

import spyrec


class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, d))


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(d), CausalSelfAttention(d, heads)
        self.ln2, self.fc, self.out = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab: int = 512, context: int = 64, d: int = 128, heads: int = 2,
                 layers: int = 2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(context, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_gpt_decoder_matches_eager(dtype):
    torch.manual_seed(0)
    model = GPT().to(dtype).eval()
    idx = torch.randint(0, 512, (2, 32), generator=torch.Generator().manual_seed(1))
    exe = spyrec.compile(torch.export.export(model, (idx,)))
    with torch.no_grad():
        expected = model(idx)
    assert_close(exe, expected, exe(idx))
    # the tied table is stored once per orientation: rows for the gather, transposed for
    # the LM head's matmul
    tables = sorted(b.name for b, _ in exe.binary.weights if b.name.startswith("wte."))
    assert tables == ["wte.weight", "wte.weight^T"], tables
