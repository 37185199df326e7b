"""Boolean algebra on run-time masks: what Hugging Face models compute from a padded
batch's `attention_mask` (int64, 1 for a token, 0 for padding) before attention reads it.
A comparison with a boolean constant (`mask == False`), the count of a predicate
(`(mask != 0).sum(-1)`, an index of the first token), a constant prefix concatenated
with the run-time mask (memory tokens, a prompt), a shifted and padded mask, an outer
`and` of a mask with itself (query x key), a boolean and-ed with a 0/1 integer tensor,
and chunk numbers by floor division of positions (Llama 4's chunked attention)."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from spyrec.opcases.core import DTYPES, SHAPES, OpCase, _Fn

MASKED = -1.0e4  # finite in every float type


def _eq_false(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """`mask.bool() == torch.tensor(False)`: a lifted boolean constant compared."""
    return torch.where(mask.bool() == torch.tensor(False), x * 0.5, x)


def _prefixed(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """A constant all-true prefix of two columns concatenated with the mask's rest."""
    keep = torch.cat([torch.ones_like(mask[:, :2], dtype=torch.bool), mask[:, 2:] > 0], -1)
    return x.masked_fill(~keep, MASKED)


def _shifted(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The mask padded by a column on the left and two on the right (an int64 pad), cut
    back to its width and and-ed with itself: a token counts when it and its predecessor
    are real."""
    before = F.pad(mask, (1, 2))[:, :-3]
    keep = torch.logical_and(before, mask)
    return torch.where(keep, x, torch.zeros_like(x))


def _outer(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """An outer `and` of the mask with itself ([B, S, 1] & [B, 1, S], query x key), read by
    a masked row sum."""
    m = mask.bool()
    keep = m[:, :, None] & m[:, None, :]
    return (keep.to(x.dtype) * x[:, None, :]).sum(-1)


def _and_int(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """A predicate and-ed with a 0/1 int32 tensor (bool & int32 is int32), as a factor."""
    both = (mask > 0) & torch.ones_like(mask, dtype=torch.int32)
    return x * both.to(x.dtype)


def _token_count(mask: torch.Tensor) -> torch.Tensor:
    """How many leading padding positions each row has: the boolean mask's cumsum
    compared with a boolean `zeros_like` (a folded constant), counted."""
    m = mask.bool()
    return (m.cumsum(-1) == torch.zeros_like(m)).sum(-1)


def _chunks(mask: torch.Tensor) -> torch.Tensor:
    """The chunk of each token's position (positions counted from the first real token,
    four to a chunk), as Llama 4's chunked attention computes it: floor division by a
    number, negative positions (padding) included."""
    start = (mask.cumsum(-1) == 0).sum(-1, keepdim=True)
    positions = torch.arange(mask.shape[-1])[None, :] - start
    return torch.div(positions, 4, rounding_mode="floor")


def _same_chunk(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Keys in the query's chunk: an outer equality of chunk numbers, and-ed with the
    padding mask and read by a masked softmax."""
    chunk = _chunks(mask)
    keep = (chunk[:, :, None] == chunk[:, None, :]) & mask.bool()[:, None, :]
    scores = x[:, None, :].expand(-1, x.shape[-1], -1)
    return scores.masked_fill(~keep, MASKED).softmax(-1)


FLOAT_MASK_OPS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "mask_eq_false": _eq_false,
    "mask_cat_prefix": _prefixed,
    "mask_pad_shift_and": _shifted,
    "mask_outer_and": _outer,
    "mask_and_int": _and_int,
}
INT_MASK_OPS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "mask_leading_pad_count": _token_count,
    "mask_chunk_floor_div": _chunks,
}
# the outer and the chunk masks are [B, S, S]: a short row keeps them small
OUTER_SHAPES = {"aligned": (4, 64), "unaligned": (3, 37)}


def padded_mask(shape: tuple[int, int], g: torch.Generator) -> torch.Tensor:
    """A padded batch's attention mask, int64: each row some padding on the left or the
    right of its tokens (every row keeps at least two tokens), the first row unpadded."""
    rows, cols = shape
    mask = torch.zeros(shape, dtype=torch.int64)
    lengths = torch.randint(2, cols + 1, (rows,), generator=g)
    lengths[0] = cols
    for r in range(rows):
        n = int(lengths[r])
        if r % 2:
            mask[r, cols - n:] = 1  # left padding, as generation batches
        else:
            mask[r, :n] = 1
    return mask


def mask_algebra_cases() -> list[OpCase]:
    out: list[OpCase] = []
    for shape_name in ("aligned", "unaligned"):
        for name, fn in FLOAT_MASK_OPS.items():
            shape = OUTER_SHAPES[shape_name] if name == "mask_outer_and" \
                else SHAPES[shape_name]
            out.extend(OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                              lambda g, s=shape, d=dtype: (
                                  torch.randn(s, generator=g).to(d), padded_mask(s, g)))
                       for dtype in DTYPES)
        out.append(OpCase("mask_same_chunk_softmax", torch.float32, shape_name,
                          lambda: _Fn(_same_chunk), lambda g, s=OUTER_SHAPES[shape_name]: (
                              torch.randn(s, generator=g), padded_mask(s, g))))
        for name, int_fn in INT_MASK_OPS.items():
            out.append(OpCase(name, torch.int64, shape_name, lambda fn=int_fn: _Fn(fn),
                              lambda g, s=SHAPES[shape_name]: (padded_mask(s, g),)))
    return out
