"""Symbolic sizes (torch.export.Dim): one .spyre compiled at the upper bounds runs every size
in range, the host padding the inputs and cropping the outputs; programs whose padding could
reach a real result, and sizes out of range, are refused with what to do."""

from __future__ import annotations

import subprocess

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_close, export_symbolic_decoder, one

import spyrec
from spyrec.diagnostics import CompileError, SpyrecError
from spyrec.target.container import ContainerError, read_spyre, write_spyre

SEQ = torch.export.Dim("seq", min=2, max=48)


def _close(exe, out, expected):
    assert_close(exe, expected, out)


@pytest.fixture(scope="module")
def decoder():
    return export_symbolic_decoder(SEQ)


def test_decoder_with_a_symbolic_sequence_runs_every_size(decoder, tmp_path):
    """Causal attention, RMS norms, SwiGLU, residuals: row-local along the sequence, so the
    padded rows never reach a real one. Compiled once (at 48), run at 2, 19 and 48."""
    model, ep = decoder
    path = tmp_path / "decoder.spyre"
    spyrec.compile(ep, output=path)
    exe = spyrec.load(path)
    assert exe.binary.symbols == {"x.dim1": (2, 48)}
    assert exe.binary.inputs[0].symbolic == {1: "x.dim1"}
    assert exe.binary.outputs[0].symbolic == {1: "x.dim1"}
    assert exe.binary.inputs[0].layout.shape == (2, 48, 128)
    for size in (2, 19, 48):
        x = torch.randn(2, size, 128).half()
        out = one(exe(x))
        assert out.shape == (2, size, 128)
        with torch.no_grad():
            _close(exe, out, model(x))


def test_sizes_out_of_range_or_inconsistent_are_refused(decoder):
    _, ep = decoder
    exe = spyrec.compile(ep)
    with pytest.raises(SpyrecError, match=r"input 'x' dim 1: size 49 is outside the range "
                                          r"\[2, 48\] of symbolic size 'x.dim1'"):
        exe(torch.randn(2, 49, 128).half())
    with pytest.raises(SpyrecError, match=r"expected shape \[2, x.dim1, 128\]"):
        exe(torch.randn(3, 8, 128).half())

    class Pair(torch.nn.Module):
        def forward(self, a, b):
            return a * b

    batch = torch.export.Dim("batch", min=1, max=8)
    pair = torch.export.export(Pair(), (torch.randn(4, 64), torch.randn(4, 64)),
                               dynamic_shapes=({0: batch}, {0: batch}))
    exe = spyrec.compile(pair)
    a, b = torch.randn(3, 64), torch.randn(3, 64)
    assert torch.allclose(one(exe(a, b)), a * b)
    with pytest.raises(SpyrecError, match=r"input 'b' dim 0: size 5, but symbolic size "
                                          r"'a.dim0' is 3 in an earlier input"):
        exe(a, torch.randn(5, 64))


class _Pool(torch.nn.Module):
    def forward(self, x):
        return x.mean(1)


class _Last(torch.nn.Module):
    def forward(self, x):
        return x[:, -1] * 2


@pytest.mark.parametrize("module,message", [
    (_Pool, r"node mean \(aten.mean.dim\): it reduces over dim 1, which holds a symbolic size"),
    (_Last, r"node select \(aten.select.int\): it indexes symbolic dim 1"),
], ids=["mean-over-seq", "last-position"])
def test_ops_that_would_read_the_padding_are_refused(module, message):
    ep = torch.export.export(module(), (torch.randn(2, 16, 128),), dynamic_shapes=({1: SEQ},))
    with pytest.raises(CompileError, match=message):
        spyrec.compile(ep)


def test_a_symbolic_size_needs_an_upper_bound():
    ep = torch.export.export(torch.nn.Linear(64, 32), (torch.randn(4, 64),),
                             dynamic_shapes=({0: torch.export.Dim("batch")},))
    with pytest.raises(CompileError, match=r"input 'input' dim 0 is symbolic without an upper "
                                           r"bound.*Dim\('seq', max=2048\)"):
        spyrec.compile(ep)


def test_the_signature_survives_the_file_and_a_bad_reference_is_refused(decoder, tmp_path):
    _, ep = decoder
    binary = spyrec.compile(ep).binary
    path = tmp_path / "d.spyre"
    write_spyre(binary, path)
    assert read_spyre(path) == binary
    binary.outputs[0].symbolic = {1: "nope"}
    with pytest.raises(ContainerError, match=r"dim 1 names symbol 'nope', which the signature "
                                             r"does not declare"):
        write_spyre(binary, tmp_path / "bad.spyre")
    assert not (tmp_path / "bad.spyre").exists()


def test_cli_inspect_and_run_at_a_size(decoder, spyrec_cli, cli_env, tmp_path):
    _, ep = decoder
    pt2, out = tmp_path / "d.pt2", tmp_path / "d.spyre"
    torch.export.save(ep, pt2)
    def run(*args):
        return subprocess.run([*spyrec_cli, *args], capture_output=True, text=True,
                              env=cli_env, timeout=600, check=False)

    res = run("compile", str(pt2), "-o", str(out))
    assert res.returncode == 0, res.stderr
    res = run("inspect", str(out), "--no-programs")
    assert "symbolic size x.dim1: 2..48 (compiled at 48)" in res.stdout
    assert "input x: [2, x.dim1, 128] float16" in res.stdout
    assert "ComputeOnHost" in res.stdout
    res = run("run", str(out), "--size", "x.dim1=7", "--check", str(pt2))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ok" in res.stdout
    res = run("run", str(out), "--size", "seq=7")
    assert res.returncode != 0 and "no symbolic size 'seq' (the binary has: x.dim1)" in res.stderr


# ---- padding rules of transformers' idioms (design note 73) ------------------------------

RULES_SEQ = torch.export.Dim("seq", min=2, max=16)


def _positions(x):
    return torch.arange(x.shape[1]).unsqueeze(0)  # [1, s]


class _PackedSequences(torch.nn.Module):
    """transformers' packed-sequence detection: a static -1 in front of the position ids
    (an extent s + 1), the neighbours' difference (slices [:-1] and [1:]), a cumsum along
    the sequence, and a causal mask from the positions by advanced indexing."""

    def forward(self, x):
        pos = _positions(x)
        ids = torch.cat([pos[:, :1] - 1, pos], dim=-1)
        seq_id = torch.cumsum((ids[:, 1:] - ids[:, :-1] != 1).int(), -1)  # [1, s]
        rows = torch.arange(x.shape[1])
        causal = pos[0][rows[None, :]] <= pos[0][rows[:, None]]  # [s, s]
        mask = causal & (seq_id[0][rows[:, None]] == seq_id[0][rows[None, :]])
        q = x.view(1, -1, 2, 64).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        return y.transpose(1, 2).reshape(1, -1, 128) * seq_id.unsqueeze(-1).half()


class _TokenTypes(torch.nn.Module):
    """BERT's token types: a static buffer gathered at the position ids, then embedded."""

    types: torch.Tensor

    def __init__(self):
        super().__init__()
        self.register_buffer("types", (torch.arange(64) % 3).unsqueeze(0))
        self.embed = torch.nn.Embedding(3, 128)

    def forward(self, x):
        pos = _positions(x)
        return x + self.embed(torch.gather(self.types, 1, pos)).half()


class _RotateHalf(torch.nn.Module):
    """The rotary embedding's half rotation: chunks and a cat along the static head dim."""

    def forward(self, x):
        x1, x2 = x.chunk(2, dim=-1)
        return x * 0.5 + torch.cat([-x2, x1], dim=-1)


@pytest.mark.parametrize("module", [_PackedSequences, _TokenTypes, _RotateHalf],
                         ids=["packed-sequences", "token-types", "rotate-half"])
def test_position_idioms_run_every_size(module):
    """Compiled at 16, run at the lower bound, between and at the bound: each matches
    eager (the position tensors are folded at 16 and their real block is the one eager
    computes at each size)."""
    torch.manual_seed(0)
    model = module().half().eval()
    ep = torch.export.export(model, (torch.randn(1, 16, 128).half(),),
                             dynamic_shapes=({1: RULES_SEQ},))
    exe = spyrec.compile(ep)
    for size in (2, 7, 16):
        x = torch.randn(1, size, 128).half()
        with torch.no_grad():
            _close(exe, one(exe(x)), model(x))


class _CatAfter(torch.nn.Module):
    def forward(self, x):
        return torch.cat([x, x[:, :1]], dim=1)[:, 1:] * 2


class _Tail(torch.nn.Module):
    def forward(self, x):
        return x[:, -1:] * 2


class _ScanMerged(torch.nn.Module):
    def forward(self, x):
        return torch.cumsum(x.reshape(-1, 128), 0).view(2, -1, 128)


class _UnprovenIndex(torch.nn.Module):
    def forward(self, x):
        return x[0][_positions(x)[0] + 1] * 2


@pytest.mark.parametrize("module,message", [
    (_CatAfter, (r"node slice_\d+ \(aten.slice.Tensor\): it slices symbolic dim 1, whose "
                  r"static positions sit after the padding")),
    (_Tail, r"node slice_1 \(aten.slice.Tensor\): it slices symbolic dim 1 other than as a prefix"),
    (_ScanMerged, (r"node cumsum \(aten.cumsum.default\): it scans dim 0, which merges a "
                   r"symbolic size")),
    (_UnprovenIndex, (r"node index \(aten.index.Tensor\): it indexes symbolic dim 0 with "
                      r"indices spyrec cannot prove below its size")),
], ids=["cat-after-symbolic", "last-positions", "scan-over-merged", "unproven-index"])
def test_idioms_that_would_read_the_padding_are_refused(module, message):
    ep = torch.export.export(module(), (torch.randn(2, 16, 128).half(),),
                             dynamic_shapes=({1: RULES_SEQ},))
    with pytest.raises(CompileError, match=message):
        spyrec.compile(ep)


# ---- the host's key mask (design note 81) ------------------------------------------------


def _heads(x):
    return x.view(2, -1, 2, 64).transpose(1, 2)


def _merge(y):
    return y.transpose(1, 2).reshape(2, -1, 128)


class _Bidirectional(torch.nn.Module):
    """An encoder's attention: every key visible to every query, no mask."""

    def forward(self, x):
        q = _heads(x)
        return _merge(F.scaled_dot_product_attention(q, q, q))


class _SeeAll(torch.nn.Module):
    """Bidirectional attention through a mask of the sizes alone: every key visible."""

    def forward(self, x):
        q = _heads(x)
        mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool)
        return _merge(F.scaled_dot_product_attention(q, q, q, attn_mask=mask))


class _SoftmaxOverKeys(torch.nn.Module):
    """Eager attention (MPNet's): a softmax over the symbolic keys in f32, then a
    contraction over them."""

    def forward(self, x):
        q = _heads(x)
        weights = torch.softmax((q @ q.transpose(-1, -2)).float() * 0.125, -1).half()
        return _merge(weights @ q)


class _HalfSoftmaxOverKeys(torch.nn.Module):
    """The same in fp16: the masked softmax runs in f32 (DL16 holds no -inf), cast back."""

    def forward(self, x):
        q = _heads(x)
        return _merge(torch.softmax(q @ q.transpose(-1, -2) * 0.125, -1) @ q)


KEYED = [_Bidirectional, _SeeAll, _SoftmaxOverKeys, _HalfSoftmaxOverKeys]
KEYED_IDS = ["sdpa-without-mask", "sdpa-all-visible-mask", "eager-softmax", "eager-softmax-f16"]


def _keyed(module):
    torch.manual_seed(0)
    model = module()
    ep = torch.export.export(model, (torch.randn(2, 16, 128).half(),),
                             dynamic_shapes=({1: RULES_SEQ},))
    return model, spyrec.compile(ep, cache=False)


@pytest.mark.parametrize("module", KEYED, ids=KEYED_IDS)
def test_the_host_key_mask_hides_the_padded_keys(module):
    """Compiled at 16 with one more input, the key mask the host makes (not the caller's);
    run at the lower bound, between and at the bound: each matches eager."""
    model, exe = _keyed(module)
    mask = exe.binary.inputs[-1]
    assert (mask.name, mask.made, mask.symbolic, mask.layout.shape) == \
        ("x_dim1_keys", "x.dim1", {0: "x.dim1"}, (16,))
    assert [b.name for b in exe.binary.user_inputs] == ["x"]
    for size in (2, 7, 16):
        x = torch.randn(2, size, 128).half()
        _close(exe, one(exe(x)), model(x))


@pytest.mark.parametrize("module", KEYED, ids=KEYED_IDS)
def test_without_the_key_mask_the_verdict_catches_the_wrong_answer(monkeypatch, module):
    """The injected bug: the same programs compiled without the key mask match eager at
    the bound (no padding) and fail the check below it (real queries attend the padding)."""
    from spyrec.frontend import symbolic
    from spyrec.verdict import check_outputs

    monkeypatch.setattr(symbolic, "add_key_masks", lambda module, keyed: [])
    model, exe = _keyed(module)
    full, short = torch.randn(2, 16, 128).half(), torch.randn(2, 7, 128).half()
    _close(exe, one(exe(full)), model(full))
    assert not check_outputs(model(short), one(exe(short)), exe).ok


class _PaddingSeen(torch.nn.Module):
    """A mask from an input whose padding (0) lets the keys through: not provable."""

    def forward(self, x, m):
        q = _heads(x)
        return _merge(F.scaled_dot_product_attention(q, q, q, attn_mask=m[:, None, None, :] == 0))


class _SoftmaxMerged(torch.nn.Module):
    """A softmax over a dim that merges the symbol with static sizes: its padding sits
    between real positions, not after them."""

    def forward(self, x):
        return torch.softmax(x.reshape(-1).float(), 0).view(2, -1, 128)


def test_what_the_key_mask_cannot_cover_is_refused_by_name():
    ep = torch.export.export(_PaddingSeen(), (torch.randn(2, 16, 128).half(),
                                              torch.ones(2, 16, dtype=torch.long)),
                             dynamic_shapes=({1: RULES_SEQ}, {1: RULES_SEQ}))
    with pytest.raises(CompileError, match=r"scaled_dot_product_attention.default\): its key "
                                           r"length is symbolic and its mask depends on the "
                                           r"inputs' values without provably hiding"):
        spyrec.compile(ep)
    ep = torch.export.export(_SoftmaxMerged(), (torch.randn(2, 16, 128).half(),),
                             dynamic_shapes=({1: RULES_SEQ},))
    with pytest.raises(CompileError, match=r"node (_)?softmax .*its key dim 0 holds the "
                                           r"symbolic extent .*not one symbol's length"):
        spyrec.compile(ep)


def test_a_key_mask_binding_survives_the_file_and_a_bad_one_is_refused(tmp_path):
    _, exe = _keyed(_Bidirectional)
    binary = exe.binary
    write_spyre(binary, tmp_path / "k.spyre")
    assert read_spyre(tmp_path / "k.spyre") == binary
    binary.inputs[-1].symbolic = {}
    with pytest.raises(ContainerError, match=r"input 'x_dim1_keys' is the key mask of symbol "
                                             r"'x.dim1', so it must be 1-D and sized by it"):
        write_spyre(binary, tmp_path / "bad.spyre")


class _PaddingMask(torch.nn.Module):
    """Bidirectional attention under a run-time padding mask sized by the same symbol, as
    transformers builds it from attention_mask: the host pads the mask with zeros, so every
    padded key is masked for every query."""

    def forward(self, x, m):
        q = x.view(2, -1, 2, 64).transpose(1, 2)
        rows = torch.arange(x.shape[1])
        keys = m.bool()[torch.arange(2)[:, None, None, None], rows[None, None, None, :]]
        return F.scaled_dot_product_attention(q, q, q, attn_mask=keys).transpose(1, 2) \
            .reshape(2, -1, 128)


def test_a_padding_mask_input_hides_the_padded_keys():
    """Run at the lower bound, between and at the bound, the second row's last keys masked
    too: each matches eager."""
    torch.manual_seed(0)
    model = _PaddingMask()
    ep = torch.export.export(model, (torch.randn(2, 16, 128).half(),
                                     torch.ones(2, 16, dtype=torch.long)),
                             dynamic_shapes=({1: RULES_SEQ}, {1: RULES_SEQ}))
    exe = spyrec.compile(ep)
    for size in (2, 7, 16):
        x, m = torch.randn(2, size, 128).half(), torch.ones(2, size, dtype=torch.long)
        m[1, size - 1:] = 0
        _close(exe, one(exe(x, m)), model(x, m))


def test_cli_makes_the_key_mask_and_checks_against_the_source(spyrec_cli, cli_env, tmp_path):
    """`spyrec inspect` names the made input; `spyrec run` draws and `--check` compares the
    caller's inputs only, the host making the key mask."""
    ep = torch.export.export(_Bidirectional(), (torch.randn(2, 16, 128).half(),),
                             dynamic_shapes=({1: RULES_SEQ},))
    pt2, out = tmp_path / "b.pt2", tmp_path / "b.spyre"
    torch.export.save(ep, pt2)
    spyrec.compile(ep, output=out, cache=False)

    def run(*args):
        return subprocess.run([*spyrec_cli, *args], capture_output=True, text=True,
                              env=cli_env, timeout=600, check=False)

    res = run("inspect", str(out), "--no-programs")
    assert "input x_dim1_keys: [x.dim1] int64" in res.stdout
    assert "(made by the host: the key mask of x.dim1)" in res.stdout
    res = run("run", str(out), "--size", "x.dim1=7", "--check", str(pt2))
    assert res.returncode == 0 and "ok" in res.stdout, res.stdout + res.stderr
