"""What torch-spyre sends back to the CPU, on the device: embedding lookups, the KV-cache update
of a decode step, and the integer comparisons that build its attention mask.

The decode step is a torch.nn attention layer with K and V caches of 256 positions registered
as buffers: it projects one new token, writes its K and V rows at position `pos`
(`index_copy_` and `cache[:, :, pos] = v`, which torch.export turns into `index_put` and
buffer mutations), masks the positions after `pos` (`arange(256) <= pos`, computed on the
device from the input) and attends over the whole cache. The compiled program keeps the caches
on the device and updates them in place (`dma.scatter`); `Executable.buffer` reads them back,
and they must equal the eager module's buffers after the same calls.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import assert_close, one
from xdsl.parser import Parser

import spyrec
from spyrec.diagnostics import CompileError, UnsupportedOpsError
from spyrec.driver import make_context, module_text
from spyrec.ktir import execute
from spyrec.registry import PASSES
from spyrec.runtime.memory import DeviceFault

CACHE = 256


class DecodeStep(torch.nn.Module):
    """One decode step of an attention layer over a KV cache of CACHE positions."""

    k_cache: torch.Tensor  # buffers
    v_cache: torch.Tensor

    def __init__(self, d: int = 128, heads: int = 2, kv_heads: int = 2, head_dim: int = 64):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.q = torch.nn.Linear(d, heads * head_dim)
        self.k = torch.nn.Linear(d, kv_heads * head_dim)
        self.v = torch.nn.Linear(d, kv_heads * head_dim)
        self.o = torch.nn.Linear(heads * head_dim, d)
        self.register_buffer("k_cache", torch.zeros(1, kv_heads, CACHE, head_dim))
        self.register_buffer("v_cache", torch.zeros(1, kv_heads, CACHE, head_dim))

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        q = self.q(x).view(1, 1, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(1, 1, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(1, 1, self.kv_heads, self.head_dim).transpose(1, 2)
        self.k_cache.index_copy_(2, pos, k)
        self.v_cache[:, :, pos] = v
        valid = (torch.arange(CACHE) <= pos).view(1, CACHE)
        attn = F.scaled_dot_product_attention(q, self.k_cache, self.v_cache, attn_mask=valid,
                                              enable_gqa=self.heads != self.kv_heads)
        return self.o(attn.transpose(1, 2).reshape(1, 1, self.heads * self.head_dim))


def _layer(dtype: torch.dtype, **kwargs: int) -> DecodeStep:
    torch.manual_seed(0)
    layer = DecodeStep(**kwargs).eval()
    with torch.no_grad():  # a cache already holding earlier tokens (and garbage past them)
        layer.k_cache.normal_()
        layer.v_cache.normal_()
    return layer.to(dtype)


def _close(exe: spyrec.Executable, got: torch.Tensor, want: torch.Tensor) -> None:
    assert_close(exe, want, got)


@pytest.mark.parametrize("dtype,kwargs", [
    (torch.float32, {}), (torch.float16, {}), (torch.float32, {"heads": 4}),
], ids=["fp32", "fp16", "gqa-fp32"])
def test_decode_step_matches_eager_with_the_updated_cache(dtype, kwargs):
    layer = _layer(dtype, **kwargs)
    x = torch.randn(1, 1, 128, generator=torch.Generator().manual_seed(1)).to(dtype)
    exe = spyrec.compile(torch.export.export(layer, (x, torch.tensor([5]))))
    assert len(exe.binary.outputs) == 1  # the caches are state, not outputs
    scatters = [k.provenance for k in exe.binary.kernels
                if any(i.op == "dma.scatter" for p in k.programs.values() for i in p)]
    assert scatters == [["index_put"], ["index_put_1"]]
    before = layer.k_cache.clone()
    for step, pos in enumerate((5, 6, 200)):
        x = torch.randn(1, 1, 128, generator=torch.Generator().manual_seed(10 + step)).to(dtype)
        position = torch.tensor([pos])
        with torch.no_grad():
            expected = layer(x, position)
        _close(exe, one(exe(x, position)), expected)
        # every row of both caches: the written ones and the untouched ones
        _close(exe, exe.buffer("k_cache"), layer.k_cache)
        _close(exe, exe.buffer("v_cache"), layer.v_cache)
    # the comparisons above covered the rows eager wrote and the ones it kept
    changed = (layer.k_cache != before).any(-1).nonzero()[:, 2].unique().tolist()
    assert changed == [5, 6, 200]


def test_the_mask_follows_the_position():
    """Positions after `pos` do not contribute: changing cache rows past pos changes nothing,
    changing a row before it changes the output."""
    layer = _layer(torch.float32)
    x = torch.randn(1, 1, 128)
    exe = spyrec.compile(torch.export.export(layer, (x, torch.tensor([7]))))
    first = one(exe(x, torch.tensor([7])))
    again = one(exe(x, torch.tensor([7])))  # the cache now holds the same row 7: same result
    assert torch.equal(first, again)
    earlier = one(exe(x, torch.tensor([3])))  # row 3 overwritten, keys 4.. masked
    assert not torch.allclose(first, earlier)


def test_a_position_outside_the_cache_is_caught():
    layer = _layer(torch.float32)
    x = torch.randn(1, 1, 128)
    exe = spyrec.compile(torch.export.export(layer, (x, torch.tensor([5]))))
    with pytest.raises(DeviceFault, match=r"dma.scatter row 0: index 256 is outside the table's "
                                          r"rows \[0, 256\).*\(from index_put\)"):
        exe(x, torch.tensor([CACHE]))


class Counter(torch.nn.Module):
    steps: torch.Tensor  # a buffer

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("steps", torch.zeros(1, 32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.steps.add_(1.0)
        return x * 2


def test_a_buffer_update_that_is_not_in_place_is_refused():
    """Only row writes are done in place; another buffer mutation is a compile error naming
    the buffer, never a stale buffer."""
    x = torch.randn(4, 32)
    with pytest.raises(CompileError, match=r"buffer 'steps' is updated by %add, which is not an "
                                           r"in-place update of it"):
        spyrec.compile(torch.export.export(Counter(), (x,)))


class InputUpdate(torch.nn.Module):
    def forward(self, cache: torch.Tensor, pos: torch.Tensor, row: torch.Tensor) -> torch.Tensor:
        cache.index_copy_(0, pos, row)
        return cache * 2


def test_a_mutated_input_is_refused():
    args = (torch.zeros(8, 32), torch.tensor([1]), torch.ones(1, 32))
    with pytest.raises(CompileError, match=r"user input mutation of 'cache' is not supported"):
        spyrec.compile(torch.export.export(InputUpdate(), args))


class RowUpdate(torch.nn.Module):
    table: torch.Tensor  # a buffer

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("table", torch.zeros(16, 32))

    def forward(self, pos: torch.Tensor, row: torch.Tensor) -> torch.Tensor:
        old = self.table * 1.0  # read before the write: cannot be updated in place
        self.table.index_copy_(0, pos, row)
        return old


def test_a_buffer_read_before_its_update_is_refused():
    with pytest.raises(UnsupportedOpsError, match=r"buffer 'table' is also read before the "
                                                  r"update"):
        spyrec.compile(torch.export.export(RowUpdate(), (torch.tensor([1]), torch.ones(1, 32))))


class RotaryOfPositions(torch.nn.Module):
    """A rotary table of positions known only at run time (one column of positions)."""

    inv_freq: torch.Tensor  # a buffer

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, 64, 2).float() / 64))

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        angles = pos.float() * self.inv_freq[None, :]
        table = torch.cat((angles, angles), -1)
        return x * table.cos() + x * table.sin()


def test_sin_and_cos_of_run_time_positions():
    """pos.float() is an int cast on the device, cos and sin are SFU functions (transcendental
    cost), angles up to 4095 rad are reduced in float64 by the emulator as by torch."""
    model = RotaryOfPositions()
    x = torch.randn(4, 64)
    pos = torch.tensor([[5], [100], [1000], [4095]])
    exe = spyrec.compile(torch.export.export(model, (x, pos)))
    _close(exe, one(exe(x, pos)), model(x, pos))
    assert not any(b.name.endswith(".folded") and "cos" in b.name for b, _ in exe.binary.weights)


def _ktir_run(lit_input: str, **arrays: np.ndarray) -> dict[str, np.ndarray]:
    ctx = make_context()
    source = Path(__file__).parents[1] / "lit" / "passes" / lit_input
    module = Parser(ctx, source.read_text()).parse_module()
    PASSES["convert-spyre-to-ktir"]()().apply(ctx, module)
    return execute(module_text(module), "k0", **arrays)


def test_gather_and_scatter_ktir_run_in_the_reference_interpreter():
    """The KTIR of the gather and scatter kernels (the lit inputs: ids [2, 16] into a
    [100, 64] table; two new rows per head into a [2, 256, 64] cache) means in the KTIR
    reference interpreter what dma.gather / dma.scatter make of it."""
    rng = np.random.default_rng(0)
    table = rng.standard_normal((100, 64)).astype(np.float16)
    ids = np.zeros((2, 32), np.int32)  # the int32 view, stick padded
    ids[:, :16] = rng.integers(0, 100, (2, 16))
    out = _ktir_run("spyre-schedule-dataflow-gather.mlir", w=table, ids=ids,
                    e=np.zeros((32, 64), np.float16))
    assert np.array_equal(out["e"].reshape(2, 16, 64), table[ids[:, :16]])
    cache = rng.standard_normal((2, 256, 64)).astype(np.float32)
    pos = np.zeros((1, 32), np.int32)
    pos[0, :2] = [7, 200]
    rows = rng.standard_normal((4, 64)).astype(np.float32)
    out = _ktir_run("spyre-schedule-dataflow-scatter.mlir", c=cache, pos=pos, k=rows,
                    u=cache.copy())
    expected = cache.copy()
    expected[:, [7, 200]] = rows.reshape(2, 2, 64)
    assert np.array_equal(out["u"], expected)
