"""Data movement: strided and negative-step slices, views, padding, indexing, writes
into slices and `x[mask] = v`."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from spyrec.opcases.core import DTYPES, SHAPES, OpCase, _Fn, _randn
from spyrec.opcases.gathers import _ids

# ---- data movement: strided and negative-step slices, views, padding, indexing --------------
# Pure moves (no arithmetic): the device result must equal eager's bit for bit
# (test/python/test_data_movement.py checks that); here they are judged like every op.

MOVEMENT_SHAPES = ("aligned", "unaligned", "3d")


def _even(x: torch.Tensor) -> torch.Tensor:
    return x[..., :x.shape[-1] // 2 * 2]


def _rotate_interleaved(x: torch.Tensor) -> torch.Tensor:
    """GPT-J / NeoX-style rotation of interleaved pairs (x1, x2) -> (-x2, x1)."""
    x = _even(x)
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


MOVES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "slice_step2": lambda x: x[..., ::2],
    "slice_odd_step2": lambda x: x[..., 1::2],
    "slice_step3_dim0": lambda x: x[::3],
    "rotate_interleaved": _rotate_interleaved,
    "flip_last": lambda x: torch.flip(x, [-1]),
    "flip_dim0": lambda x: torch.flip(x, [0]),
    "flip_all": lambda x: torch.flip(x, list(range(x.dim()))),
    "as_strided_every_other": lambda x: x.as_strided(
        (x.shape[0] // 2, x.shape[-1] // 2), (2 * x.stride(0), 2)),
    "unfold_last": lambda x: x.unfold(-1, 4, 3),
    "pad_leading": lambda x: F.pad(x, (1, 2, 3, 1), value=0.5),
    "pad_crop_leading": lambda x: F.pad(x, (0, 0, -1, 2)),
    "pad_reflect": lambda x: F.pad(x, (2, 3), mode="reflect"),
    "pad_replicate": lambda x: F.pad(x, (2, 3), mode="replicate"),
    # views that change the innermost dim other than by one split or merge: a merge of the
    # changed trailing dims, then a split (movement._merge_then_split, design note 74)
    "view_unit_dims": lambda x: x[..., None, None].reshape(x.shape) * 2,
    "view_regroup": lambda x: x[..., :2, :].reshape(*x.shape[:-2], x.shape[-1], 2),
    # selects along the innermost dim (design note 86): a selective scan's per-step column,
    # and the scan's outputs stacked back along it
    "select_last": lambda x: x[..., 3],
    "select_last_negative": lambda x: x[..., -1] * 2,
    "select_last_stacked": lambda x: torch.stack([x[..., i] for i in (0, 2, 5)], dim=-1),
    # slice assignment (copy + slice_scatter once exported): strided columns, a block of
    # rows, and the gated delta rule's row-prefix update
    "assign_columns_step3": lambda x: _assigned(x, (..., slice(1, 13, 3)), x[..., :4] * 2),
    "assign_rows": lambda x: _assigned(x, (..., slice(1, 3), slice(None)), x[..., -2:, :] * 2),
    "assign_row_prefix": lambda x: _assigned(x, (..., 2, slice(None, 5)), x[..., 2, :5] * 3),
}


def _assigned(x: torch.Tensor, where: tuple, value: torch.Tensor) -> torch.Tensor:
    """A copy of x with `x[where] = value` (an in-place update a model makes)."""
    y = x.clone()
    y[where] = value
    return y


class _BiasTable(torch.nn.Module):
    """A T5-style relative-position bias: a [heads, buckets] table read by a run-time
    [L, S] bucket tensor -> [heads, L, S]."""

    def __init__(self, heads: int = 4, buckets: int = 32):
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(heads, buckets))

    def forward(self, bucket: torch.Tensor) -> torch.Tensor:
        return self.table[:, bucket]


class _Bag(torch.nn.Module):
    def __init__(self, mode: str):
        super().__init__()
        self.bag = torch.nn.EmbeddingBag(40, 100, mode=mode)

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor | None = None) -> torch.Tensor:
        return self.bag(ids, offsets)


# x indexed by a run-time tensor: (fn, index shape from x's shape, index bound from x's shape)
INDEXED: dict[str, tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                         Callable[[tuple[int, ...]], tuple[int, ...]],
                         Callable[[tuple[int, ...]], int]]] = {
    "index_rows_runtime": (lambda x, i: x[i], lambda s: (3, 5), lambda s: s[0]),
    "index_dim1_runtime": (lambda x, i: x[:, i], lambda s: (7,), lambda s: s[1]),
    "index_select_last": (lambda x, i: torch.index_select(x, -1, i), lambda s: (9,),
                          lambda s: s[-1]),
    "gather_last": (lambda x, i: torch.gather(x, -1, i), lambda s: (*s[:-1], 7),
                    lambda s: s[-1]),
    "gather_dim0": (lambda x, i: torch.gather(x, 0, i), lambda s: (5, *s[1:]),
                    lambda s: s[0]),
}


def _scatter_inputs(shape: tuple[int, ...], dim: int, dtype: torch.dtype
                    ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    """x, an index of 5 entries along `dim` (its other dims x's) and src of the index's
    shape: duplicate indices occur, so their contributions are summed."""
    def make(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        ids = list(shape)
        ids[dim] = 5
        return (torch.randn(*shape, generator=g).to(dtype),
                _ids(tuple(ids), shape[dim], torch.int64, g),
                torch.randn(*ids, generator=g).to(dtype))
    return make


def _distinct_rows(shape: tuple[int, ...], dtype: torch.dtype
                   ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    """Rows of distinct whole numbers (exact in bf16 up to 256 per row): no ties, so
    the top-k indices are eager's whatever its tie order (note 76)."""
    def make(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        ranks = torch.rand(*shape, generator=g).argsort(-1)
        return ((ranks - shape[-1] // 2).to(dtype),)
    return make


def _scatter_topk(x: torch.Tensor) -> torch.Tensor:
    values, indices = x.topk(3)
    return torch.zeros_like(x).scatter(-1, indices, values * 2)


def movement_cases() -> list[OpCase]:
    """The moves of `MOVES` on the aligned, unaligned and 3-D shapes; the run-time indexing
    of `INDEXED` with int64 indices (int32 for `gather_last`), both ends of the dim
    included; scatter_add along the last dim and dim 0; a T5 bias table and embedding bags
    (sum, mean) of 2-D ids."""
    out: list[OpCase] = []
    for dtype in DTYPES:
        for shape_name in MOVEMENT_SHAPES:
            shape = SHAPES[shape_name]
            for name, fn in MOVES.items():
                out.append(OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                                  _randn(shape, dtype)))
            for name, (fn, ids, bound) in INDEXED.items():
                index_type = torch.int32 if name == "gather_last" else torch.int64
                out.append(OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                                  lambda g, s=shape, d=dtype, i=ids, b=bound, t=index_type: (
                                      torch.randn(*s, generator=g).to(d),
                                      _ids(i(s), b(s), t, g))))
            for name, dim in (("scatter_add_last", -1), ("scatter_add_dim0", 0)):
                out.append(OpCase(name, dtype, shape_name, lambda dim=dim: _Fn(
                    lambda x, i, v: x.scatter_add(dim, i, v)), _scatter_inputs(shape, dim, dtype)))
            if shape_name == "3d":
                continue
            # one value at run-time indices, duplicates included (DeepSeek-V4's block bias),
            # and the top-k values written at the top-k indices (Llama 4's router scores)
            for name, dim, value in (("scatter_value_last", -1, 0.0),
                                     ("scatter_value_dim0", 0, -2.5)):
                out.append(OpCase(name, dtype, shape_name, lambda dim=dim, v=value: _Fn(
                    lambda x, i, _: x.scatter(dim, i, v)), _scatter_inputs(shape, dim, dtype)))
            out.append(OpCase("scatter_topk_values", dtype, shape_name, lambda: _Fn(
                _scatter_topk), _distinct_rows(shape, dtype)))
        out.append(OpCase("bias_table_runtime", dtype, "aligned",
                          lambda d=dtype: _BiasTable().to(d),
                          lambda g: (_ids((16, 16), 32, torch.int64, g),)))
        out.extend(OpCase(f"embedding_bag_{mode}", dtype, "aligned",
                          lambda m=mode, d=dtype: _Bag(m).to(d),
                          lambda g: (_ids((6, 5), 40, torch.int64, g),))
                   for mode in ("sum", "mean"))
        for shape_name, dims in STACKED_SHAPES.items():
            out.append(OpCase("bmm_stacked_weight_transposed", dtype, shape_name,
                              lambda s=dims, d=dtype: _StackedWeights(*s).to(d),
                              _randn(dims[:3], dtype)))
    return out


# a stack of expert matrices [E, I, H] read transposed by a bmm (inkling's shared experts,
# note 91): E, T, H, I
STACKED_SHAPES = {"aligned": (2, 64, 128, 64), "unaligned": (3, 37, 100, 45)}


class _StackedWeights(torch.nn.Module):
    """`bmm(x, w.transpose(1, 2))` with `w` an [E, I, H] parameter, then the result plus a
    [T, E, I] parameter permuted to [E, T, I]: permutes of 3-D weights, folded into them."""

    def __init__(self, experts: int, tokens: int, hidden: int, inner: int):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(experts, inner, hidden) / hidden ** 0.5)
        self.b = torch.nn.Parameter(torch.randn(tokens, experts, inner))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.bmm(x, self.w.transpose(1, 2)) + self.b.permute(1, 0, 2)


# ---- `x[mask] = v`: index_put with a boolean mask of x's shape (hf:gemma3) -----------------
def _masked_write(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[x > 0.5] = -2.0
    return y * 3


def _masked_ids(ids: torch.Tensor) -> torch.Tensor:
    ids = ids.clone()
    ids[ids == 3] = 0
    return ids


def _grid(shape: tuple[int, ...], dtype: torch.dtype
          ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    """Values on a grid of 1/4 (exact in every dtype, so `x > 0.5` meets ties), or small
    integers for an integer dtype."""
    if not dtype.is_floating_point:
        return lambda g: (torch.randint(0, 8, shape, generator=g).to(dtype),)
    return lambda g: ((torch.randn(shape, generator=g) * 4).round().div(4).to(dtype),)


def masked_write_cases() -> list[OpCase]:
    """A value written where a comparison holds, into floats of every dtype and into int32 /
    int64 ids (Gemma 3's out-of-vocabulary image tokens set to 0), aligned and unaligned."""
    forms = [("index_put_mask", _masked_write, d) for d in DTYPES]
    forms += [("index_put_mask_ids", _masked_ids, d) for d in (torch.int32, torch.int64)]
    return [OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                   _grid(SHAPES[shape_name], dtype))
            for shape_name in ("aligned", "unaligned") for name, fn, dtype in forms]


# ---- several index tensors, infinities in 16 bits, boolean inputs (design notes 100, 101) --
def _last_token(x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """A classifier's pooling: each sequence's token at a run-time position, `x[b, pos]`
    (two index tensors at adjacent dims), scaled so a wrong row shows."""
    return x[torch.arange(x.shape[0]), pos] * 2


def _masked_softmax(x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """A padding mask given as a boolean input, written into the scores as -inf (which a
    16-bit tensor on the device cannot hold) before a softmax."""
    return x.masked_fill(~keep, float("-inf")).softmax(-1)


def _index_pairs(shape: tuple[int, int, int], dtype: torch.dtype
                 ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    batch, seq, _ = shape
    return lambda g: (torch.randn(shape, generator=g).to(dtype),
                      torch.randint(-seq, seq, (batch,), generator=g))


def _padded_scores(shape: tuple[int, int], dtype: torch.dtype
                   ) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    def make(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        keep = torch.rand(shape, generator=g) > 0.3
        keep[:, 0] = True  # every row keeps a column (a row of -inf alone is softmax's NaN)
        return torch.randn(shape, generator=g).to(dtype), keep
    return make


INDEX_PAIR_SHAPES = {"aligned": (4, 16, 128), "unaligned": (3, 7, 100)}


def index_and_infinity_cases() -> list[OpCase]:
    """`x[b, pos]` with run-time positions (negative ones included), argmax / argmin and
    the mean of integers, and a softmax over scores masked to -inf by a boolean program
    input, in every dtype, aligned and unaligned."""
    out: list[OpCase] = []
    for shape_name in ("aligned", "unaligned"):
        rows_cols = SHAPES[shape_name]
        for dtype in DTYPES:
            out.append(OpCase("index_pair", dtype, shape_name, lambda: _Fn(_last_token),
                              _index_pairs(INDEX_PAIR_SHAPES[shape_name], dtype)))
            out.append(OpCase("masked_fill_neginf_softmax", dtype, shape_name,
                              lambda: _Fn(_masked_softmax), _padded_scores(rows_cols, dtype)))
        for dtype in (torch.int32, torch.int64):
            for name, fn in (("argmax_int", lambda x: x.argmax(-1)),
                             ("argmin_int", lambda x: x.argmin(-1))):
                out.append(OpCase(name, dtype, shape_name, lambda fn=fn: _Fn(fn),
                                  lambda g, s=rows_cols, d=dtype: (
                                      torch.randperm(s[0] * s[1], generator=g).reshape(s)
                                      .to(d),)))
            # mean pooling's token count: an integer mask cast to float, then reduced
            out.append(OpCase("mean_of_int_cast", dtype, shape_name, lambda: _Fn(
                lambda x: x.float().mean(-1, keepdim=True)), lambda g, s=rows_cols, d=dtype: (
                    torch.randint(-100, 100, s, generator=g).to(d),)))
    return out
