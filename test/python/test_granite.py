"""The zoo's Granite-3.3-8B-shaped decoder layer at its real size against eager: prefill of 128
tokens and decode steps over a KV cache of 2048 entries (1024 in fp32), through the Python
API (fp16 and fp32) and once through the command line.

One layer is 200 M parameters (400 MB in fp16), so each dtype's layer is built once per
module and its two programs are compiled once and shared by the tests (design note 36 has the
times and memory measured). The rewrite itself is checked against Hugging Face's
`GraniteDecoderLayer` and its decode step against its prefill, on a small shape in eager.
"""

from __future__ import annotations

import gc
import subprocess
from typing import cast

import pytest
import torch
from conftest import assert_close, one
from xdsl.dialects.builtin import ArrayAttr, StringAttr

import spyrec
from spyrec.runtime.dl16 import round_dl16
from spyrec.zoo import (
    GraniteDecode,
    GraniteLayer,
    GranitePrefill,
    GraniteShape,
    fill_cache,
    granite_decode,
    granite_layer,
    granite_prefill,
)

SEQUENCE = 128
# fp16 K and V of one head over 2048 positions are 1 MiB, which a core's LX holds; in fp32
# they are 2 MiB, more than its 1.6 MB (the attention kernel keeps them whole, design note
# 36), so fp32 decodes over 1024 positions.
CACHE = {torch.float16: 2048, torch.float32: 1024}


def _positions(cache: int) -> tuple[int, ...]:
    """After a prefill of 128: the next two tokens, one deep in the cache, the last entry."""
    return (SEQUENCE, SEQUENCE + 1, 3 * cache // 4 - 3, cache - 1)


def _device_exact(x: torch.Tensor) -> torch.Tensor:
    """x rounded to what DL16 holds, so the device's input rounding changes nothing and the
    layer's own error is all the comparison sees."""
    return torch.from_numpy(round_dl16(x.float().numpy())).to(x.dtype)


def _assert_matches(exe: spyrec.Executable, got: torch.Tensor, want: torch.Tensor) -> None:
    """`assert_close` (docs/numerics.md). The layer's contribution (result - x, about 10x
    smaller than the residual stream) is not judged apart: with x exact on the device its
    error is the result's, rounded at the residual stream's magnitude, so no bound at the
    contribution's own scale can be tighter than the result's."""
    assert_close(exe, want, got)


# the fp32 layer (800 MB of weights, about two minutes of the slow tier) is in the opt-in
# tier (SPYREC_SLOW=1): the fp16 layer runs the same lowering at the model's own precision
@pytest.fixture(scope="module", params=[
    torch.float16, pytest.param(torch.float32, marks=pytest.mark.slow)], ids=["fp16", "fp32"])
def layer(request):
    torch.manual_seed(0)
    yield granite_layer(request.param)
    gc.collect()


@pytest.fixture(scope="module")
def prefill(layer):
    torch.manual_seed(1)
    model, (x,) = granite_prefill(layer.mlp.up_proj.weight.dtype, SEQUENCE, layer)
    x = _device_exact(x)
    yield model, x, spyrec.compile(torch.export.export(model, (x,)))


@pytest.fixture(scope="module")
def decode(layer):
    torch.manual_seed(2)
    dtype = layer.mlp.up_proj.weight.dtype
    model, inputs = granite_decode(dtype, CACHE[dtype], SEQUENCE, layer)
    yield model, spyrec.compile(torch.export.export(model, inputs))


def test_prefill_matches_eager(prefill):
    model, x, exe = prefill
    # Granite-3.3-8B's layer: two norms, q/o 4096x4096, k/v 4096x1024, MLP 3 x 4096x12800
    assert sum(p.numel() for p in model.parameters()) == 199_237_632
    assert [tuple(b.layout.shape) for b in exe.binary.inputs] == [(1, SEQUENCE, 4096)]
    with torch.no_grad():
        expected = model(x)
    _assert_matches(exe, one(exe(x)), expected)


def test_decode_steps_match_eager_with_the_updated_cache(decode):
    """Four tokens (fp16: positions 128, 129, 1533, 2047 of 2048): each step's output and
    both whole caches (the rows written and the ones kept) match eager's after the same
    steps."""
    model, exe = decode
    positions = _positions(model.k_cache.shape[2])
    assert len(exe.binary.outputs) == 1  # the caches are state, not outputs
    before = model.k_cache.clone()
    dtype = model.k_cache.dtype
    for step, pos in enumerate(positions):
        x = _device_exact(torch.randn(1, 1, 4096, generator=torch.Generator().manual_seed(step)
                                      ).to(dtype))
        position = torch.tensor([pos])
        with torch.no_grad():
            expected = model(x, position)
        _assert_matches(exe, exe(x, position), expected)
        _assert_matches(exe, exe.buffer("k_cache"), model.k_cache)
        _assert_matches(exe, exe.buffer("v_cache"), model.v_cache)
    changed = (model.k_cache != before).any(-1).nonzero()[:, 2].unique().tolist()
    assert changed == list(positions)


def _cli(cli: list[str], env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cli, *args], capture_output=True, text=True, env=env, timeout=600,
                          check=False)


@pytest.mark.slow  # a minute: the decode step through the command line stays in the slow tier
def test_prefill_through_the_command_line(spyrec_cli, cli_env, tmp_path):
    """`spyrec compile` and `spyrec run --check` on the saved fp16 prefill program."""
    torch.manual_seed(0)
    model, inputs = granite_prefill(torch.float16, SEQUENCE)
    pt2 = tmp_path / "granite.pt2"
    torch.export.save(torch.export.export(model, inputs), pt2)
    del model, inputs
    out = tmp_path / "granite.spyre"
    res = _cli(spyrec_cli, cli_env, "compile", str(pt2), "-o", str(out))
    assert res.returncode == 0, res.stderr
    res = _cli(spyrec_cli, cli_env, "run", str(out), "--check", str(pt2))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "worst element" in res.stdout and " ok" in res.stdout and "FAILED" not in res.stdout


# ---- the rewrite in eager, on a small shape -------------------------------------------------

SMALL = GraniteShape(hidden_size=256, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                     intermediate_size=512)


def test_the_rewrite_is_hugging_faces_granite_layer():
    """HF's GraniteModel (one layer, eager attention) on inputs_embeds equals the zoo's stack
    with HF's weights loaded by name."""
    transformers = pytest.importorskip("transformers")
    config = transformers.GraniteConfig(
        vocab_size=64, hidden_size=SMALL.hidden_size, intermediate_size=SMALL.intermediate_size,
        num_hidden_layers=1, num_attention_heads=SMALL.num_attention_heads,
        num_key_value_heads=SMALL.num_key_value_heads, head_dim=SMALL.head_dim,
        rms_norm_eps=SMALL.rms_norm_eps, rope_theta=SMALL.rope_theta,
        attention_multiplier=SMALL.attention_multiplier,
        residual_multiplier=SMALL.residual_multiplier,
        embedding_multiplier=SMALL.embedding_multiplier, attn_implementation="eager")
    torch.manual_seed(0)
    hf = transformers.GraniteModel(config).eval()
    layer = GraniteLayer(SMALL)
    layer.load_state_dict(hf.layers[0].state_dict(), strict=True)
    ours = GranitePrefill([layer], SMALL, final_norm=True).eval()
    ours.norm.load_state_dict(hf.norm.state_dict(), strict=True)  # type: ignore[union-attr]
    x = torch.randn(2, 16, SMALL.hidden_size)
    with torch.no_grad():
        assert torch.allclose(ours(x), hf(inputs_embeds=x).last_hidden_state, atol=1e-5)


def test_decode_steps_reproduce_the_prefill():
    """Decoding tokens one at a time from an empty cache gives the prefill's rows: the rotary
    position, the cache write and the mask of the decode step are the prefill's."""
    torch.manual_seed(0)
    layer = GraniteLayer(SMALL).eval()
    x = torch.randn(1, 12, SMALL.hidden_size)
    step = GraniteDecode(layer, cache=32, shape=SMALL)
    fill_cache(step)  # garbage at every position not yet written: the mask must hide it
    with torch.no_grad():
        full = GranitePrefill([layer], SMALL)(x)
        rows = [step(x[:, i:i + 1], torch.tensor([i])) for i in range(x.shape[1])]
    assert torch.allclose(torch.cat(rows, dim=1), full, atol=1e-5)



def test_a_decode_step_through_the_command_line(spyrec_cli, cli_env, tmp_path):
    """`spyrec run --check` feeds a decode step the .pt2's own example inputs: a random
    position would not be a cache slot. A small layer of the same structure keeps it quick."""
    torch.manual_seed(0)
    step = fill_cache(GraniteDecode(GraniteLayer(SMALL).eval(), cache=64, shape=SMALL)).eval()
    pt2 = tmp_path / "decode.pt2"
    inputs = (torch.randn(1, 1, SMALL.hidden_size), torch.tensor([37]))
    torch.export.save(torch.export.export(step, inputs), pt2)
    out = tmp_path / "decode.spyre"
    res = _cli(spyrec_cli, cli_env, "compile", str(pt2), "-o", str(out))
    assert res.returncode == 0, res.stderr
    res = _cli(spyrec_cli, cli_env, "run", str(out), "--check", str(pt2))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"the example inputs saved in {pt2}" in res.stderr
    assert " ok" in res.stdout and "FAILED" not in res.stdout


def test_the_demo_lists_the_zoo_and_names_an_unknown_model():
    from click.testing import CliRunner

    from spyrec.cli import main

    res = CliRunner().invoke(main, ["demo", "--list"])
    assert res.exit_code == 0, res.output
    assert "granite-8b-layer" in res.output and "granite-8b-decode" in res.output
    res = CliRunner().invoke(main, ["demo", "--model", "granite-9b"])
    assert res.exit_code != 0
    assert "'granite-9b' is not in the zoo; choose one of decoder," in res.output


def test_the_layer_fuses_norms_rotary_swiglu_and_residuals():
    """spyre-fuse on a small Granite layer (design note 50): each RMS norm is one kernel, the
    rotary of q and of k one kernel around its half-rotation matmul (beside the kernels
    that carry its NaN code, note 63), silu and the gate * up
    product the gate and up matmuls' epilogues, the residual scaling and adds the o and down
    projections'; the joins the cost model weighed are in the kernels' `spyre.fusion`."""
    from spyrec.dialects.spyre import KernelOp
    from spyrec.driver import compile_program

    torch.manual_seed(0)
    model = GranitePrefill([granite_layer(torch.float16, SMALL)], SMALL).eval()
    x = torch.randn(1, 32, SMALL.hidden_size, dtype=torch.float16)
    result = compile_program(torch.export.export(model, (x,)), stop_after="graph")
    assert result.module is not None
    kernels = [op for op in result.module.walk() if isinstance(op, KernelOp)]

    def strings(kernel: KernelOp, key: str) -> list[str]:
        return [s.data for s in cast("ArrayAttr[StringAttr]", kernel.attributes[key]).data]

    fused = {k.sym_name.data: strings(k, "fused") for k in kernels
             if cast(StringAttr, k.attributes["reason"]).data != "row move (DMA only)"}
    # (a broadcast is named after the product it feeds)
    ledger = {k.sym_name.data: strings(k, "spyre.fusion")
              for k in kernels if "spyre.fusion" in k.attributes}

    def kernel_of(node: str) -> str:
        return next(name for name, nodes in fused.items() if node in nodes)

    assert kernel_of("rsqrt") == kernel_of("mul_2")  # input norm: reduction and scale
    assert kernel_of("rsqrt_1") == kernel_of("mul_9")  # post-attention norm
    # rotary of q and of k: the half rotation's matmul (moving the finite part; its NaN code
    # moves in a kernel of its own, design note 63) with the whole rotary as its epilogue
    assert kernel_of("mul_3") == kernel_of("add_1") and "cat_1" in fused[kernel_of("add_1")]
    assert kernel_of("mul_5") == kernel_of("add_2") and "cat_2" in fused[kernel_of("add_2")]
    assert kernel_of("linear_4") == kernel_of("silu")  # gate + silu
    assert kernel_of("linear_5") == kernel_of("mul_10")  # up + the SwiGLU product
    assert kernel_of("linear_3") == kernel_of("add_3")  # o + residual
    assert kernel_of("linear_6") == kernel_of("add_5")  # down + residual
    assert kernel_of("mean_1") != kernel_of("linear_3")  # the cost model kept it out
    assert any("row reduction mean_1 kept out" in d for d in ledger[kernel_of("mean_1")])
    assert any(d.startswith("joined mul_10:") for d in ledger[kernel_of("mul_10")])
    assert len(kernels) == 22  # 18, and per rotation a codes kernel and the code's move
    # the fused program against eager (`assert_close`)
    x = _device_exact(x)
    exe = spyrec.compile(torch.export.export(model, (x,)))
    with torch.no_grad():
        expected = model(x)
    _assert_matches(exe, one(exe(x)), expected)
