"""Operands that hold weights are decoded once and kept across calls (constant_tiles.py):
the same bytes as decoding them on every call, and never kept when a program writes them."""

import numpy as np
import pytest
import torch

from spyrec.api import to_numpy
from spyrec.demo import DemoMLP
from spyrec.driver import compile_program
from spyrec.runtime.constant_tiles import DEFAULT_BUDGET_BYTES, ConstantTiles, ConstantWalk, _sticks
from spyrec.runtime.emulator import Emulator
from spyrec.target.isa import STICK_BYTES, DType, Instr, Region

WEIGHT = 0x4000_0000  # an LPDDR range the tests treat as a weight
OTHER = 0x5000_0000  # and one that is not


def load(ddr: int, lx: int, rows: int = 128, row_bytes: int = 256) -> Instr:
    return Instr.make("dma.load", ddr=ddr, lx=lx, rows=rows, row_bytes=row_bytes,
                      ddr_pitch=row_bytes, lx_pitch=row_bytes)


def matmul(a: int, b: int) -> Instr:
    return Instr.make("pt.matmul", a=a, b=b, c=0x20000, m=4, k=128, n=128, a_pitch=256,
                      b_pitch=256, c_pitch=512, in_dtype=DType.DL16, accumulate=0)


def walked(*instrs: Instr) -> tuple[ConstantTiles, ConstantWalk]:
    table = ConstantTiles([(WEIGHT, WEIGHT + (1 << 20))], lx_bytes=2 << 20)
    table.finalize([list(instrs)])
    walk = ConstantWalk(table)
    for pc, instr in enumerate(instrs):
        walk.step(0, pc, instr)
    return table, walk


def test_a_weight_tile_is_constant_an_input_tile_is_not() -> None:
    _, walk = walked(load(WEIGHT, 0x0), load(OTHER, 0x8000), matmul(0x0, 0x8000))
    assert walk.constant[(0, 2)] == (frozenset({0}), None)


def test_a_partial_overwrite_makes_the_tile_vary() -> None:
    scale = Instr.make("sfu.scalar", fn=2, src=0x0, dst=0x40, rows=1, cols=16, src_pitch=256,
                       dst_pitch=256, src_dtype=DType.F32, dst_dtype=DType.F32, imm=0,
                       reverse=0)  # 64 bytes in the middle of the tile's first stick
    _, walk = walked(load(WEIGHT, 0x0), scale, matmul(0x0, 0x0))
    assert (0, 2) not in walk.constant
    # a later load of the same weight bytes makes it whole again
    _, walk = walked(load(WEIGHT, 0x0), scale, load(WEIGHT, 0x0), matmul(0x0, 0x0))
    assert walk.constant[(0, 3)] == (frozenset({0}), frozenset({0}))


def test_ring_transfers_carry_the_weight_to_the_receiver() -> None:
    table = ConstantTiles([(WEIGHT, WEIGHT + (1 << 20))], lx_bytes=2 << 20)
    table.finalize([])
    walk = ConstantWalk(table)
    send = Instr.make("ring.send", src=0x0, rows=128, row_bytes=256, src_pitch=256, dst_core=1,
                      tag=0)
    recv = Instr.make("ring.recv", dst=0x8000, rows=128, row_bytes=256, dst_pitch=256,
                      src_core=0, tag=0)
    walk.step(0, 0, load(WEIGHT, 0x0))
    walk.step(0, 1, send)
    walk.step(1, 0, recv, sender=(0, send))
    walk.step(1, 1, matmul(0x8000, 0x8000))
    assert walk.constant[(1, 1)] == (frozenset({0}), frozenset({0}))
    memos = walk.memos([(1, 1)])
    assert memos is not None and all(m is not None and m.enabled for m in memos)


def test_a_weight_a_program_writes_is_not_kept() -> None:
    store = Instr.make("dma.store", ddr=WEIGHT + 512, lx=0x3000, rows=1, row_bytes=128,
                       ddr_pitch=128, lx_pitch=128)
    table, walk = walked(load(WEIGHT, 0x0), matmul(0x0, 0x0), store)
    assert table.mutated == frozenset({0})
    memos = walk.memos([(0, 1)])
    assert memos is not None and not any(m.enabled for m in memos if m is not None)


def _mlp(dtype: torch.dtype):
    torch.manual_seed(0)
    model = DemoMLP(256).to(dtype).eval()
    x = torch.randn(64, 256).to(dtype)
    result = compile_program(torch.export.export(model, (x,)))
    assert result.binary is not None
    return result.binary, x.shape


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
def test_kept_operands_give_the_same_bytes_on_every_call(dtype: torch.dtype) -> None:
    binary, shape = _mlp(dtype)
    kept, fresh = Emulator(binary), Emulator(binary, keep_constants=False)
    for seed in range(3):  # the first call fills the memos, the others use them
        x = to_numpy(torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype))
        (a,), _ = kept.run([x])
        (b,), _ = fresh.run([x])
        assert a.tobytes() == b.tobytes()
    table = kept._constants  # the memos were used
    assert table is not None and table.budget < DEFAULT_BUDGET_BYTES


def test_past_the_budget_operands_decode_every_call() -> None:
    binary, shape = _mlp(torch.float16)
    emulator = Emulator(binary)
    assert emulator._constants is not None
    emulator._constants.budget = 0
    x = to_numpy(torch.randn(shape).to(torch.float16))
    (a,), _ = emulator.run([x])
    (b,), _ = Emulator(binary, keep_constants=False).run([x])
    assert a.tobytes() == b.tobytes()
    assert emulator._constants.budget == 0


@pytest.mark.parametrize("region", [
    Region(0, 1, 128, 0), Region(64, 1, 200, 0), Region(0, 4, 256, 256), Region(32, 3, 64, 128),
    Region(100, 5, 300, 0), Region(0, 4, 128, 384), Region(40, 6, 100, 130), Region(0, 3, 96, 64),
])
def test_stick_indices_match_a_byte_by_byte_count(region: Region) -> None:
    """_sticks against the bytes themselves: the sticks any byte of the region lies in, and
    the sticks all of whose 128 bytes it covers (never one it does not cover)."""
    covered = np.zeros(64 * STICK_BYTES, dtype=bool)
    for row in range(region.rows):
        start = region.base + row * region.pitch
        covered[start:start + region.row_bytes] = True
    per_stick = covered.reshape(-1, STICK_BYTES)
    sticks = np.arange(64)
    assert sorted(set(sticks[_sticks(region)].tolist())) == np.flatnonzero(
        per_stick.any(axis=1)).tolist()
    whole = sorted(set(sticks[_sticks(region, whole=True)].tolist()))
    truth = np.flatnonzero(per_stick.all(axis=1)).tolist()
    if region.pitch == 0 or region.pitch >= region.row_bytes:
        assert whole == truth
    else:  # overlapping rows: a stick only their union covers may be left out (safe)
        assert set(whole) <= set(truth)


def test_weight_of_finds_the_range_that_holds_a_region() -> None:
    table = ConstantTiles([(0x3000, 0x4000), (0x1000, 0x2000)], lx_bytes=2 << 20)
    assert table.weight_of(Region(0x3100, 2, 128, 128)) == 0
    assert table.weight_of(Region(0x1000, 1, 0x1000, 0)) == 1
    assert table.weight_of(Region(0x1F80, 2, 128, 128)) is None  # runs past its end
    assert table.weight_of(Region(0x0800, 1, 128, 0)) is None  # before every weight
    assert table.weight_of(Region(0x2800, 1, 128, 0)) is None  # between them
