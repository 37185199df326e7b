"""IEEE special values on the device as in eager (design note 62): `where` / `masked_fill`
select instead of blending, -inf masks in 16-bit programs, fully masked rows, and the inputs
DL16 cannot hold.

Each measured failure of issue 18 has its case here: a GPT attention written with
`masked_fill(mask == 0, -inf)` returned NaN everywhere (the blend 0 * -inf), and
`nn.TransformerDecoderLayer` in fp16 with a 0 / -inf float mask returned NaN in every row
with a masked key (the mask's -inf stored as DL16's NINF, read back as NaN).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_close, assert_matches_eager, one

import spyrec
from spyrec.diagnostics import RunError, SpyrecError


class MaskedFillAttention(torch.nn.Module):
    """Causal self-attention as hand-written GPTs spell it: a registered tril buffer,
    `masked_fill(mask == 0, -inf)`, softmax, @ v."""

    mask: torch.Tensor  # a buffer

    def __init__(self, d: int = 64, heads: int = 2, tokens: int = 32):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.register_buffer("mask", torch.tril(torch.ones(tokens, tokens)).view(
            1, 1, tokens, tokens))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in self.qkv(x).split(c, dim=2))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        return (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_masked_fill_neg_inf_attention_matches_eager(dtype):
    torch.manual_seed(0)
    model = MaskedFillAttention().to(dtype).eval()
    x = torch.randn(1, 32, 64).to(dtype)
    exe = spyrec.compile(torch.export.export(model, (x,)))
    out = assert_matches_eager(exe, model, x)
    assert torch.isfinite(out).all()


class DecoderLayerWithFloatMask(torch.nn.Module):
    """nn.TransformerDecoderLayer with the 0 / -inf float mask nn.Transformer makes."""

    def __init__(self, tokens: int = 16):
        super().__init__()
        self.layer = torch.nn.TransformerDecoderLayer(64, 2, 128, dropout=0.0,
                                                      batch_first=True)
        self.register_buffer("mask",
                             torch.nn.Transformer.generate_square_subsequent_mask(tokens))

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        return self.layer(x, memory, tgt_mask=self.mask)


def test_transformer_decoder_layer_fp16_neg_inf_mask_matches_eager():
    torch.manual_seed(0)
    model = DecoderLayerWithFloatMask().half().eval()
    x, memory = torch.randn(1, 16, 64).half(), torch.randn(1, 16, 64).half()
    exe = spyrec.compile(torch.export.export(model, (x, memory)))
    out = assert_matches_eager(exe, model, x, memory)
    assert torch.isfinite(out).all()


class Where(torch.nn.Module):
    def forward(self, ids: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.where(ids > 0, x, y)


def test_where_selects_special_values_exactly():
    """Every special value on either side, selected or not, comes out as eager's: NaN,
    +-inf, +-0 (the sign of a selected zero included) and the dtype's extremes."""
    specials = torch.tensor([float("nan"), float("inf"), float("-inf"), 0.0, -0.0,
                             3.4028235e38, -3.4028235e38, 1.5])
    x = specials.repeat(8, 16)  # 8 x 128: every special against every other one
    y = specials.roll(3).repeat(8, 16)
    ids = torch.randint(-2, 3, (8, 128), generator=torch.Generator().manual_seed(0))
    exe = spyrec.compile(torch.export.export(Where(), (ids, x, y)))
    out, expected = exe(ids, x, y), Where()(ids, x, y)
    assert_close(exe, expected, out)  # NaN, +-inf by class; finite values in bounds
    finite = torch.isfinite(expected)
    assert torch.equal(out[finite], expected[finite])
    assert torch.equal(torch.signbit(out[finite]), torch.signbit(expected[finite]))


class ScalarFill(torch.nn.Module):
    def forward(self, ids: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return x.masked_fill(ids > 0, float("-inf")).amax(-1)


def test_masked_fill_of_run_time_predicate_keeps_neg_inf_fp32():
    """A fully masked row's max is -inf in eager and on the device (fp32 holds -inf)."""
    ids = torch.randint(-2, 3, (8, 128), generator=torch.Generator().manual_seed(1))
    ids[3] = 1  # row 3 masked throughout
    x = torch.randn(8, 128)
    exe = spyrec.compile(torch.export.export(ScalarFill(), (ids, x)))
    out, expected = one(exe(ids, x)), ScalarFill()(ids, x)
    assert_close(exe, expected, out)  # NaN, +-inf by class; finite values in bounds
    assert out[3].item() == float("-inf")
    assert torch.equal(out, expected)  # a max selects: exact


class EagerSoftmaxWithMask(torch.nn.Module):
    """softmax(q @ k^T + mask) @ v with a constant mask whose row 2 is -inf throughout:
    eager gives NaN in that row, and so must the device."""

    mask: torch.Tensor  # a buffer

    def __init__(self, dtype: torch.dtype):
        super().__init__()
        mask = torch.zeros(16, 16)
        mask[:, 10:] = float("-inf")
        mask[2] = float("-inf")
        self.register_buffer("mask", mask.to(dtype))

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.softmax(q @ k.transpose(-1, -2) * 0.25 + self.mask, -1) @ v


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_fully_masked_row_gives_nan_like_eager_softmax(dtype):
    torch.manual_seed(0)
    model = EagerSoftmaxWithMask(dtype).eval()
    q, k, v = (torch.randn(1, 2, 16, 16).to(dtype) for _ in range(3))
    exe = spyrec.compile(torch.export.export(model, (q, k, v)))
    out = one(exe(q, k, v))
    with torch.no_grad():
        expected = model(q, k, v)
    assert_close(exe, expected, out)  # NaN, +-inf by class; finite values in bounds
    assert torch.isnan(out[..., 2, :]).all() and torch.isfinite(out[..., :2, :]).all()


class SdpaWithMask(torch.nn.Module):
    mask: torch.Tensor  # a buffer

    def __init__(self, mask: torch.Tensor):
        super().__init__()
        self.register_buffer("mask", mask)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)


def test_sdpa_mask_with_a_fully_masked_row_is_refused():
    """SDPA returns zeros for a query whose keys are all masked; the attention kernel would
    return NaN there, so the compile stops and says so instead of answering wrongly."""
    mask = torch.zeros(16, 16)
    mask[5] = float("-inf")
    q = torch.randn(1, 2, 16, 16)
    ep = torch.export.export(SdpaWithMask(mask).eval(), (q, q, q))
    with pytest.raises(SpyrecError, match="rows that are -inf throughout"):
        spyrec.compile(ep)


def test_sdpa_fp16_neg_inf_mask_matches_eager():
    """A 16-bit -inf mask is read in f32 by the attention kernel: exact masking."""
    mask = torch.nn.Transformer.generate_square_subsequent_mask(16).half()
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 16, 16).half() for _ in range(3))
    model = SdpaWithMask(mask).eval()
    exe = spyrec.compile(torch.export.export(model, (q, k, v)))
    out = assert_matches_eager(exe, model, q, k, v)
    assert torch.isfinite(out).all()


def test_sixteen_bit_input_with_infinity_is_refused():
    """DL16 has no infinity: a 16-bit input holding one is refused, naming it and where."""
    x = torch.randn(4, 64).half()
    exe = spyrec.compile(torch.export.export(torch.nn.ReLU(), (x,)))
    x[2, 7] = float("-inf")
    with pytest.raises(RunError, match=r"input 'input' holds -inf at \[2, 7\].*no infinity"):
        exe(x)
    x[2, 7] = float("nan")  # NaN is what DL16's NINF means: kept
    assert torch.isnan(one(exe(x))[2, 7])


def test_bf16_input_beyond_dl16_range_is_refused():
    """bf16 reaches 3e38, DL16 8.57e9: a larger input value would be NaN on the device."""
    x = torch.randn(4, 64).to(torch.bfloat16)
    exe = spyrec.compile(torch.export.export(torch.nn.ReLU(), (x,)))
    x[1, 2] = 1e12
    with pytest.raises(RunError,
                       match=r"holds 1000727379968.0 at \[1, 2\].*beyond its largest finite"):
        exe(x)


class SdpaRunTimeMask(torch.nn.Module):
    """A boolean mask from run-time positions and a length: key j is visible to query i
    when j <= pos[i] and j < length; queries with pos < 0 see no key at all."""

    def forward(self, q, k, v, pos, length):
        keys = torch.arange(q.shape[-2])
        visible = (keys[None, :] <= pos[:, None]) & (keys[None, :] < length)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=visible)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_sdpa_run_time_mask_fully_masked_queries_get_zeros(dtype):
    """SDPA gives zeros for a query that sees no key; the additive mask alone would have
    averaged every value there (a silent wrong answer before issue 18)."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 16, 64).to(dtype) for _ in range(3))
    pos, length = torch.arange(16) - 3, torch.tensor([12])  # queries 0..2 see nothing
    model = SdpaRunTimeMask()
    exe = spyrec.compile(torch.export.export(model, (q, k, v, pos, length)))
    out = assert_matches_eager(exe, model, q, k, v, pos, length)
    assert torch.equal(out[..., :3, :], torch.zeros_like(out[..., :3, :]))


class DecodeStepMask(torch.nn.Module):
    """A decode step's mask over a KV cache, keys 0..pos visible, grouped-query heads."""

    def forward(self, q, k, v, pos):
        valid = (torch.arange(k.shape[2]) <= pos).view(1, k.shape[2])
        return F.scaled_dot_product_attention(q, k, v, attn_mask=valid, enable_gqa=True)


@pytest.mark.parametrize("pos", [5, -1])
def test_decode_step_mask_one_query_row(pos):
    """One query row: its max(p) is a [1, 1] column, broadcast over the 8 query heads; at
    pos = -1 the query sees nothing and SDPA gives zeros."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, h, n, 64).half() for h, n in ((8, 1), (2, 256), (2, 256)))
    model = DecodeStepMask()
    exe = spyrec.compile(torch.export.export(model, (q, k, v, torch.tensor([pos]))))
    out = assert_matches_eager(exe, model, q, k, v, torch.tensor([pos]))
    assert torch.isfinite(out).all() and (out.abs().max() == 0) == (pos < 0)


# ---- exact data moves, argmax and std (design note 63) -------------------------------------

class Rotary(torch.nn.Module):
    """q * cos + rotate_half(q) * sin, as Llama and Granite spell it."""

    def forward(self, q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = q.shape[-1] // 2
        return q * cos + torch.cat((-q[..., half:], q[..., :half]), dim=-1) * sin


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_rotary_keeps_a_nan_in_its_place(dtype):
    """rotate_half is a column map on the PT; one NaN (and in fp32 one inf) of q used to
    make its whole row NaN. Now the output is NaN exactly where eager's is."""
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, 16, 128, generator=g).to(dtype)
    cos = torch.randn(16, 128, generator=g).to(dtype)
    sin = torch.randn(16, 128, generator=g).to(dtype)
    q[0, 0, 3, 5] = float("nan")
    if dtype == torch.float32:
        q[0, 1, 7, 100] = float("inf")
    exe = spyrec.compile(torch.export.export(Rotary(), (q, cos, sin)))
    out = assert_matches_eager(exe, Rotary(), q, cos, sin)
    expected = Rotary()(q, cos, sin).float()
    assert torch.equal(torch.isnan(out), torch.isnan(expected))
    assert torch.equal(torch.isinf(out), torch.isinf(expected))
    # the NaN reaches its own column and the one it rotates into; the inf (fp32) likewise
    assert int(torch.isnan(out).sum()) == 2
    assert int(torch.isinf(out).sum()) == (2 if dtype == torch.float32 else 0)


class LeadingSum(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return x.sum(0), x.mean(1), x.transpose(-1, -2)


def test_leading_sums_and_transposes_follow_ieee():
    """Sums over leading dims and transposes are matmuls by 0/1 matrices: a column with
    +inf and -inf sums to NaN, one with +inf alone to +inf, and the rest stay finite."""
    x = torch.randn(4, 32, 64, generator=torch.Generator().manual_seed(1))
    x[0, 0, 0], x[1, 0, 0] = float("inf"), float("-inf")  # column (0, 0): NaN
    x[2, 5, 9] = float("inf")                               # column (5, 9): +inf
    x[3, 7, 11] = float("nan")                              # column (7, 11): NaN
    exe = spyrec.compile(torch.export.export(LeadingSum(), (x,)))
    total, mean, t = exe(x)
    e_total, e_mean, e_t = LeadingSum()(x)
    assert_close(exe, (e_total, e_mean, e_t), (total, mean, t))
    for got, want in ((total, e_total), (mean, e_mean), (t, e_t)):
        assert torch.equal(torch.isnan(got), torch.isnan(want))
        assert torch.equal(torch.isinf(got), torch.isinf(want))
    assert int(torch.isfinite(total).sum()) == 32 * 64 - 3


class ArgReductions(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values, indices = x.max(-1)
        return x.argmax(-1), x.argmin(-1), values, indices


def test_argmax_with_nan_and_infinities_matches_eager():
    """torch returns the first NaN's index on a row that holds one, and the right index
    where the max is +inf or the min -inf (|inf - inf| was NaN in the device's test)."""
    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(2))
    x[0, 9], x[0, 20] = float("nan"), float("nan")  # first NaN: 9
    x[1, 30] = float("inf")
    x[2, 4], x[2, 50] = float("inf"), float("-inf")
    x[3] = float("-inf")                             # all -inf: index 0
    x[4, 12] = torch.finfo(torch.float32).max        # the largest finite value
    x[4, 13] = float("inf")
    exe = spyrec.compile(torch.export.export(ArgReductions(), (x,)))
    got, want = exe(x), ArgReductions()(x)
    for g, w in zip(got, want):
        if w.dtype == torch.int64:
            assert torch.equal(g, w), (g, w)
    assert_close(exe, want[2], got[2])


class Std(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.std(-1)


def test_std_of_a_row_holding_1e30_is_finite():
    x = torch.randn(4, 128, generator=torch.Generator().manual_seed(3))
    x[1, 7] = 1e30
    exe = spyrec.compile(torch.export.export(Std(), (x,)))
    out = assert_matches_eager(exe, Std(), x)
    assert torch.isfinite(out).all() and out[1] > 1e28


class StickSplit(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x.split(128, dim=-1)


def test_stick_aligned_split_is_a_row_move_and_exact():
    """GPT-2's fused q/k/v split on stick boundaries: DMA row moves, no PT matmul, every
    value (NaN and both infinities included) where eager has it."""
    x = torch.randn(2, 16, 384, generator=torch.Generator().manual_seed(4))
    x[0, 0, 130], x[1, 3, 300], x[0, 5, 2] = float("nan"), float("inf"), float("-inf")
    exe = spyrec.compile(torch.export.export(StickSplit(), (x,)))
    got, want = exe(x), StickSplit()(x)
    for g, w in zip(got, want):
        assert torch.equal(torch.isnan(g), torch.isnan(w))
        finite = ~torch.isnan(w)
        assert torch.equal(g[finite], w[finite])  # a move: bit for bit
    assert all(k.flops == 0 for k in exe.binary.kernels)  # DMA only: nothing on the PT


class SdpaFloatMaskInput(torch.nn.Module):
    """SDPA with an additive f32 mask passed in at run time."""

    def forward(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


@pytest.mark.parametrize("shape", [(16, 16), (1, 1, 16, 16), (1, 2, 16, 16)])
def test_sdpa_run_time_float_mask_fully_masked_rows_get_zeros(shape):
    """A run-time f32 mask row of -inf throughout: SDPA gives zeros for that query, the
    kernel's softmax NaN (-inf - -inf); the output is zeroed there (it was NaN, a wrong
    answer reported only under --check). A row with NaN or +inf stays NaN, as in eager."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 16, 64) for _ in range(3))
    mask = torch.randn(shape)
    model = SdpaFloatMaskInput()
    exe = spyrec.compile(torch.export.export(model, (q, k, v, mask)))
    mask[..., 3, :] = float("-inf")  # query 3 sees no key
    mask[..., 5, :7] = float("-inf")  # query 5 sees some
    mask[..., 9, 2] = float("nan")  # NaN in eager too
    mask[..., 11, 4] = float("inf")  # inf - inf: NaN in eager too
    out = assert_matches_eager(exe, model, q, k, v, mask)
    assert torch.equal(out[..., 3, :], torch.zeros_like(out[..., 3, :]))
    assert torch.isnan(out[..., 9, :]).all() and torch.isnan(out[..., 11, :]).all()
    assert torch.isfinite(out[..., 5, :]).all()
