"""The models of the model-coverage sweep (`benchmarks/model_sweep.py`): what it enumerates
and how it builds each one tiny, with random weights and example inputs.

Two sources:

- Hugging Face transformers: every model type of the auto-model mappings (causal LM, masked
  LM, the encoders of encoder-decoder models, sequence classification, image classification
  and backbones, audio classification and CTC), each once, in the first family it appears
  in (that order). Each is built from its default config shrunk by `shrink_config` (2
  layers, hidden 128, 2 heads of dim 64, 1 key/value head, intermediate 256, vocabulary
  320, 64x64 images), with `from_config` (random weights, eval mode, nothing downloaded:
  `HF_HUB_OFFLINE=1`). The shrink keeps the model's kind: the layers kept show every kind
  the per-layer lists name (`kept_layers`), derived sizes stay consistent (`_consistent`:
  MLA, Mamba, expert groups; fields the config class derives are derived again in
  `tiny_config`), a text model gets its composite config's text part; `OVERRIDES` holds what
  an architecture's validator demands beyond that, with the reason per row.
- torch.nn idioms users write by hand (`IDIOMS`): a GPT with a `masked_fill` causal mask,
  LSTM, GRU, MultiheadAttention, TransformerEncoder, a temporal conv net, an EmbeddingBag
  recommender, a U-Net, and ResNet / MobileNet / ConvNeXt / EfficientNet-style conv nets.

`build(case, variant)` returns a `Built`: the module (returning one tensor), its example
inputs, the inputs of the run (another sequence length for the `dynamic` variant) and the
`dynamic_shapes` to export with. Anything that cannot be built (a config needing files, an
optional dependency, a shrink the architecture rejects, inputs the model refuses in eager)
raises; the sweep records that as the `build` status, never as the compiler's failure.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SEQ = 16  # tokens of the example inputs
DYNAMIC_RUN_SEQ = 11  # the sequence length the `dynamic` variant runs at (exported at SEQ)
PADDED = 5  # trailing positions of the second row masked out in the `mask` variant
IMAGE = 64
AUDIO_SAMPLES = 1600

# family -> the transformers auto-model mapping(s) it enumerates, in the order families claim
# a model type
HF_FAMILIES: dict[str, tuple[str, ...]] = {
    "causal-lm": ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",),
    "masked-lm": ("MODEL_FOR_MASKED_LM_MAPPING_NAMES",),
    "encoder": ("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",),
    "seq-cls": ("MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",),
    "vision": ("MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES", "MODEL_FOR_BACKBONE_MAPPING_NAMES"),
    "audio": ("MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES", "MODEL_FOR_CTC_MAPPING_NAMES"),
}
TEXT_FAMILIES = ("causal-lm", "masked-lm", "encoder", "seq-cls")

# the variants every text model runs (an LLM/encoder as users run it), and the others
TEXT_VARIANTS = ("fp32", "fp16", "mask", "dynamic")
PLAIN_VARIANTS = ("fp32", "fp16")


@dataclass(frozen=True)
class Case:
    """One architecture of the sweep: `name` is `hf:<model_type>` or `nn:<idiom>`."""

    name: str
    family: str
    variants: tuple[str, ...]
    hf_class: str = ""  # the transformers class (HF cases)


@dataclass
class Built:
    """A model ready to export: `forward(*example)` returns one tensor."""

    module: nn.Module
    example: tuple[torch.Tensor, ...]
    run: tuple[torch.Tensor, ...]
    dynamic_shapes: tuple[Any, ...] | None = None
    notes: list[str] = field(default_factory=list)


# ---- enumeration ------------------------------------------------------------------------

def hf_cases() -> list[Case]:
    """Every model type of the families' auto-model mappings, once, sorted per family."""
    from transformers.models.auto import modeling_auto

    seen: set[str] = set()
    cases = []
    for family, mappings in HF_FAMILIES.items():
        classes: dict[str, str] = {}
        for mapping in mappings:
            for model_type, cls in getattr(modeling_auto, mapping).items():
                if model_type not in seen and isinstance(cls, str):
                    classes.setdefault(model_type, cls)
        seen.update(classes)
        variants = TEXT_VARIANTS if family in TEXT_FAMILIES else PLAIN_VARIANTS
        cases += [Case(f"hf:{t}", family, variants, c) for t, c in sorted(classes.items())]
    return cases


def all_cases() -> list[Case]:
    """The torch.nn idioms, then every Hugging Face architecture."""
    return [*(Case(f"nn:{name}", family, variants) for name, (family, variants, _)
              in IDIOMS.items()), *hf_cases()]


# ---- Hugging Face: shrinking a default config -------------------------------------------

LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
              "decoder_layers", "num_encoder_layers", "num_decoder_layers")
SIZES: dict[str, int] = {
    # RecurrentGemma's `lru_width` is its hidden size in every released config (2560, 4096)
    **dict.fromkeys(("hidden_size", "d_model", "n_embd", "dim", "embed_dim", "embedding_size",
                     "word_embed_proj_dim", "hidden_size_global", "embedding_dim", "lru_width"),
                    128),
    **dict.fromkeys(("num_attention_heads", "n_head", "n_heads", "encoder_attention_heads",
                     "decoder_attention_heads"), 2),
    **dict.fromkeys(("num_key_value_heads", "num_kv_heads", "multi_query_group_num"), 1),
    **dict.fromkeys(("head_dim", "attention_head_size", "kv_channels", "d_kv", "v_head_dim"), 64),
    **dict.fromkeys(("intermediate_size", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "d_ff",
                     "n_inner", "moe_intermediate_size", "shared_expert_intermediate_size",
                     "intermediate_size_mlp"), 256),
    **dict.fromkeys(("max_position_embeddings", "n_positions", "max_seq_len",
                     "max_sequence_length"), 128),
    **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts"), 4),
    **dict.fromkeys(("num_experts_per_tok", "num_experts_per_token"), 2),
    **dict.fromkeys(("vocab_size", "vocab_size_per_layer_input"), 320),
    "image_size": IMAGE,
    "window_size": 4,  # Swin-style windows within a 64x64 image's stages
    "max_source_positions": 32,
    "num_mel_bins": 32,
}
# counts the shrink lowers but never raises: one key/value head stays one, one expert (a
# dense MLP) does not become a mixture
NEVER_MORE = ("num_key_value_heads", "num_experts", "num_local_experts", "n_routed_experts",
              "num_experts_per_tok", "num_experts_per_token")
TOKEN_ID_KEYS = ("pad_token_id", "bos_token_id", "eos_token_id", "sep_token_id",
                 "cls_token_id", "mask_token_id", "decoder_start_token_id", "unk_token_id",
                 "blank_token_id")
LAYERS = 2


# layer counts that split the layers into consecutive kinds (the first k dense, the rest MoE;
# input, recurrent and output blocks): kept consistent with the layers the tiny model keeps
SEGMENT_KEYS = (("first_k_dense_replace",), ("num_dense_layers",),
                ("n_input_layers", "n_recurrent_layers", "n_output_layers"))
MLA_SIZES = {"kv_lora_rank": 64, "q_lora_rank": 64, "qk_rope_head_dim": 32,
             "qk_nope_head_dim": 32}
# model type -> (why the general shrink is not enough, the config values it needs)
OVERRIDES: dict[str, tuple[str, dict[str, Any]]] = {
    "diffllama": (("the differential attention splits the value heads in two: an even number "
                  "of key/value heads"), {"num_key_value_heads": 2}),
    "gemma3n_text": (("its last layers reuse the key/value of an earlier layer of their kind: "
                     "one sliding and one full layer that produce, a third that reuses"),
                     {"num_hidden_layers": 3, "num_kv_shared_layers": 1, "layer_types": [
                         "sliding_attention", "full_attention", "sliding_attention"]}),
    "gemma3n": ("as gemma3n_text", {}),
    "zamba": (("its shared transformer's weight tying expects no hybrid layer before the "
              "third: the first two layers, mamba only (the hybrid layer is not kept: a gap)"),
              {"layers_block_type": ["linear_attention", "linear_attention"]}),
    "esmc": ("its validator refuses grouped-query attention", {"num_key_value_heads": 2}),
    "zaya": ("its validator supports one expert per token only", {"num_experts_per_tok": 1}),
    "reformer": (("its LM head requires a decoder; its axial position embeddings split the "
                 "hidden size and factor the 128 positions"), {
                     "is_decoder": True, "axial_pos_embds_dim": [64, 64],
                     "axial_pos_shape": [8, 16]}),
    "lfm2_moe": (("its default config leaves the layer kinds unset (transformers' own default "
                 "build fails): a short-convolution layer, then an attention one; the first "
                 "dense, the second a mixture of experts"), {
                     "layer_types": ["conv", "full_attention"], "num_dense_layers": 1}),
    "dbrx": (("its attention reads a rope_theta its attention sub-config no longer has "
             "and clamps by a clip_qkv its default leaves None (transformers' own default build "
             "fails): the default rope base, a clip of 8; its experts' width, the shrink's"),
             {"attn_config": {"rope_theta": 10000.0, "clip_qkv": 8.0},
              "ffn_config": {"ffn_hidden_size": 256}}),
    "qwen4_exp": ("as qwen4_exp_text, in its text sub-config", {"text_config": {
        "indexer_n_heads": 1, "indexer_kv_heads": 1, "indexer_head_dim": 64, "indexer_budget": 8,
        "indexer_compress_ratio": 4}}),
    "esm": (("its default config leaves the vocabulary unset (transformers' own default build "
            "fails): ESM-2's 33 tokens, padding 1, mask 32"),
            {"vocab_size": 33, "pad_token_id": 1, "mask_token_id": 32}),
    "cohere_compass_text": (("its default config has no rope parameters for its full-attention "
                            "layers (transformers' own default build fails): the default rope"),
                            {"rope_parameters": {"full_attention": {
                                "rope_type": "default", "rope_theta": 10000.0}}}),
    "shieldgemma2": (("it reads the logits of its yes / no tokens at indices its config "
                     "does not hold (10784 and 3771 by default): two in the vocabulary"),
                     {"yes_token_index": 318, "no_token_index": 319}),
    "xmod": ("its adapters need a default language (its config's only one)",
             {"default_language": "en_XX"}),
    "qwen4_exp_text": (("its default config leaves the sparse-attention indexer's sizes unset, "
                       "which the model divides (transformers' own default build fails): one "
                       "indexer head of 64 over blocks of 4 tokens, a budget of 8"), {
                           "indexer_n_heads": 1, "indexer_kv_heads": 1, "indexer_head_dim": 64,
                           "indexer_budget": 8, "indexer_compress_ratio": 4}),
    "dory": (("its config lists each layer as an attention and an mlp block and splits the "
             "layers into input, recurrent and output ones: three layers, one of each, the "
             "middle one full attention"), {
                 "num_hidden_layers": 6, "n_input_layers": 2, "n_recurrent_layers": 2,
                 "n_output_layers": 2, "layer_types": [
                     "sliding_attention", "mlp", "full_attention", "mlp", "sliding_attention",
                     "mlp"]}),
}


def _layer_kinds(config: dict[str, Any], old: int) -> list[list[tuple[str, str]]]:
    """Per original layer, the (key, value) pairs that say what kind of layer it is: its entry
    in every per-layer list and in `per_layer_config`, and its segment of SEGMENT_KEYS."""
    kinds: list[list[tuple[str, str]]] = [[] for _ in range(old)]
    for key, value in config.items():
        if isinstance(value, list) and len(value) == old:
            for i, entry in enumerate(value):
                kinds[i].append((key, repr(entry)))
    per_layer = config.get("per_layer_config")
    if isinstance(per_layer, dict):
        for i in range(old):
            kinds[i].append(("per_layer_config", repr(per_layer.get(f"{i:02d}",
                                                                    per_layer.get(str(i))))))
    for keys in SEGMENT_KEYS:
        bounds = [config[k] for k in keys if isinstance(config.get(k), int)]
        if len(bounds) == len(keys):
            ends = [sum(bounds[:j + 1]) for j in range(len(bounds))]
            for i in range(old):
                kinds[i].append((keys[0], str(sum(i >= e for e in ends))))
    return kinds


def kept_layers(config: dict[str, Any], old: int, new: int) -> list[int]:
    """The original layers the tiny model keeps (sorted): greedily the one showing the most
    (per-layer key, value) kinds not shown yet, the first such layer on a tie, so that a
    sliding/full, linear/full, dense/MoE or producing/reusing mix survives the shrink."""
    kinds = _layer_kinds(config, old)
    shown: set[tuple[str, str]] = set()
    kept: list[int] = []
    for _ in range(min(new, old)):
        best = max((i for i in range(old) if i not in kept),
                   key=lambda i: (len(set(kinds[i]) - shown), -i))
        kept.append(best)
        shown |= set(kinds[best])
    return sorted(kept)


def _per_layer(config: dict[str, Any], out: dict[str, Any], old: int, kept: list[int]) -> None:
    """Per-layer lists, `per_layer_config` and SEGMENT_KEYS follow the kept layers."""
    for key, value in config.items():
        if isinstance(value, list) and len(value) == old:
            out[key] = [value[i] for i in kept]
    per_layer = config.get("per_layer_config")
    if isinstance(per_layer, dict):
        out["per_layer_config"] = {
            f"{new:02d}": shrink_config(per_layer[key]) for new, i in enumerate(kept)
            for key in (f"{i:02d}", str(i)) if isinstance(per_layer.get(key), dict)}
    for keys in SEGMENT_KEYS:
        bounds = [config[k] for k in keys if isinstance(config.get(k), int)]
        if len(bounds) == len(keys):
            starts = [sum(bounds[:j]) for j in range(len(bounds))]
            for key, first, size in zip(keys, starts, bounds):
                out[key] = sum(first <= i < first + size for i in kept)


def _consistent(config: dict[str, Any], out: dict[str, Any]) -> None:
    """Derived sizes made to agree with the shrunk ones: a `None` head dim or key/value head
    count (meaning hidden / heads, and as many as the heads) made explicit, as an MoE's expert
    counts its default leaves unset; multi-head latent
    attention's ranks and rope/nope head dims (its keys and values expanded to every head);
    Mamba's heads x head dim = expand x hidden, with groups dividing the heads."""
    heads = out.get("num_attention_heads")
    for key, value in out.items():  # key/value heads per layer: their ratio to the most kept
        if key.endswith("key_value_heads_per_layer") and isinstance(heads, int) and \
                isinstance(value, list) and value and all(isinstance(v, int) for v in value):
            out[key] = [max(heads * v // max(value), 1) for v in value]
    if "head_dim" in out and out["head_dim"] is None and isinstance(heads, int):
        out["head_dim"] = SIZES["head_dim"]
    if "num_key_value_heads" in out and out["num_key_value_heads"] is None and heads:
        out["num_key_value_heads"] = heads
    if isinstance(config.get("moe_intermediate_size"), int):  # an MoE: counts it leaves unset
        for key in ("n_routed_experts", "num_experts_per_tok", "n_shared_experts"):
            if key in out and out[key] is None:
                out[key] = SIZES.get(key, 1)
    if "kv_lora_rank" in config:  # MLA
        out.update({k: v for k, v in MLA_SIZES.items() if isinstance(config.get(k), int)})
        if isinstance(config.get("qk_head_dim"), int):
            out["qk_head_dim"] = out["qk_rope_head_dim"] + out.get("qk_nope_head_dim", 0)
        if isinstance(config.get("head_dim"), int) and \
                config.get("head_dim") == config.get("qk_rope_head_dim"):
            out["head_dim"] = out["qk_rope_head_dim"]
        if isinstance(heads, int) and "num_key_value_heads" in out:
            out["num_key_value_heads"] = heads
    for group in ("n_group", "num_expert_group"):  # expert groups: 2 halves, 1 of them picked
        if isinstance(out.get(group), int) and out[group] > 1:
            out[group], out["topk_group"] = 2, 1
    for n_heads, head_dim, expand, groups in (
            ("mamba_n_heads", "mamba_d_head", "mamba_expand", "mamba_n_groups"),
            ("num_heads", "head_dim", "expand", "n_groups"),
            ("n_mamba_heads", "mamba_headdim", "mamba_expand", "mamba_ngroups")):
        if all(isinstance(out.get(k), int) for k in (n_heads, expand, "hidden_size")) and \
                isinstance(config.get(head_dim), int):
            out[head_dim] = SIZES["head_dim"]
            out[n_heads] = out[expand] * out["hidden_size"] // out[head_dim]
            if isinstance(out.get(groups), int):
                out[groups] = min(out[groups], out[n_heads] // 2) or 1
            if isinstance(out.get("mamba_d_ssm"), int):  # the SSM's width, when given
                out["mamba_d_ssm"] = out[n_heads] * out[head_dim]


WIDEST_STAGE = 512  # a staged net's widest stage after the shrink (`_staged`)


def _is_width(key: str, value: Any) -> bool:
    """A staged net's channel width(s): a list of them, or a stem's `*_out_channels`."""
    if key in ("hidden_sizes", "embed_dims"):
        return isinstance(value, list)
    if not key.endswith("_channels") or "num_channels" in key:  # the input's are kept
        return False
    values = value if isinstance(value, list) else [value]
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def _widths(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _staged(config: dict[str, Any], out: dict[str, Any]) -> None:
    """A staged net (`depths`, one block per stage after the shrink) kept consistent: its
    channel widths (`hidden_sizes`, `embed_dims`, the `*_channels` lists and ints but the
    input's, the stem's `embedding_size`) and its norm's `num_groups`, when a group count, a
    per-stage head count or a channel list depends on them, are divided by one power of two
    f, the least that brings the widest stage to WIDEST_STAGE (replacing the per-stage cap of
    `shrink_config`), so that every group count, head count
    and equality between widths that held still holds (a width f does not divide, as the
    stem's 3 input channels, is kept); per-stage lists of per-block entries (a kernel size and
    a stride per block) keep their first blocks; a Swin window divides the last stage's
    patch grid (the image's grid halves per stage)."""
    widths = [v for k, vs in config.items() if _is_width(k, vs) for v in _widths(vs)
              if isinstance(v, int)]
    # what depends on the widths: group counts, per-stage head counts, channel lists beside
    # `hidden_sizes` (otherwise each stage's width is capped on its own, in `shrink_config`)
    dependent = isinstance(config.get("num_groups"), int) or isinstance(
        config.get("num_attention_heads"), list) or any(
            _is_width(k, v) and k.endswith("_channels") for k, v in config.items())
    f = 1
    while dependent and widths and max(widths) // f > WIDEST_STAGE and all(
            v % (2 * f) == 0 or v < 8 for v in widths):
        f *= 2
    if dependent:
        for key, value in config.items():
            if _is_width(key, value):
                new = [v // f if isinstance(v, int) and v % f == 0 else v for v in _widths(value)]
                out[key] = new if isinstance(value, list) else new[0]
        for key in ("embedding_size", "num_groups"):
            value = config.get(key)
            if isinstance(value, int) and value % f == 0:
                out[key] = value // f
    depths = out["depths"]
    for key, value in config.items():
        if isinstance(value, list) and len(value) == len(depths) and all(
                isinstance(v, list) and len(v) == d for v, d in zip(value, config["depths"])):
            out[key] = [v[:d] for v, d in zip(value, depths)]
    window, patch, image = out.get("window_size"), out.get("patch_size"), out.get("image_size")
    if isinstance(window, int) and isinstance(patch, int) and isinstance(image, int) \
            and window > 1:
        last = max(image // patch >> (len(depths) - 1), 1)
        out["window_size"] = max(w for w in range(1, window + 1) if last % w == 0)


def _is_config(key: str, value: Any) -> bool:
    return isinstance(value, dict) and (key.endswith("_config") or "model_type" in value)


def shrink_config(config: dict[str, Any], layers: int = LAYERS) -> dict[str, Any]:
    """A default config's dict made tiny (module docstring); sub-configs (`*_config` dicts
    and any dict with a `model_type`) likewise. The model keeps `layers` of its layers, of
    every kind its per-layer lists name (`kept_layers`); per-stage head counts keep a head
    dim of 64 (hidden 128 doubling per stage), a backbone returns its last stage, token ids
    stay in the vocabulary and derived sizes stay consistent (`_consistent`)."""
    out = dict(config)
    # a staged net (`depths`) counts its stages in `num_layers`: kept, with per-stage lists
    staged = isinstance(config.get("depths"), list)
    old_layers = 0 if staged else max(
        (v for k, v in config.items() if k in LAYER_KEYS and isinstance(v, int)), default=0)
    for key, value in config.items():
        if _is_config(key, value):
            out[key] = shrink_config(value)
        elif key in LAYER_KEYS and isinstance(value, int) and not staged:
            out[key] = min(value, layers)
        elif key in SIZES and isinstance(value, int) and not isinstance(value, bool):
            out[key] = min(value, SIZES[key]) if key in NEVER_MORE else SIZES[key]
        elif key.endswith("key_value_heads_per_layer") and isinstance(value, list) and value:
            pass  # after the layers are kept: `_consistent`
        elif key == "patch_size" and isinstance(value, int) and value > 16:
            out[key] = 16
        elif key == "depths" and isinstance(value, list):
            out[key] = [1] * len(value)
        elif key == "num_heads" and isinstance(value, list):  # per stage, width doubling
            out[key] = [2 * 2 ** i for i in range(len(value))]
        elif key == "out_features" or (key == "out_indices" and "stage_names" in config):
            out[key] = None  # a backbone's stages of the full depth: its last
        elif key == "out_indices" and isinstance(value, (list, tuple)) and old_layers:
            out[key] = [min(old_layers, layers) - 1]  # indices of layers: the last kept
        elif key == "image_size" and isinstance(value, list):
            out[key] = [IMAGE] * len(value)
        elif key in ("hidden_sizes", "embed_dims", "conv_dim") and isinstance(value, list):
            out[key] = [min(int(v), 32 * 2 ** i if key != "conv_dim" else 64)
                        for i, v in enumerate(value)]
    if old_layers > layers:
        _per_layer(config, out, old_layers, kept_layers(config, old_layers, layers))
    if staged:
        _staged(config, out)
    _consistent(config, out)
    vocab = out.get("vocab_size")
    if isinstance(vocab, int):
        for key in TOKEN_ID_KEYS:
            if isinstance(out.get(key), int) and out[key] >= vocab:
                out[key] = vocab - 1
    if "use_cache" in out:
        out["use_cache"] = False
    # a sub-config's width of a sibling sub-config's output (NeMo's head_config
    # `audio_hidden_size`, the audio_config's `hidden_size`) follows the shrunk sibling
    for sub in [v for k, v in out.items() if _is_config(k, v)]:
        for key in [k for k in sub if k.endswith("_hidden_size")]:
            sibling = out.get(key.removesuffix("hidden_size") + "config")
            if isinstance(sibling, dict) and sibling is not sub and isinstance(
                    sibling.get("hidden_size"), int):
                sub[key] = sibling["hidden_size"]
    return out


def _merged(config: dict[str, Any], fixed: dict[str, Any]) -> dict[str, Any]:
    """`config` with the OVERRIDES `fixed`, a sub-config's overrides merged into it."""
    return {**config, **{k: _merged(config[k], v) if isinstance(v, dict) and isinstance(
        config.get(k), dict) else v for k, v in fixed.items()}}


def tiny_config(model_type: str, config_class: type) -> Any:
    """The model type's default config shrunk, as `config_class` (the model class's own: the
    text sub-config of a composite config when the class is its text model), with the
    type's OVERRIDES."""
    from transformers import CONFIG_MAPPING

    _, fixed = OVERRIDES.get(model_type, ("", {}))
    try:
        default = CONFIG_MAPPING[model_type]()
    except Exception:  # a default its own validator refuses: made with the overrides
        if not fixed:
            raise
        default = CONFIG_MAPPING[model_type](**fixed)
    if not isinstance(default, config_class):
        subs = [getattr(default, k) for k in getattr(default, "sub_configs", {})]
        default = next((c for c in subs if isinstance(c, config_class)), default)
    full = default.to_dict()
    shrunk = _merged(shrink_config(full, fixed.get("num_hidden_layers", LAYERS)), fixed)
    # what the config class derives itself (not one of its fields) and the shrink left as it
    # was is derived again from the shrunk fields (kept where the class does not derive it)
    try:
        fields = {f.name for f in dataclasses.fields(default)}
    except TypeError:  # not a dataclass: every key is a field
        fields = set(shrunk)
    derived = {k: v for k, v in shrunk.items() if k not in fields and v == full.get(k)
               and k not in ("model_type", "_name_or_path")}
    config = type(default).from_dict({k: v for k, v in shrunk.items() if k not in derived})
    for key, value in derived.items():
        if not hasattr(config, key):
            setattr(config, key, value)
    return config


def hf_model(case: Case) -> tuple[nn.Module, Any]:
    """The case's transformers model (random weights, eval mode, fp32) and its config."""
    import transformers

    model_type = case.name.removeprefix("hf:")
    cls = getattr(transformers, case.hf_class)
    config = tiny_config(model_type, cls.config_class)
    torch.manual_seed(0)
    if case.family == "encoder":
        base = getattr(transformers, transformers.models.auto.modeling_auto.MODEL_MAPPING_NAMES[
            model_type])
        model = base._from_config(config).get_encoder()
    else:
        model = cls._from_config(config)
    std = getattr(config, "initializer_range", None)
    _randomize_zero_matrices(model, std if isinstance(std, float) and std > 0 else 0.02)
    return model.eval(), config


def _randomize_zero_matrices(model: nn.Module, std: float) -> None:
    """Give every floating parameter of 2 or more dims that the model's init left all zero
    normal(0, `std`) values (seeded). A trained model has no such matrix, and at zero the
    comparison with eager cannot see what it feeds: a matmul by it is exactly zero whatever
    the compiler did, and a zero router (hf:afmoe's init) makes every routing score tie, where
    which experts top-k picks is the sorting algorithm's (CPU eager's nth_element order, the
    compiled program's the stable one: design note 76), not the model's."""
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() >= 2 and param.dtype.is_floating_point and not param.any():
                param.copy_(torch.randn(param.shape, generator=generator) * std)


def default_error(case: Case) -> Exception | None:
    """Why transformers cannot make the case's model from its own default config (built on
    the meta device: no memory, no weights), or None when it can: a tiny build failing the
    same way is transformers' gap, not the shrink's."""
    import transformers
    from transformers import CONFIG_MAPPING

    if not case.name.startswith("hf:"):
        return None
    cls = getattr(transformers, case.hf_class)
    try:
        with torch.device("meta"):
            cls._from_config(CONFIG_MAPPING[case.name.removeprefix("hf:")]())
    except Exception as exc:  # noqa: BLE001 - any failure is the answer
        return exc
    return None


class FirstOutput(nn.Module):
    """A transformers model as a function of tensors returning one tensor: the logits if it
    has them, else the last hidden state (an encoder), else its last feature map."""

    def __init__(self, model: nn.Module, names: tuple[str, ...]):
        super().__init__()
        self.model = model
        self.names = names

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        out = self.model(**dict(zip(self.names, tensors)))
        for key in ("logits", "last_hidden_state", "feature_maps"):
            value = getattr(out, key, None)
            if value is not None:
                return value[-1] if key == "feature_maps" else value
        return out[0]


def _text_inputs(config: Any, variant: str) -> tuple[list[str], tuple[torch.Tensor, ...],
                                                       tuple[torch.Tensor, ...]]:
    vocab = int(getattr(config, "vocab_size", 256) or 256)
    gen = torch.Generator().manual_seed(0)
    batch = 2 if variant == "mask" else 1
    # a multi-codebook decoder (MusicGen) takes one row of ids per codebook of each sample
    codebooks = int(getattr(config, "num_codebooks", 1) or 1)
    ids = torch.randint(3, max(vocab, 4), (batch * codebooks, SEQ), generator=gen)
    if variant == "mask":
        mask = torch.ones(batch, SEQ, dtype=torch.long)
        mask[1, SEQ - PADDED:] = 0
        return ["input_ids", "attention_mask"], (ids, mask), (ids, mask)
    if variant == "dynamic":
        return ["input_ids"], (ids,), (ids[:, :DYNAMIC_RUN_SEQ],)
    return ["input_ids"], (ids,), (ids,)


FEATURE_KEYS = ("feature_projection_input_dim", "input_feat_size", "input_dim", "num_mel_bins",
                "feature_size")  # what a config (or its sub-configs) calls its features' width


def _config_ints(config: Any, keys: tuple[str, ...]) -> list[int]:
    """The values of `keys` in the config and its sub-configs (depth first), in key order."""
    found: list[int] = []
    todo = [config.to_dict() if hasattr(config, "to_dict") else dict(vars(config))]
    while todo:
        tree = todo.pop(0)
        found += [tree[k] for k in keys if isinstance(tree.get(k), int) and tree[k] > 0]
        todo += [v for k, v in tree.items() if _is_config(k, v)]
    return found


def _input_name(model: nn.Module) -> str:
    """The model's main input: its `main_input_name` when its forward takes it, else the
    forward's first argument (an audio encoder inside a speech LM takes `hidden_states`)."""
    name = getattr(model, "main_input_name", "pixel_values")
    params = list(inspect.signature(model.forward).parameters)
    return name if name in params or not params else params[0]


def _signal_candidates(model: nn.Module, config: Any) -> tuple[str, list[torch.Tensor]]:
    """The main input's name and the shapes it may take, most likely first: pixel values at
    the config's image size; raw audio as [B, samples] or [B, 1, samples]; features (a
    spectrogram) as [B, frames, width] or [B, width, frames] (Whisper-style, 2 x
    `max_source_positions` frames), their width any of the config's FEATURE_KEYS or the
    input of a linear layer named
    `input*` or of the first one; token ids (an image of pixel clusters) in the vocabulary."""
    gen = torch.Generator().manual_seed(0)
    name = _input_name(model)
    if name == "pixel_values":
        channels = int(getattr(config, "num_channels", 3) or 3)
        size = getattr(config, "image_size", IMAGE)
        height, width = (size, size) if isinstance(size, int) else (
            tuple(size) if isinstance(size, (list, tuple)) and len(size) == 2 else (IMAGE, IMAGE))
        return name, [torch.randn(1, channels, height, width, generator=gen)]
    if name == "input_ids":
        vocab = int(getattr(config, "vocab_size", 256) or 256)
        return name, [torch.randint(0, vocab, (1, SEQ), generator=gen)]
    samples = torch.randn(1, AUDIO_SAMPLES, generator=gen)
    linears = [(n, m.in_features) for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    linears = [w for n, w in linears if "input" in n.rsplit(".", 1)[-1]] + [
        w for _, w in linears[:1]]  # an `input_linear`'s, the first linear's
    widths = list(dict.fromkeys([*_config_ints(config, FEATURE_KEYS), *linears]))
    whisper = hasattr(config, "max_source_positions")
    frames = 2 * int(config.max_source_positions) if whisper else int(
        getattr(config, "max_length", 64) or 64)
    features = [torch.randn(1, frames, w, generator=gen) for w in widths or [32]]
    transposed = [f.transpose(1, 2).contiguous() for f in features]
    if name == "input_values":
        return name, [samples, samples[:, None], *features, *transposed]
    return name, [*transposed, *features] if whisper else [*features, *transposed]


def _signal_inputs(model: nn.Module, config: Any) -> tuple[list[str], tuple[torch.Tensor, ...]]:
    """Pixel values, raw audio, audio features or pixel-cluster ids, as the model's main
    input names them: the first of `_signal_candidates` the model runs on in eager (the
    failure of the most likely one raised when none does)."""
    name, candidates = _signal_candidates(model, config)
    first: Exception | None = None
    for candidate in candidates:
        if len(candidates) == 1:
            break
        try:
            with torch.no_grad():
                model(**{name: candidate})
        except Exception as exc:  # noqa: BLE001 - the next shape is tried
            first = first or exc
            continue
        return [name], (candidate,)
    if len(candidates) > 1 and first is not None:
        raise first
    return [name], (candidates[0],)


def _dtype_of(variant: str) -> torch.dtype:
    return torch.float16 if variant == "fp16" else torch.float32


def _to(tensors: tuple[torch.Tensor, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    return tuple(t.to(dtype) if t.is_floating_point() else t for t in tensors)


def float64_truth(built: Built) -> Any:
    """The built model run in float64 on its own weights (already rounded to the variant's
    dtype) and run inputs: the exact-arithmetic reference `spyrec.verdict.check_outputs`
    takes as `truth` for half-precision outputs. None when the model cannot run in float64
    (an op without a float64 kernel): the verdict then has no second look."""
    module = copy.deepcopy(built.module).to(torch.float64)
    for sub in module.modules():  # transformers' grouped_mm experts have no float64 kernel:
        config = getattr(sub, "config", None)  # the eager loop over experts is the same sum
        if getattr(config, "_experts_implementation", None) not in (None, "eager"):
            config._experts_implementation = "eager"  # type: ignore[union-attr]
    try:
        with torch.no_grad():
            return module(*_to(built.run, torch.float64))
    except Exception:  # noqa: BLE001 - any failure only withholds the second look
        return None


def build_hf(case: Case, variant: str) -> Built:
    """A transformers case in a variant: fp32/fp16 on one example; `mask` a padded batch of
    two with a run-time attention_mask; `dynamic` the sequence length a `torch.export.Dim`."""
    model, config = hf_model(case)
    dtype = _dtype_of(variant)
    if case.family in TEXT_FAMILIES and _input_name(model) == "input_ids":
        names, example, run = _text_inputs(config, variant)
    elif variant not in PLAIN_VARIANTS:
        raise ValueError(f"{case.name} ({type(model).__name__}) takes {_input_name(model)}, "
                         f"not token ids: it has no {variant} variant")
    else:
        names, example = _signal_inputs(model, config)
        run = example
    module = FirstOutput(model, tuple(names)).eval()
    notes = _revive_vanishing_convolutions(module, run)
    module = module.to(dtype)
    dynamic = None
    if variant == "dynamic":  # one spec per input, inside the spec of `*tensors`
        dynamic = (({1: torch.export.Dim("seq", min=2, max=SEQ)},),)
    return Built(module, _to(example, dtype), _to(run, dtype), dynamic, notes)


VANISHING = 1e-6  # an output this small in fp32 is the init's, not the model's
GAINS = (2.0, 1.5, 1.0)  # He's gain first, smaller ones for a net that gain makes chaotic
CHAOTIC = 1e-4  # an output moving this much when the input moves by 1e-7 (relative)


def _revive_vanishing_convolutions(module: nn.Module, run: tuple[torch.Tensor, ...]) -> list[str]:
    """Convolution weights drawn with fan-in scaling (seeded) when the fp32 model's output
    vanishes: transformers initialises some conv nets' kernels (PP-LCNet's, EfficientNet's)
    with the config's `initializer_range` of 0.02 whatever their fan-in, so each layer
    shrinks the signal about 30x and a tiny net's logits are 1e-16 in fp32 and exactly 0 in
    fp16, a constant output that cannot tell a right compile from a wrong one; norm scales
    drawn as small are set near 1. A trained net's activations stay O(1) and its output is
    not chaotic: He's gain (2 / fan-in) is tried first, and a smaller one when the output
    still vanishes, or moves by more than `CHAOTIC` under a 1e-7 change of the input
    (EfficientNet at gain 2: logits in the hundreds that move 6 %, where eager fp32 itself
    differs from float64 by 2.5 %: no comparison can judge such a program)."""
    convs = [m for m in module.modules() if isinstance(m, nn.Conv1d | nn.Conv2d | nn.Conv3d)]
    if not convs:
        return []
    with torch.no_grad():
        out = module(*run)
    if not isinstance(out, torch.Tensor) or out.abs().max() >= VANISHING:
        return []
    norms = [m for m in module.modules()
             if isinstance(m, nn.modules.batchnorm._NormBase | nn.GroupNorm | nn.LayerNorm)
             and getattr(m, "weight", None) is not None and m.weight.abs().max() < 0.5]
    for gain in GAINS:
        generator = torch.Generator().manual_seed(2)
        with torch.no_grad():
            for conv in convs:
                fan_in = conv.weight[0].numel()
                conv.weight.copy_(torch.randn(conv.weight.shape, generator=generator)
                                  * math.sqrt(gain / fan_in))
            for norm in norms:
                norm.weight.copy_(1 + 0.1 * torch.randn(norm.weight.shape, generator=generator))
            out = module(*run)
            moved = module(*[t * (1 + 1e-7) if t.is_floating_point() else t for t in run])
        change = float((moved - out).norm() / out.norm().clamp_min(1e-30))
        if out.abs().max() >= VANISHING and change < CHAOTIC:
            break
    return [(f"the fp32 output vanished (below {VANISHING:g}): {len(convs)} convolution "
             f"weights redrawn at gain {gain:g} / fan-in, {len(norms)} norm scales near 1")]


# ---- torch.nn idioms --------------------------------------------------------------------

class GPTBlock(nn.Module):
    """A pre-norm GPT block whose attention applies a `tril` buffer by `masked_fill`."""

    tril: torch.Tensor

    def __init__(self, dim: int, heads: int, block: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.qkv, self.proj = nn.LayerNorm(dim), nn.Linear(dim, 3 * dim), nn.Linear(
            dim, dim)
        self.ln2, self.fc, self.out = nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.Linear(
            4 * dim, dim)
        self.register_buffer("tril", torch.tril(torch.ones(block, block)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, dim = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(dim, dim=-1)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
        att = att.masked_fill(self.tril[:t, :t] == 0, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, dim))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))


class MaskedFillGPT(nn.Module):
    """A nanoGPT-style decoder: token + position embeddings, `GPTBlock`s, tied LM head."""

    def __init__(self, vocab: int = 256, dim: int = 128, heads: int = 2, layers: int = 2,
                 block: int = 64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(block, dim)
        self.blocks = nn.Sequential(*(GPTBlock(dim, heads, block) for _ in range(layers)))
        self.ln = nn.LayerNorm(dim)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        return self.ln(self.blocks(x)) @ self.tok.weight.T


class Recurrent(nn.Module):
    """An LSTM or GRU sequence model with a linear head on every step."""

    def __init__(self, cell: type[nn.LSTM] | type[nn.GRU], dim: int = 64, hidden: int = 128):
        super().__init__()
        self.rnn = cell(dim, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(x)[0])


class SelfAttention(nn.Module):
    """nn.MultiheadAttention as self-attention with an out-of-place residual."""

    def __init__(self, dim: int = 128, heads: int = 2):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.attn(x, x, x, need_weights=False)[0]


class TemporalConvNet(nn.Module):
    """Causal dilated Conv1d blocks (left padding, ReLU, residual 1x1), then a linear head."""

    def __init__(self, channels: int = 32, hidden: int = 64, levels: int = 3):
        super().__init__()
        self.convs = nn.ModuleList()
        self.skips = nn.ModuleList()
        for i in range(levels):
            c_in = channels if i == 0 else hidden
            self.convs.append(nn.Conv1d(c_in, hidden, 3, dilation=2 ** i))
            self.skips.append(nn.Conv1d(c_in, hidden, 1))
        self.head = nn.Linear(hidden, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, (conv, skip) in enumerate(zip(self.convs, self.skips)):
            pad = 2 * 2 ** i
            x = torch.relu(conv(nn.functional.pad(x, (pad, 0)))) + skip(x)
        return self.head(x.transpose(1, 2))


class Recommender(nn.Module):
    """Two EmbeddingBag (mean) towers over id bags plus dense features, then an MLP score."""

    def __init__(self, users: int = 500, items: int = 1000, dim: int = 64):
        super().__init__()
        self.users = nn.EmbeddingBag(users, dim, mode="mean")
        self.items = nn.EmbeddingBag(items, dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(2 * dim + 16, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, user_ids: torch.Tensor, item_ids: torch.Tensor,
                dense: torch.Tensor) -> torch.Tensor:
        users, items = self.users(user_ids), self.items(item_ids)
        return self.mlp(torch.cat([users, items, dense.to(users.dtype)], dim=-1))


def _conv_bn(c_in: int, c_out: int, k: int = 3, stride: int = 1, groups: int = 1,
             act: Callable[[], nn.Module] = nn.ReLU) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, stride, k // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(c_out), act())


class UNet(nn.Module):
    """A two-level U-Net: conv blocks, max pooling, a transposed-conv upsample, a skip concat."""

    def __init__(self, c: int = 16):
        super().__init__()
        self.down1 = nn.Sequential(_conv_bn(3, c), _conv_bn(c, c))
        self.down2 = nn.Sequential(_conv_bn(c, 2 * c), _conv_bn(2 * c, 2 * c))
        self.up = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.fuse = nn.Sequential(_conv_bn(2 * c, c), nn.Conv2d(c, 2, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = self.down1(x)
        deep = self.down2(nn.functional.max_pool2d(skip, 2))
        return self.fuse(torch.cat([self.up(deep), skip], dim=1))


class BasicBlock(nn.Module):
    """ResNet's basic block: two 3x3 conv-BN, a strided 1x1 projection when the shape changes."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(_conv_bn(c_in, c_out, stride=stride),
                                  nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(c_out))
        self.proj = (nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                                   nn.BatchNorm2d(c_out))
                     if stride != 1 or c_in != c_out else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.proj(x))


class InvertedResidual(nn.Module):
    """MobileNetV2/V3 and EfficientNet's block: 1x1 expand, depthwise kxk, optional
    squeeze-excite, 1x1 project, residual when the shape is kept."""

    def __init__(self, c_in: int, c_out: int, stride: int, k: int,
                 act: Callable[[], nn.Module], se: bool):
        super().__init__()
        mid = 4 * c_in
        self.expand = _conv_bn(c_in, mid, 1, act=act)
        self.dw = _conv_bn(mid, mid, k, stride, groups=mid, act=act)
        self.se = (nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(mid, mid // 4, 1), nn.SiLU(),
                                 nn.Conv2d(mid // 4, mid, 1), nn.Sigmoid()) if se else None)
        self.project = nn.Sequential(nn.Conv2d(mid, c_out, 1, bias=False), nn.BatchNorm2d(c_out))
        self.residual = stride == 1 and c_in == c_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dw(self.expand(x))
        if self.se is not None:
            y = y * self.se(y)
        y = self.project(y)
        return x + y if self.residual else y


class ConvNeXtBlock(nn.Module):
    """ConvNeXt: depthwise 7x7, permute to NHWC, LayerNorm, 4x MLP with GELU, layer scale,
    permute back, residual."""

    def __init__(self, c: int):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c)
        self.fc1, self.fc2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.full((c,), 0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.gamma * self.fc2(nn.functional.gelu(self.fc1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


def _classifier(stem: nn.Module, body: list[nn.Module], channels: int) -> nn.Module:
    return nn.Sequential(stem, *body, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(channels, 10))


def _resnet() -> nn.Module:
    return _classifier(_conv_bn(3, 32, stride=2),
                       [BasicBlock(32, 32, 1), BasicBlock(32, 64, 2)], 64)


def _mobilenet() -> nn.Module:
    return _classifier(_conv_bn(3, 16, stride=2, act=nn.Hardswish),
                       [InvertedResidual(16, 16, 1, 3, nn.ReLU6, False),
                        InvertedResidual(16, 24, 2, 3, nn.Hardswish, False)], 24)


def _efficientnet() -> nn.Module:
    return _classifier(_conv_bn(3, 16, stride=2, act=nn.SiLU),
                       [InvertedResidual(16, 16, 1, 3, nn.SiLU, True),
                        InvertedResidual(16, 24, 2, 5, nn.SiLU, True)], 24)


def _convnext() -> nn.Module:
    return _classifier(nn.Conv2d(3, 64, 4, stride=4), [ConvNeXtBlock(64), ConvNeXtBlock(64)], 64)


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _tokens() -> tuple[torch.Tensor, ...]:
    return (torch.randint(0, 256, (1, SEQ), generator=_gen()),)


def _sequence(dim: int) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (torch.randn(1, SEQ, dim, generator=_gen()),)


def _image() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 3, 32, 32, generator=_gen()),)


def _bags() -> tuple[torch.Tensor, ...]:
    gen = _gen()
    return (torch.randint(0, 500, (4, 3), generator=gen),
            torch.randint(0, 1000, (4, 5), generator=gen), torch.randn(4, 16, generator=gen))


SEQ_VARIANTS = ("fp32", "fp16", "dynamic")
# name -> (family, variants, (module factory, example inputs factory))
IDIOMS: dict[str, tuple[str, tuple[str, ...],
                        tuple[Callable[[], nn.Module], Callable[[], tuple[torch.Tensor, ...]]]]] = {
    "gpt-masked-fill": ("nn-seq", SEQ_VARIANTS, (MaskedFillGPT, _tokens)),
    "lstm": ("nn-seq", SEQ_VARIANTS, (lambda: Recurrent(nn.LSTM), _sequence(64))),
    "gru": ("nn-seq", SEQ_VARIANTS, (lambda: Recurrent(nn.GRU), _sequence(64))),
    "multihead-attention": ("nn-seq", SEQ_VARIANTS, (SelfAttention, _sequence(128))),
    "transformer-encoder": ("nn-seq", SEQ_VARIANTS, (
        lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(
            128, 2, 256, dropout=0.0, batch_first=True), 2, enable_nested_tensor=False),
        _sequence(128))),
    "temporal-conv-net": ("nn-seq", PLAIN_VARIANTS, (
        TemporalConvNet, lambda: (torch.randn(1, 32, 64, generator=_gen()),))),
    "embedding-bag-recommender": ("nn-rec", PLAIN_VARIANTS, (Recommender, _bags)),
    "unet": ("nn-vision", PLAIN_VARIANTS, (UNet, _image)),
    "resnet": ("nn-vision", PLAIN_VARIANTS, (_resnet, _image)),
    "mobilenet": ("nn-vision", PLAIN_VARIANTS, (_mobilenet, _image)),
    "efficientnet": ("nn-vision", PLAIN_VARIANTS, (_efficientnet, _image)),
    "convnext": ("nn-vision", PLAIN_VARIANTS, (_convnext, _image)),
}


def build_idiom(case: Case, variant: str) -> Built:
    """A torch.nn idiom in a variant (`dynamic`: the sequence dim, dim 1, symbolic)."""
    _, _, (factory, inputs) = IDIOMS[case.name.removeprefix("nn:")]
    torch.manual_seed(0)
    dtype = _dtype_of(variant)
    module = factory().to(dtype).eval()
    example = _to(inputs(), dtype)
    if variant != "dynamic":
        return Built(module, example, example)
    run = tuple(t[:, :DYNAMIC_RUN_SEQ] for t in example)
    dims = ({1: torch.export.Dim("seq", min=2, max=SEQ)},) + ({},) * (len(example) - 1)
    return Built(module, example, run, dims)


# torch.export's suggested range for the sequence Dim when a model needs a larger least length
_SUGGESTED = re.compile(r"seq = Dim\('seq', min=(\d+), max=(\d+)\)")


def export(built: Built) -> torch.export.ExportedProgram:
    """torch.export of a built model. The `dynamic` variant's Dim is `min=2, max=SEQ`; a model
    whose code needs more tokens than 2 (a 4-tap convolution over the sequence) makes torch
    suggest `Dim('seq', min=m, max=SEQ)`: the model's own least length, not a specialisation.
    When that range still holds the run length, it exports again with it; any other failure
    is the model's, raised as torch raised it."""
    try:
        return torch.export.export(built.module, built.example,
                                   dynamic_shapes=built.dynamic_shapes)
    except Exception as exc:
        found = _SUGGESTED.search(str(exc))
        if built.dynamic_shapes is None or found is None or int(found[2]) != SEQ \
                or not 2 < int(found[1]) <= DYNAMIC_RUN_SEQ:
            raise
        seq = torch.export.Dim("seq", min=int(found[1]), max=SEQ)

        def narrowed(spec: Any) -> Any:
            if isinstance(spec, dict):
                return {k: seq if isinstance(v, type(seq)) else v for k, v in spec.items()}
            return type(spec)(narrowed(s) for s in spec)

        built.notes.append(f"exported with Dim('seq', min={found[1]}, max={SEQ}), torch's "
                           "least length for the model")
        return torch.export.export(built.module, built.example,
                                   dynamic_shapes=narrowed(built.dynamic_shapes))


def build(case: Case, variant: str) -> Built:
    """The case's module and inputs in `variant` (see `Built`)."""
    return build_hf(case, variant) if case.name.startswith("hf:") else build_idiom(case, variant)
