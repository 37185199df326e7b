"""Hugging Face models with a symbolic sequence length (`torch.export.Dim`, design note 73):
compiled once at the bound, run at the lower bound, between and at the bound, each against
eager under `spyrec.verdict.check_outputs`. Tiny configs, random weights, token ids in and
logits out. The decoders go through transformers' mask building (position ids, the
packed-sequence detection, a causal mask of the sizes alone), which the symbolic check
proves safe under padding; an encoder given input_ids alone attends every key, and the key
mask the host makes per call hides the padded ones (design note 81)."""

from __future__ import annotations

import os

import pytest
import test_hf_models
import torch
from conftest import assert_close, one

import spyrec

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


def _export(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.export.ExportedProgram]:
    wrapped = test_hf_models.TokenLogits(model.eval())
    ids = torch.randint(0, 256, (1, 16), generator=torch.Generator().manual_seed(0))
    return wrapped, torch.export.export(wrapped, (ids,), dynamic_shapes=({1: SEQ},))


@pytest.mark.parametrize("name", [
    "llama", *(pytest.param(n, marks=pytest.mark.heavy) for n in ("qwen3", "gemma", "gpt2"))])
def test_decoder_runs_every_sequence_length(name):
    torch.manual_seed(0)
    model, ep = _export(MODELS[name]())
    exe = spyrec.compile(ep, cache=False)
    assert exe.binary.symbols == {"input_ids.dim1": (2, 16)}
    gen = torch.Generator().manual_seed(1)
    for size in SIZES:
        ids = torch.randint(0, 256, (1, size), generator=gen)
        with torch.no_grad():
            assert_close(exe, model(ids), one(exe(ids)))


ENCODER = {"vocab_size": 256, "max_position_embeddings": 64}
ENCODERS = {
    "distilbert": lambda: transformers.DistilBertForMaskedLM(transformers.DistilBertConfig(
        **ENCODER, dim=128, n_layers=1, n_heads=2, hidden_dim=256)),
    "bert": lambda: transformers.BertForMaskedLM(transformers.BertConfig(
        **ENCODER, hidden_size=128, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=256)),
    "bart-encoder": lambda: transformers.BartModel(transformers.BartConfig(
        **ENCODER, d_model=128, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=256, decoder_ffn_dim=256)).get_encoder(),
    "t5-encoder": lambda: transformers.T5EncoderModel(transformers.T5Config(
        vocab_size=256, d_model=128, d_kv=64, d_ff=256, num_layers=1, num_heads=2)),
}


class _Encoded(torch.nn.Module):
    """An encoder's logits, or its last hidden state when it has no head."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids=ids)
        return out.logits if hasattr(out, "logits") else out.last_hidden_state


def _encoder(name: str) -> tuple[torch.nn.Module, spyrec.Executable]:
    torch.manual_seed(0)
    model = _Encoded(ENCODERS[name]().eval())
    ids = torch.randint(0, 256, (1, 16), generator=torch.Generator().manual_seed(0))
    ep = torch.export.export(model, (ids,), dynamic_shapes=({1: SEQ},))
    return model, spyrec.compile(ep, cache=False)


@pytest.mark.parametrize("name", [
    "distilbert", *(pytest.param(n, marks=pytest.mark.heavy)
                    for n in ("bert", "bart-encoder", "t5-encoder"))])
def test_an_encoder_given_input_ids_alone_runs_every_sequence_length(name):
    """Bidirectional attention, SDPA without a mask (DistilBERT, BART), with an all-visible
    boolean one (BERT) or an additive position bias (T5): the caller passes the ids, the
    host makes the key mask."""
    model, exe = _encoder(name)
    assert [b.made for b in exe.binary.inputs] == ["", "ids.dim1"]
    gen = torch.Generator().manual_seed(1)
    for size in SIZES:
        ids = torch.randint(0, 256, (1, size), generator=gen)
        with torch.no_grad():
            assert_close(exe, model(ids), one(exe(ids)))


@pytest.mark.heavy
def test_an_encoder_without_the_key_mask_fails_the_check(monkeypatch):
    """The injected bug: DistilBERT compiled without the key mask matches eager at the bound
    and fails the check at 7 (real tokens attend the padded ones)."""
    from spyrec.frontend import symbolic
    from spyrec.verdict import check_outputs

    monkeypatch.setattr(symbolic, "add_key_masks", lambda module, keyed: [])
    model, exe = _encoder("distilbert")
    gen = torch.Generator().manual_seed(1)
    full, short = (torch.randint(0, 256, (1, n), generator=gen) for n in (16, 7))
    with torch.no_grad():
        assert_close(exe, model(full), one(exe(full)))
        assert not check_outputs(model(short), one(exe(short)), exe).ok


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
