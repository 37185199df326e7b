"""The model zoo: named models with random weights and example inputs, for `spyrec demo`, the
tests and the benchmarks.

    model, inputs = ZOO["granite-8b-decode"].build(torch.float16)
    exe = spyrec.compile(torch.export.export(model, inputs))

The small demo models (`spyrec.demo`) are listed here by reference. The Granite models are a
torch.nn rewrite of Hugging Face's `GraniteDecoderLayer` at the Granite-3.3-8B shape (hidden
4096, 32 query heads and 8 key/value heads of 128, SwiGLU MLP 12800, RMS norms with eps 1e-5,
rotary embeddings with theta 1e7, attention multiplier 1/128 as the SDPA scale, residual
multiplier 0.22), with the same parameter names, so an HF layer's state dict loads into it.
The rewrite needs no `transformers` at run time and has a decode step with a static KV cache
that HF's dynamic cache objects do not export as (design note 36).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from spyrec.demo import DemoConvNet, DemoDecoder, DemoDecoderFFN, DemoMLP, RMSNorm

Built = tuple[nn.Module, tuple[torch.Tensor, ...]]  # a model and its example inputs


@dataclass(frozen=True)
class GraniteShape:
    """The sizes and constants of a Granite decoder layer (HF `GraniteConfig` names)."""

    hidden_size: int = 4096
    num_attention_heads: int = 32
    num_key_value_heads: int = 8
    head_dim: int = 128
    intermediate_size: int = 12800
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000000.0
    attention_multiplier: float = 0.0078125
    residual_multiplier: float = 0.22
    embedding_multiplier: float = 12.0


GRANITE_8B = GraniteShape()


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Rotary(nn.Module):
    """Rotary tables cos/sin [positions, head_dim] in the activations' dtype, as HF's
    `GraniteRotaryEmbedding` computes them (fp32 angles, rounded to the dtype at the end)."""

    inv_freq: torch.Tensor  # a buffer

    def __init__(self, shape: GraniteShape):
        super().__init__()
        exponents = torch.arange(0, shape.head_dim, 2, dtype=torch.float32) / shape.head_dim
        self.register_buffer("inv_freq", 1.0 / shape.rope_theta ** exponents, persistent=False)

    def forward(self, positions: torch.Tensor, dtype: torch.dtype
                ) -> tuple[torch.Tensor, torch.Tensor]:
        # .float(): the frequencies stay fp32 when the module is cast with .to(float16)
        angles = positions.float()[:, None] * self.inv_freq.float()[None, :]
        table = torch.cat((angles, angles), dim=-1)
        return table.cos().to(dtype), table.sin().to(dtype)


class GraniteAttention(nn.Module):
    """Grouped-query self-attention with rotary embeddings; causal over the sequence, or one
    step over a static KV cache updated in place at `pos`."""

    def __init__(self, shape: GraniteShape):
        super().__init__()
        self.shape = shape
        heads, kv_heads, hd = shape.num_attention_heads, shape.num_key_value_heads, shape.head_dim
        self.q_proj = nn.Linear(shape.hidden_size, heads * hd, bias=False)
        self.k_proj = nn.Linear(shape.hidden_size, kv_heads * hd, bias=False)
        self.v_proj = nn.Linear(shape.hidden_size, kv_heads * hd, bias=False)
        self.o_proj = nn.Linear(heads * hd, shape.hidden_size, bias=False)

    def forward(self, h: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                cache: tuple[torch.Tensor, torch.Tensor] | None = None,
                pos: torch.Tensor | None = None) -> torch.Tensor:
        b, s, _ = h.shape
        shape = self.shape
        q = self.q_proj(h).view(b, s, shape.num_attention_heads, shape.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(b, s, shape.num_key_value_heads, shape.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(b, s, shape.num_key_value_heads, shape.head_dim).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        gqa = shape.num_key_value_heads != shape.num_attention_heads
        if cache is None:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                               scale=shape.attention_multiplier, enable_gqa=gqa)
        else:
            assert pos is not None, "a decode step needs the position of its token"
            k_cache, v_cache = cache
            k_cache.index_copy_(2, pos, k)
            v_cache.index_copy_(2, pos, v)
            length = k_cache.shape[2]
            valid = (torch.arange(length, device=pos.device) <= pos).view(1, length)
            o = F.scaled_dot_product_attention(q, k_cache, v_cache, attn_mask=valid,
                                               scale=shape.attention_multiplier, enable_gqa=gqa)
        return self.o_proj(o.transpose(1, 2).reshape(b, s, -1))


class GraniteMLP(nn.Module):
    """down(silu(gate(x)) * up(x))."""

    def __init__(self, shape: GraniteShape):
        super().__init__()
        self.gate_proj = nn.Linear(shape.hidden_size, shape.intermediate_size, bias=False)
        self.up_proj = nn.Linear(shape.hidden_size, shape.intermediate_size, bias=False)
        self.down_proj = nn.Linear(shape.intermediate_size, shape.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class GraniteLayer(nn.Module):
    """HF `GraniteDecoderLayer`: x + m * attn(norm(x)), then x + m * mlp(norm(x)), with m the
    residual multiplier. Parameter names are HF's."""

    def __init__(self, shape: GraniteShape = GRANITE_8B):
        super().__init__()
        self.residual_multiplier = shape.residual_multiplier
        self.input_layernorm = RMSNorm(shape.hidden_size, shape.rms_norm_eps)
        self.self_attn = GraniteAttention(shape)
        self.post_attention_layernorm = RMSNorm(shape.hidden_size, shape.rms_norm_eps)
        self.mlp = GraniteMLP(shape)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                cache: tuple[torch.Tensor, torch.Tensor] | None = None,
                pos: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, cache, pos) \
            * self.residual_multiplier
        return x + self.mlp(self.post_attention_layernorm(x)) * self.residual_multiplier


class GranitePrefill(nn.Module):
    """Granite layers over a whole sequence of hidden states [batch, sequence, hidden]
    (positions 0..sequence-1, causal). With `final_norm`, HF's `GraniteModel` without its
    embedding table: the embedding multiplier first, the model's last RMS norm at the end."""

    def __init__(self, layers: list[GraniteLayer], shape: GraniteShape = GRANITE_8B,
                 final_norm: bool = False):
        super().__init__()
        self.rotary = Rotary(shape)
        self.layers = nn.ModuleList(layers)
        self.embedding_multiplier = shape.embedding_multiplier if final_norm else 1.0
        self.norm = RMSNorm(shape.hidden_size, shape.rms_norm_eps) if final_norm else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cos, sin = self.rotary(torch.arange(x.shape[1], device=x.device), x.dtype)
        if self.norm is not None:
            x = x * self.embedding_multiplier
        for layer in self.layers:
            x = layer(x, cos, sin)
        return x if self.norm is None else self.norm(x)


class GraniteDecode(nn.Module):
    """One decode step of a Granite layer: the hidden state of one new token [1, 1, hidden]
    at position `pos` (int64 [1]); its rotated key and its value are written into the static
    K and V caches [1, kv_heads, cache, head_dim] (buffers, updated in place with
    `index_copy_`), and it attends to the cache positions 0..pos."""

    k_cache: torch.Tensor  # buffers
    v_cache: torch.Tensor

    def __init__(self, layer: GraniteLayer, cache: int, shape: GraniteShape = GRANITE_8B):
        super().__init__()
        self.rotary = Rotary(shape)
        self.layer = layer
        size = (1, shape.num_key_value_heads, cache, shape.head_dim)
        dtype = layer.self_attn.k_proj.weight.dtype
        self.register_buffer("k_cache", torch.zeros(size, dtype=dtype))
        self.register_buffer("v_cache", torch.zeros(size, dtype=dtype))

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        cos, sin = self.rotary(pos, x.dtype)
        return self.layer(x, cos, sin, (self.k_cache, self.v_cache), pos)


def granite_layer(dtype: torch.dtype = torch.float16,
                  shape: GraniteShape = GRANITE_8B) -> GraniteLayer:
    """A Granite layer with random weights built directly in `dtype` (no fp32 copy of the
    400 MB of an 8B-shaped layer). Linear weights are nn.Linear's default init; the norm
    weights are 1 + 0.1 N(0, 1), so they are not an identity."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        return GraniteLayer(shape).eval()
    finally:
        torch.set_default_dtype(default)


def fill_cache(model: GraniteDecode) -> GraniteDecode:
    """Give the caches earlier tokens' keys and values (and garbage past them, which the mask
    must hide): N(0, 1) everywhere."""
    with torch.no_grad():
        model.k_cache.normal_()
        model.v_cache.normal_()
    return model


def granite_prefill(dtype: torch.dtype = torch.float16, sequence: int = 128,
                    layer: GraniteLayer | None = None
                    ) -> Built:
    """`granite-8b-layer`: one Granite-3.3-8B-shaped layer over `sequence` tokens."""
    model = GranitePrefill([layer or granite_layer(dtype)]).eval()
    return model, (torch.randn(1, sequence, GRANITE_8B.hidden_size).to(dtype),)


def granite_decode(dtype: torch.dtype = torch.float16, cache: int = 2048, pos: int = 128,
                   layer: GraniteLayer | None = None
                   ) -> Built:
    """`granite-8b-decode`: one token through a Granite-3.3-8B-shaped layer with a KV cache
    of `cache` entries, at position `pos`."""
    model = fill_cache(GraniteDecode(layer or granite_layer(dtype), cache)).eval()
    x = torch.randn(1, 1, GRANITE_8B.hidden_size).to(dtype)
    return model, (x, torch.tensor([pos]))


def granite_stack(layers: int, sequence: int, distinct: bool,
                  dtype: torch.dtype = torch.float16
                  ) -> Built:
    """A Granite-3.3-8B-shaped decoder stack without embedding table and LM head (HF's
    `GraniteModel` on `inputs_embeds`). Unless `distinct`, every layer is the same module, so
    the stack holds one layer's 400 MB of weights however deep it is."""
    stack = ([granite_layer(dtype) for _ in range(layers)] if distinct
             else [granite_layer(dtype)] * layers)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        model = GranitePrefill(stack, final_norm=True).eval()
    finally:
        torch.set_default_dtype(default)
    return model, (torch.randn(1, sequence, GRANITE_8B.hidden_size).to(dtype),)


# ---- the registry ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ZooModel:
    """A named model: `build(dtype, features, rows)` gives the module (eval mode, in dtype)
    and its example inputs; the Granite models and the conv net have fixed sizes and ignore
    features and rows."""

    name: str
    summary: str
    build: Callable[[torch.dtype, int, int], Built]


def _decoder(dtype: torch.dtype, features: int, rows: int) -> Built:
    return DemoDecoder(features).to(dtype).eval(), (torch.randn(2, rows // 2, features).to(dtype),)


def _decoder_ffn(dtype: torch.dtype, features: int, rows: int) -> Built:
    return (DemoDecoderFFN(features).to(dtype).eval(),
            (torch.randn(2, rows // 2, features).to(dtype),))


def _mlp(dtype: torch.dtype, features: int, rows: int) -> Built:
    return DemoMLP(features).to(dtype).eval(), (torch.randn(rows, features).to(dtype),)


def _convnet(dtype: torch.dtype, features: int, rows: int) -> Built:
    return DemoConvNet().to(dtype).eval(), (torch.randn(2, 3, 32, 32).to(dtype),)


def _granite_layer(dtype: torch.dtype, features: int, rows: int) -> Built:
    return granite_prefill(dtype)


def _granite_decode(dtype: torch.dtype, features: int, rows: int) -> Built:
    return granite_decode(dtype)


ZOO: dict[str, ZooModel] = {m.name: m for m in (
    ZooModel("decoder", "two Llama-shaped layers (RMS norm, causal GQA, SwiGLU) and a final "
             "norm on [2, rows/2, features]", _decoder),
    ZooModel("decoder-ffn", "the decoder's FFN blocks only", _decoder_ffn),
    ZooModel("mlp", "three Linear layers with ReLU and GELU on [rows, features]", _mlp),
    ZooModel("convnet", "a small ResNet on 2x3x32x32 images", _convnet),
    ZooModel("granite-8b-layer", "one Granite-3.3-8B-shaped decoder layer (hidden 4096, 32/8 "
             "heads of 128, MLP 12800), prefill of 128 tokens; 400 MB of fp16 weights",
             _granite_layer),
    ZooModel("granite-8b-decode", "the same layer's decode step: one token at position 128, "
             "a KV cache of 2048 entries updated in place",
             _granite_decode),
)}


# ---- single-op kernels: the roofline suite's (benchmarks/roofline.py) and the cost-model
# test's (test_costmodel.py) --------------------------------------------------------------

class Gemm(nn.Module):
    """x @ W with W a [k, n] weight."""

    def __init__(self, k: int, n: int):
        super().__init__()
        self.w = nn.Parameter(torch.randn(k, n) / k**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.w


class Chain(nn.Module):
    """The memory-bound chain add -> gelu -> mul."""

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x + y) * z


class SwiGLU(nn.Module):
    """down(silu(gate(x)) * up(x)), the Llama / Granite MLP without its shape object: the
    gate kernel can keep its result in LX for the up kernel (design note 61)."""

    def __init__(self, hidden: int, inner: int):
        super().__init__()
        self.gate = nn.Linear(hidden, inner, bias=False)
        self.up = nn.Linear(hidden, inner, bias=False)
        self.down = nn.Linear(inner, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Softmax(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


class RowSum(nn.Module):
    """A sum over the last dim, kept as a column."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=-1, keepdim=True)


class Sdpa(nn.Module):
    """`scaled_dot_product_attention(q, k, v)`, causal or not."""

    def __init__(self, causal: bool = False):
        super().__init__()
        self.causal = causal

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
