"""Hugging Face models with a symbolic sequence length (`torch.export.Dim`, design note 73):
compiled once at the bound, run at the lower bound, between and at the bound, each against
eager under `spyrec.verdict.check_outputs`. Tiny configs, random weights, token ids in and
logits out. The decoders go through transformers' mask building (position ids, the
packed-sequence detection, a causal mask of the sizes alone), which the symbolic check
proves safe under padding; an encoder's bidirectional attention is refused by name."""

from __future__ import annotations

import os

import pytest
import test_hf_models
import torch
from conftest import assert_close, one

import spyrec
from spyrec.diagnostics import CompileError

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")

SEQ = torch.export.Dim("seq", min=2, max=16)
SIZES = (2, 7, 16)  # the lower bound, a size between, the bound
TINY = {**test_hf_models.TINY, "num_hidden_layers": 1}  # one layer of test_hf_models' config

MODELS = {
    "llama": lambda: transformers.LlamaForCausalLM(transformers.LlamaConfig(**TINY)),
    "qwen3": lambda: transformers.Qwen3ForCausalLM(transformers.Qwen3Config(**TINY)),
    "gemma": lambda: transformers.GemmaForCausalLM(transformers.GemmaConfig(**TINY)),
    "gpt2": lambda: transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=256, n_embd=128, n_layer=1, n_head=2, n_positions=64, use_cache=False)),
}


class _Logits(torch.nn.Module):
    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids).logits


def _export(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.export.ExportedProgram]:
    wrapped = _Logits(model.eval())
    ids = torch.randint(0, 256, (1, 16), generator=torch.Generator().manual_seed(0))
    return wrapped, torch.export.export(wrapped, (ids,), dynamic_shapes=({1: SEQ},))


@pytest.mark.parametrize("name", [
    "llama", *(pytest.param(n, marks=pytest.mark.heavy) for n in ("qwen3", "gemma", "gpt2"))])
def test_decoder_runs_every_sequence_length(name):
    torch.manual_seed(0)
    model, ep = _export(MODELS[name]())
    exe = spyrec.compile(ep, cache=False)
    assert exe.binary.symbols == {"ids.dim1": (2, 16)}
    gen = torch.Generator().manual_seed(1)
    for size in SIZES:
        ids = torch.randint(0, 256, (1, size), generator=gen)
        with torch.no_grad():
            assert_close(exe, model(ids), one(exe(ids)))


def test_an_encoder_is_refused_by_name():
    """BERT's attention is bidirectional: a real token would attend the padded ones."""
    torch.manual_seed(0)
    _, ep = _export(transformers.BertForMaskedLM(transformers.BertConfig(
        vocab_size=256, hidden_size=128, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=256, max_position_embeddings=64)))
    with pytest.raises(CompileError, match=r"node scaled_dot_product_attention .*its key length "
                                           r"is symbolic and its mask lets query row 0 see key "
                                           r"column 2.*pass the attention mask as an input"):
        spyrec.compile(ep, cache=False)


class _Masked(torch.nn.Module):
    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, attention_mask=mask).logits


@pytest.mark.heavy
def test_an_encoder_with_its_attention_mask_runs_every_sequence_length():
    """DistilBERT given the attention_mask sized by the same symbol: the host's zero padding
    of the mask hides the padded keys (a batch of two, the second row's last keys masked)."""
    torch.manual_seed(0)
    model = _Masked(transformers.DistilBertForMaskedLM(transformers.DistilBertConfig(
        vocab_size=256, dim=128, n_layers=1, n_heads=2, hidden_dim=256,
        max_position_embeddings=64)).eval())
    ids = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(0))
    ep = torch.export.export(model, (ids, torch.ones_like(ids)),
                             dynamic_shapes=({1: SEQ}, {1: SEQ}))
    exe = spyrec.compile(ep, cache=False)
    for size in SIZES:
        mask = torch.ones(2, size, dtype=torch.long)
        mask[1, size - 1:] = 0
        with torch.no_grad():
            assert_close(exe, model(ids[:, :size], mask), one(exe(ids[:, :size], mask)))
