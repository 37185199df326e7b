"""The padding rules of design note 93 (`spyrec.frontend.symbolic`): each new rule compiles a
program once at the bound of its symbolic sequence length and runs it at sizes inside the
bounds against eager; the unsafe form next to it stays refused, naming the node."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from conftest import assert_close

import spyrec
from spyrec.diagnostics import CompileError

SEQ = torch.export.Dim("seq", min=3, max=16)
SIZES = (3, 9, 16)


def _compile(model: torch.nn.Module, width: int = 32):
    torch.manual_seed(0)
    ep = torch.export.export(model.eval(), (torch.randn(1, 16, width),),
                             dynamic_shapes=({1: SEQ},))
    return spyrec.compile(ep, cache=False)


def _runs_every_size(model: torch.nn.Module, width: int = 32) -> None:
    exe = _compile(model, width)
    gen = torch.Generator().manual_seed(1)
    for size in SIZES:
        x = torch.randn(1, size, width, generator=gen)
        with torch.no_grad():
            expected = model(x)
        outputs = exe(x)
        assert_close(exe, expected, outputs)


def _right_at_the_bound_wrong_below(model: torch.nn.Module) -> None:
    """An injected bug's program: right at the bound (no padding), wrong at size 5, and the
    verdict says so."""
    from spyrec.verdict import check_outputs

    exe = _compile(model)
    gen = torch.Generator().manual_seed(1)
    full, short = torch.randn(1, 16, 32, generator=gen), torch.randn(1, 5, 32, generator=gen)
    with torch.no_grad():
        assert_close(exe, model(full), exe(full))
        assert not check_outputs(model(short), exe(short), exe).ok


def _refused(model: torch.nn.Module, match: str, width: int = 32) -> None:
    with pytest.raises(CompileError, match=match):
        _compile(model, width)


class _TopK(torch.nn.Module):
    """A router: top-2 of 8 expert scores per token (a static dim), or along the tokens."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.topk(x[..., :8].softmax(-1), 2, dim=self.dim).values * 3.0


def test_topk_over_a_static_dim_runs_every_size():
    _runs_every_size(_TopK())


def test_topk_over_the_symbolic_dim_is_refused():
    _refused(_TopK(dim=1), r"node topk \(aten.topk.default\): it ranks along dim 1, which "
                           "holds a symbolic size")


class _HandAttention(torch.nn.Module):
    """Eager attention written by hand over the symbolic key dim: a causal additive mask of
    the sizes (or none), logsumexp (a sink scale), a max subtracted, attention sinks
    concatenated after the keys and dropped after the softmax, the sum of the weights."""

    def __init__(self, sinks: bool = True, causal: bool = True):
        super().__init__()
        self.sinks, self.causal = sinks, causal
        self.q, self.k, self.v = (torch.nn.Linear(32, 32) for _ in range(3))
        self.sink = torch.nn.Parameter(torch.randn(1, 1, 1))

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        s = x.shape[1]
        scores = q @ k.transpose(-1, -2) * 0.18
        if self.causal:
            scores = scores + torch.full((s, s), torch.finfo(torch.float32).min).triu(1)
        lse = torch.logsumexp(scores, -1, keepdim=True)
        if self.sinks:
            scores = torch.cat([scores, self.sink.expand(1, s, 1)], -1)
        scores = scores - scores.max(-1, keepdim=True).values
        probs = scores.softmax(-1)
        if self.sinks:
            probs = probs[..., :-1]
        return probs @ v * torch.sigmoid(lse) + probs.sum(-1, keepdim=True)


@pytest.mark.parametrize(("sinks", "causal"), [(False, True), (True, True), (True, False)],
                         ids=["causal", "causal-sinks", "bidirectional-sinks"])
def test_reductions_over_masked_keys_run_every_size(sinks, causal):
    _runs_every_size(_HandAttention(sinks, causal))


def test_without_the_key_mask_the_verdict_catches_the_wrong_answer(monkeypatch):
    """The injected bug: bidirectional logsumexp, max and softmax read the padded keys (no
    host key mask): right at the bound, wrong below it, and the verdict says so."""
    from spyrec.frontend import symbolic

    monkeypatch.setattr(symbolic, "add_key_masks", lambda module, keyed: [])
    _right_at_the_bound_wrong_below(_HandAttention(sinks=False, causal=False))


class _Mean(torch.nn.Module):
    def forward(self, x):
        return x * x.mean(1, keepdim=True)


class _SumOfScores(torch.nn.Module):
    def forward(self, x):
        return x * (x @ x.transpose(-1, -2)).sum(-1, keepdim=True)


class _KeptSink(torch.nn.Module):
    def forward(self, x):
        scores = torch.cat([x @ x.transpose(-1, -2), x[..., :1]], -1).softmax(-1)
        return scores[..., 1:] @ x


class _Norms(torch.nn.Module):
    """Vector norms: over the static feature dim (hf:neomme's, `ord` before `dim`: a
    compiler crash reading 2.0 as the dim), and over the symbolic one."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x / torch.linalg.vector_norm(x, 2.0, dim=self.dim, keepdim=True)


def test_a_vector_norm_over_a_static_dim_runs_every_size():
    _runs_every_size(_Norms())


@pytest.mark.parametrize(("model", "match"), [
    (_Norms(dim=1), (r"node linalg_vector_norm \(aten.linalg_vector_norm.default\): it "
                     r"reduces over dim 1, which holds a symbolic ")),
    (_Mean(), r"node mean \(aten.mean.dim\): it reduces over dim 1, which holds a symbolic "),
    (_SumOfScores(), r"node sum_1 \(aten.sum.dim_IntList\): it reduces over dim 2"),
    (_KeptSink(), (r"node slice_\d+ \(aten.slice.Tensor\): it slices symbolic dim 2, whose "
                   "static positions sit after the padding")),
], ids=["norm", "mean", "sum-of-nonzero-padding", "slice-keeping-padding"])
def test_unmasked_reductions_are_refused(model, match):
    _refused(model, match)


class _Blocks(torch.nn.Module):
    """Blocks of a merged symbolic dim, as the dense MoE dispatch makes them: repeat and a
    cat of equal pieces along the tokens, then each block sliced back."""

    def __init__(self, start: int = 0):
        super().__init__()
        self.start = start

    def forward(self, x):
        s = x.shape[1]
        tiled = x.repeat(1, 2, 1) * torch.arange(32.0)
        joined = torch.cat([tiled, x.repeat(1, 2, 1) * 2], 1)
        return tiled[:, self.start:self.start + s] + joined[:, 3 * s:] - joined[:, s:2 * s]


def test_blocks_of_a_merged_symbolic_dim_run_every_size():
    _runs_every_size(_Blocks())


def test_a_slice_across_blocks_is_refused():
    _refused(_Blocks(start=1), r"aten.slice.Tensor\): it slices dim 1, which merges a "
                               "symbolic size, other than as one whole block")


class _Halves(torch.nn.Module):
    """A key assembled in place along a static dim (`new_empty`, then `copy_` into slices:
    DeepSeek's expand_kv), or written along the symbolic dim."""

    def __init__(self, along_tokens: bool = False):
        super().__init__()
        self.along_tokens = along_tokens

    def forward(self, x):
        key = x.new_empty(x.shape)
        if self.along_tokens:
            key.copy_(x)
            key[:, 1:] = 0.0
            return key
        key[..., :16].copy_(x[..., 16:])
        key[..., 16:].copy_(x[..., :16] * 2)
        return key


def test_writes_along_a_static_dim_run_every_size():
    _runs_every_size(_Halves())


def test_writes_along_the_symbolic_dim_are_refused():
    _refused(_Halves(along_tokens=True), r"it writes along dim 1, which holds a symbolic size")


def test_the_sweep_exports_at_the_least_length_torch_suggests():
    """A model that needs 4 tokens (its code checks it): torch refuses `min=2` and suggests
    `min=4`; the sweep exports with that range, and says so. One that needs more tokens
    than the run has stays torch's failure."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import sweep_models  # pyright: ignore[reportMissingImports]

    class Least(torch.nn.Module):
        def __init__(self, least: int):
            super().__init__()
            self.least = least

        def forward(self, x):
            torch._check(x.shape[1] >= self.least)
            return x * 2

    x = torch.randn(1, sweep_models.SEQ, 8)
    built = sweep_models.Built(Least(4), (x,), (x[:, :sweep_models.DYNAMIC_RUN_SEQ],),
                               ({1: torch.export.Dim("seq", min=2, max=sweep_models.SEQ)},))
    program = sweep_models.export(built)
    (symbol,) = program.range_constraints.values()
    assert (int(symbol.lower), int(symbol.upper)) == (4, sweep_models.SEQ)
    assert built.notes == [(f"exported with Dim('seq', min=4, max={sweep_models.SEQ}), "
                            "torch's least length for the model")]
    built.module = Least(sweep_models.DYNAMIC_RUN_SEQ + 1)
    with pytest.raises(Exception, match="Constraints violated"):
        sweep_models.export(built)


class _ShortConv(torch.nn.Module):
    """A depthwise 1-D convolution along the tokens (Mamba's and LFM's short convolution):
    causal (padding k - 1, sliced back to the length), reaching forward (padding k // 2),
    causal with its last L positions read, or a kernel of 1 read whole (squeezebert's
    pointwise convolutions)."""

    def __init__(self, padding: int = 3, read: str = "prefix", taps: int = 4):
        super().__init__()
        self.conv = torch.nn.Conv1d(32, 32, taps, groups=32, padding=padding)
        self.read = read

    def forward(self, x):
        h = (x + 1.0).transpose(1, 2)  # the padded positions are 1, not the host's zeros
        y = self.conv(h)
        length = h.shape[-1]
        if self.read == "prefix":
            y = y[:, :, :length]
        elif self.read == "last":
            y = y[:, :, 3:3 + length]  # its last L positions
        return torch.nn.functional.silu(y.transpose(1, 2)) * x


@pytest.mark.parametrize("model", [_ShortConv(), _ShortConv(padding=0, read="whole", taps=1)],
                         ids=["causal", "pointwise"])
def test_a_causal_convolution_runs_every_size(model):
    _runs_every_size(model)


@pytest.mark.parametrize(("model", "match"), [
    (_ShortConv(padding=2), (r"node convolution \(aten.convolution.default\): its window "
                             r"reaches 1 positions forward")),
    (_ShortConv(read="last"), (r"node convolution \(aten.convolution.default\): it convolves "
                               r"over a symbolic length, and slice\w* reads it other than as "
                               r"the slice back to that length")),
])
def test_convolutions_reading_the_padding_are_refused(model, match):
    _refused(model, match)


def test_without_the_slice_check_the_verdict_catches_the_wrong_answer(monkeypatch):
    """The injected bug: the rule taking every position of a causal convolution's output as
    real (an extent L + 3, so the slice of its last L positions, [3, 3 + L), passes the
    slice rule):
    right at the bound, wrong below it (the padded inputs feed those positions), and the
    verdict says so."""
    from spyrec.frontend import symbolic

    def lenient(self, node):
        src = self.of(node.args[0])
        self.structure[node] = (src[0], (32,), (src[2][0] + 3,))

    monkeypatch.setattr(symbolic._Checker, "convolution", lenient)
    _right_at_the_bound_wrong_below(_ShortConv(read="last"))
