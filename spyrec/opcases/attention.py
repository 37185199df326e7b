"""Attention: heads of 16, masks and biases of broadcast shapes, complex rotary
embeddings and multi-query attention."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from spyrec.opcases.core import DTYPES, OpCase, _Fn, _randn

# ---- attention with heads of 16 (a quarter of an fp16 stick) ----------------------------------

HEADS16 = (1, 2, 16, 16)  # the "heads16" shape family: batch, heads, tokens, head dim


class _SplitHeads(torch.nn.Module):
    """A model's attention block with heads of 16: one q/k/v projection, the heads split off
    the innermost dim and merged back (restickifies on the device), causal SDPA."""

    def __init__(self, width: int = 64, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, w = x.shape
        q, k, v = (t.view(b, s, self.heads, w // self.heads).transpose(1, 2)
                   for t in self.qkv(x).split(w, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, s, w))


ATTENTION: dict[str, Callable[..., torch.Tensor]] = {
    "sdpa_causal": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    "eager_attention": lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2) * 0.25, -1) @ v,
}


def attention_cases() -> list[OpCase]:
    """SDPA and eager attention on [1, 2, 16, 16] q, k, v; a projection-split-heads block on
    [1, 16, 64] tokens."""
    out: list[OpCase] = []
    for dtype in DTYPES:
        for name, fn in ATTENTION.items():
            out.append(OpCase(name, dtype, "heads16", lambda fn=fn: _Fn(fn),
                              lambda g, d=dtype: tuple(torch.randn(*HEADS16, generator=g).to(d)
                                                       for _ in range(3))))
        out.append(OpCase("split_heads_attention", dtype, "heads16",
                          lambda d=dtype: _SplitHeads().to(d), _randn((1, 16, 64), dtype)))
    out += attention_mask_cases()
    return out


# ---- attention masks and biases of broadcast shapes --------------------------------------------

# the "mask_aligned" / "mask_unaligned" shape families: batch, heads, queries, keys, head dim
MASK_SHAPES = {"mask_aligned": (2, 2, 32, 32, 64), "mask_unaligned": (2, 2, 37, 45, 64)}


def _sdpa_bool_lengths(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                       lengths: torch.Tensor) -> torch.Tensor:
    """SDPA with a [B, 1, 1, S] boolean padding mask built from run-time lengths."""
    keys = torch.arange(k.shape[-2])
    return F.scaled_dot_product_attention(
        q, k, v, attn_mask=(keys[None, :] < lengths[:, None])[:, None, None, :])


def _eager_bias(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                bias: torch.Tensor) -> torch.Tensor:
    return torch.softmax(q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5 + bias, -1) @ v


def _mask_inputs(dims: tuple[int, ...], dtype: torch.dtype, bias: tuple[int, ...] | None,
                 neginf: bool = False) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    """q, k, v and a float bias of shape `bias` (some keys masked by -30000, or -inf when
    `neginf`; key 0 never), or run-time lengths when `bias` is None."""
    b, h, length, keys, e = dims

    def make(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        q, k, v = (torch.randn(b, h, n, e, generator=g).to(dtype) for n in (length, keys, keys))
        if bias is None:
            return q, k, v, torch.tensor([keys, keys // 3])
        values = torch.randn(*bias, generator=g) * 4
        values[torch.rand(*bias, generator=g) < 0.2] = float("-inf") if neginf else -30000.0
        values[..., 0] = 0.0
        return q, k, v, values.to(dtype)

    return make


def attention_mask_cases() -> list[OpCase]:
    """SDPA with a float bias per (batch, head), per head (ALiBi-like), per batch row (a
    padding mask), eager attention with a per-(batch, head) bias, SDPA with a boolean
    padding mask from run-time lengths; an fp32 bias holding -inf (exact in f32)."""
    out: list[OpCase] = []
    sdpa = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)  # noqa: E731
    for dtype in DTYPES:
        for shape_name, (b, h, length, keys, e) in MASK_SHAPES.items():
            dims = (b, h, length, keys, e)
            biases = {"sdpa_bias_bhls": (sdpa, (b, h, length, keys)),
                      "sdpa_bias_1hls": (sdpa, (1, h, length, keys)),
                      "sdpa_bias_b11s": (sdpa, (b, 1, 1, keys)),
                      "eager_bias_bhls": (_eager_bias, (b, h, length, keys))}
            for name, (fn, bias) in biases.items():
                out.append(OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                                  _mask_inputs(dims, dtype, bias)))
            out.append(OpCase("sdpa_bool_lengths", dtype, shape_name,
                              lambda: _Fn(_sdpa_bool_lengths), _mask_inputs(dims, dtype, None)))
    b, h, length, keys, e = MASK_SHAPES["mask_unaligned"]
    out.append(OpCase("sdpa_bias_neginf", torch.float32, "mask_unaligned", lambda: _Fn(sdpa),
                      _mask_inputs(MASK_SHAPES["mask_unaligned"], torch.float32,
                                   (b, h, length, keys), neginf=True)))
    return out


# ---- rotary embeddings in complex numbers (design note 92) ---------------------------------
ROTARY_SHAPES = {"aligned": (1, 16, 4, 64), "unaligned": (2, 7, 3, 34)}  # [B, S, H, D]


def _rope_complex(x: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """Llama 4's rotary: x's pairs as complex numbers times polar(1, angle), back to x's
    dtype; the angles [B, S, D/2] broadcast over the heads."""
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    turn = torch.polar(torch.ones_like(angle), angle).unsqueeze(2)
    return torch.view_as_real(pairs * turn).flatten(3).to(x.dtype)


def _rope_inputs(shape: tuple[int, ...], dtype: torch.dtype, special: bool
                 ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    """x and angles of magnitude up to 40 (positions times frequencies); `special`: some
    elements of x NaN and infinite (the rotation spreads them to their pair's partner; a
    16-bit input holds no infinity on Spyre, so there +-1000 instead)."""
    big = float("inf") if dtype == torch.float32 else 1000.0

    def make(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        x = torch.randn(shape, generator=g)
        if special:
            flat = x.view(-1)
            flat[5], flat[70], flat[-1] = big, -big, float("nan")
        angle = torch.rand(*shape[:2], shape[3] // 2, generator=g) * 40
        return x.to(dtype), angle
    return make


def rotary_cases() -> list[OpCase]:
    """`_rope_complex` in every dtype, aligned and unaligned head dims, finite and with
    infinities and NaN in x."""
    return [OpCase("rope_complex" + ("_special" if special else ""), dtype, shape_name,
                   lambda: _Fn(_rope_complex), _rope_inputs(shape, dtype, special))
            for dtype in DTYPES for shape_name, shape in ROTARY_SHAPES.items()
            for special in (False, True)]


# ---- multi-query attention without enable_gqa (Falcon): one key/value head broadcast ------
MQA_SHAPES = {"aligned": ((2, 4, 64, 64), (2, 1, 64, 64)),
              "unaligned": ((1, 3, 7, 40), (1, 1, 7, 40))}  # q [B, H, L, D], k/v [B, 1, S, D]


def mqa_cases() -> list[OpCase]:
    """Causal SDPA of H query heads on one key/value head, by broadcasting (no
    `enable_gqa`), in every dtype, aligned and unaligned."""
    def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def inputs(q: tuple[int, ...], kv: tuple[int, ...], dtype: torch.dtype
               ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
        return lambda g: tuple(torch.randn(s, generator=g).to(dtype) for s in (q, kv, kv))
    return [OpCase("sdpa_mqa_broadcast", dtype, name, lambda: _Fn(sdpa), inputs(q, kv, dtype))
            for dtype in DTYPES for name, (q, kv) in MQA_SHAPES.items()]
