"""Hugging Face models end to end: tiny configs, random weights, against PyTorch eager.

Each model has 2 layers, hidden size 64, 4 query heads and 2 key/value heads, a vocabulary
of 256 and 16 tokens, `use_cache=False`, and is wrapped to return logits. The head dim is 64
(set explicitly; the config default, 64 / 4 = 16, splits a stick into heads through device
transposes and is tested in `test_restickify.py`).

Most tests export with `inputs_embeds` (the lookup on the host) to test the layers; the
`input_ids` tests export Llama, GPT-2 (token + position embeddings) and BERT (word + position
+ token-type embeddings) with token ids, so the token embedding is a `dma.gather` on the
device (the position and token-type lookups depend on no input and are folded). What the
device runs:
RMS norms, q/k/v/o projections, rotary embeddings (the cos/sin tables folded into constants
by the frontend, the half rotation as a column-map matmul), causal grouped-query attention
with the folded mask, SwiGLU, residual adds and the LM head. Compared by
`spyrec.verdict.check_outputs` (docs/numerics.md). Models run with SDPA attention, and
Llama, BERT and GPT-2 also with eager attention (`bmm` by a transposed key, scale, mask add,
softmax, `bmm`), which spyre-legalize recognises as the same `spyre.attention`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest
import torch
from conftest import assert_close

import spyrec
from spyrec.runtime.emulator import InputError
from spyrec.runtime.memory import DeviceFault

if TYPE_CHECKING:
    from transformers import PreTrainedModel

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")

TINY = {"vocab_size": 256, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
        "max_position_embeddings": 64, "use_cache": False}

MODELS = {
    "llama": lambda: transformers.LlamaForCausalLM(transformers.LlamaConfig(**TINY)),
    "qwen2": lambda: transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**TINY)),
    # Granite's multipliers away from 1 so its extra scalings are exercised
    "granite": lambda: transformers.GraniteForCausalLM(transformers.GraniteConfig(
        **TINY, embedding_multiplier=2.0, residual_multiplier=0.5,
        attention_multiplier=0.2, logits_scaling=4.0)),
}


# BERT and GPT-2 configs have no head_dim: hidden 128 over 2 heads gives 64
OTHER = {
    "bert": lambda: transformers.BertModel(transformers.BertConfig(
        vocab_size=256, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=256, max_position_embeddings=64)),
    "gpt2": lambda: transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=256, n_embd=128, n_layer=2, n_head=2, n_positions=64, use_cache=False,
        bos_token_id=0, eos_token_id=0)),
}


class Logits(torch.nn.Module):
    """The causal LM as embeddings -> logits."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, inputs_embeds: torch.Tensor) -> torch.Tensor:
        return self.model(inputs_embeds=inputs_embeds).logits


class LastHidden(torch.nn.Module):
    """An encoder as embeddings -> last hidden state."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, inputs_embeds: torch.Tensor) -> torch.Tensor:
        return self.model(inputs_embeds=inputs_embeds).last_hidden_state


class TokenLogits(torch.nn.Module):
    """The causal LM as token ids -> logits (the embedding lookup in the graph)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids).logits


def _build(name: str, dtype: torch.dtype, attention: str = "sdpa") -> PreTrainedModel:
    torch.manual_seed(0)
    model = {**MODELS, **OTHER}[name]()
    model.config._attn_implementation = attention
    return model.to(dtype).eval()


@pytest.mark.parametrize("name,dtype", [
    ("llama", torch.float32), ("qwen2", torch.float32), ("granite", torch.float32),
    ("llama", torch.float16),
], ids=["llama-fp32", "qwen2-fp32", "granite-fp32", "llama-fp16"])
def test_decoder_matches_eager(name, dtype):
    exe = _compile_and_compare(_build(name, dtype), Logits)
    # the causal mask and the rotary tables are folded constants, one of each per program
    folded = sorted(b.name for b, _ in exe.binary.weights if b.name.endswith(".folded"))
    assert len(folded) == 3, folded  # the mask, cos and sin


@pytest.mark.parametrize("name,wrapper", [("bert", LastHidden), ("gpt2", Logits)])
def test_bert_and_gpt2_match_eager(name, wrapper):
    """BERT (LayerNorm, GELU, unmasked attention; its position and token-type embeddings
    are folded) and GPT-2 (fused q/k/v split along the innermost dim, tanh GELU with a
    cube, causal mask folded), both with SDPA attention."""
    exe = _compile_and_compare(_build(name, torch.float32), wrapper)
    assert any(b.name.endswith(".folded") for b, _ in exe.binary.weights)


@pytest.mark.parametrize("name,wrapper", [
    ("llama", Logits), ("bert", LastHidden), ("gpt2", Logits),
], ids=["llama-fp32", "bert-fp32", "gpt2-fp32"])
def test_eager_attention_matches_eager(name, wrapper):
    """`attn_implementation="eager"`: each layer's bmm / scale / mask add / softmax / bmm
    chain becomes one spyre.attention (Llama's through repeat_kv's grouped-query heads),
    and the folded [2, 1, 16, 16] float mask (-3.4e38 where masked) is stored once as the
    [1, 1, 16, 16] additive mask attention takes, clamped to -30000 (BERT's is all 0)."""
    exe = _compile_and_compare(_build(name, torch.float32, "eager"), wrapper)
    masks = [data for b, data in exe.binary.weights if b.name == "where.folded"]
    assert [m.size for m in masks] == [16 * 16] and masks[0].min() >= -30000


def _compile_and_compare(model: PreTrainedModel, wrapper: type[torch.nn.Module]):
    ids = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        embeds = model.get_input_embeddings()(ids)
        wrapped = wrapper(model)
        expected = wrapped(embeds)
    exe = spyrec.compile(torch.export.export(wrapped, (embeds,)))
    assert_close(exe, expected, exe(embeds))
    return exe


class TokenHidden(torch.nn.Module):
    """An encoder as token ids -> last hidden state."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids).last_hidden_state


def _ids() -> torch.Tensor:
    ids = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(1))
    ids[0, :2] = torch.tensor([0, 255])  # both ends of the vocabulary
    return ids


@pytest.mark.parametrize("name,dtype,wrapper", [
    ("llama", torch.float32, TokenLogits), ("llama", torch.float16, TokenLogits),
    ("gpt2", torch.float32, TokenLogits), ("bert", torch.float32, TokenHidden),
], ids=["llama-fp32", "llama-fp16", "gpt2-fp32", "bert-fp32"])
def test_token_ids_match_eager(name, dtype, wrapper):
    """int64 `input_ids`: the token embedding is the program's first kernel, a dma.gather
    of table rows by id; the position (GPT-2, BERT) and token-type (BERT) lookups are folded.
    The result matches eager within the program's tolerance."""
    wrapped = wrapper(_build(name, dtype))
    ids = _ids()
    with torch.no_grad():
        expected = wrapped(ids).float()
    exe = spyrec.compile(torch.export.export(wrapped, (ids,)))
    assert exe.binary.inputs[0].layout.host_dtype == "int64"
    gathers = [k for k in exe.binary.kernels
               if any(i.op == "dma.gather" for p in k.programs.values() for i in p)]
    assert [k.provenance for k in gathers] == [["embedding"]]
    assert_close(exe, expected, exe(ids))


def test_an_out_of_range_token_id_is_caught():
    """An id >= vocab_size is a device fault naming the gather and the id, never a row of
    other data; an int64 id beyond int32 is refused on the way in."""
    wrapped = TokenLogits(_build("llama", torch.float32))
    exe = spyrec.compile(torch.export.export(wrapped, (_ids(),)))
    bad = _ids()
    bad[1, 7] = 256
    with pytest.raises(DeviceFault, match=r"dma.gather row \d+: index 256 is outside the "
                                        r"table's rows \[0, 256\).*\(from embedding\)"):
        exe(bad)
    bad[1, 7] = 2**32
    with pytest.raises(InputError, match=r"input 'input_ids': int64 value 4294967296"):
        exe(bad)


class PositionLogits(torch.nn.Module):
    """The causal LM with run-time `position_ids` and no attention mask."""

    def __init__(self, model: torch.nn.Module, tokens: bool):
        super().__init__()
        self.model = model
        self.tokens = tokens

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        if self.tokens:
            return self.model(input_ids=x, position_ids=position_ids).logits
        return self.model(inputs_embeds=x, position_ids=position_ids).logits


# contiguous positions, the same offset by 40 (the rotary angles of later tokens), and two
# sequences packed in one row (positions restart at token 6: a block-diagonal causal mask)
POSITIONS = [torch.arange(16)[None], torch.arange(16)[None] + 40,
             torch.cat([torch.arange(6), torch.arange(10)])[None]]


@pytest.mark.parametrize("dtype,tokens", [
    (torch.float32, False), (torch.float16, False), (torch.float32, True),
], ids=["embeds-fp32", "embeds-fp16", "ids-fp32"])
def test_llama_with_position_ids_matches_eager(dtype, tokens):
    """`position_ids` at run time, no attention mask: transformers computes the rotary
    angles from the positions (cos / sin on the device) and, to detect packed sequences,
    the mask `pos[kv] <= pos[q] & seq[q] == seq[kv]` with seq = cumsum(diff(pos) != 1),
    each position read as a column and as a row by `aten.index` with folded aranges. The
    integer ops run in f32 on the device (`_select_via_f32`), the mask is a predicate that
    SDPA takes as an additive mask made once for both layers. One program serves every
    position pattern, packed ones included."""
    torch.manual_seed(0)
    model = _build("llama", dtype)
    wrapped = PositionLogits(model, tokens)
    x = _ids()[:1] if tokens else torch.randn(1, 16, 64).to(dtype)
    exe = spyrec.compile(torch.export.export(wrapped, (x, POSITIONS[0])))
    outputs = []
    for positions in POSITIONS:
        with torch.no_grad():
            expected = wrapped(x, positions).float()
        outputs.append(expected)
        assert_close(exe, expected, exe(x, positions))
    # rotary attention sees relative positions only, so an offset changes no logit (up
    # to rounding), but packing does: the second sequence attends to itself alone
    assert (outputs[0] - outputs[2]).abs().max() > 1e-3
