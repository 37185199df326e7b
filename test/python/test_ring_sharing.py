"""Operand tiles shared over the ring (design note 38) change the traffic, not the numbers.

`share="ring"` forces every split matmul to read each A tile once per grid row and each B
tile once per grid column and forward it core to core; the emulator matches the sends and
receives, checks the hazards of every core and reports a deadlock, so a wrong schedule
fails here. Shapes are not multiples of 64 (padding sticks) and small enough for full
numerics.
"""

from __future__ import annotations

import pytest
import torch
from conftest import assert_close, assert_matches_eager, one

import spyrec
from spyrec.api import Executable
from spyrec.driver import compile_program
from spyrec.passes.spyrecode.ring_sharing import share_loads
from spyrec.pipelines import compile_options
from spyrec.target.isa import Instr


class _Linear(torch.nn.Module):
    def __init__(self, k: int, n: int):
        super().__init__()
        self.fc = torch.nn.Linear(k, n)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def _programs(result) -> list:  # a CompileResult
    return [op for op in result.module.walk() if op.name == "spyrecode.program"]


@pytest.mark.parametrize("resident", ["a", "b", "acc"])
@pytest.mark.parametrize("m,k,n", [(100, 150, 130), (200, 64, 200), (64, 600, 256)])
def test_shared_matmul_matches_eager(m, k, n, resident):
    torch.manual_seed(0)
    model = _Linear(k, n).to(torch.float16).eval()
    x = torch.randn(m, k).to(torch.float16)
    ep = torch.export.export(model, (x,))
    result = compile_program(ep, pass_options=compile_options(resident=resident, share="ring"))
    (program,) = _programs(result)
    assert program.attributes["spyre.ring"].data.split()[0] != "not", \
        program.attributes["spyre.ring"].data
    assert result.binary is not None
    exe = Executable(result.binary)
    assert_matches_eager(exe, model, x)
    # the bytes spyre-tile predicted are the bytes the DMAs moved
    ledger = program.attributes["spyre.decisions"].data["spyre.tiling"].data
    assert ledger["share"].data == "ring"
    assert exe.last_profile.to_dict()["offchip_bytes"] == ledger["offchip_bytes"].value.data


def test_sharing_reads_each_operand_once():
    """A square GEMM on a full grid moves the minimum: A, B and C once each."""
    torch.manual_seed(0)
    a, b = torch.randn(256, 256).half(), torch.randn(256, 256).half()

    class _Mm(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return x @ y

    exe = spyrec.compile(torch.export.export(_Mm(), (a, b)), share="ring")
    out = one(exe(a, b)).float()
    expected = (a.float() @ b.float())
    assert_close(exe, expected, out)
    prof = exe.last_profile.to_dict()
    assert prof["offchip_bytes"] == prof["min_offchip_bytes"] == 3 * 256 * 256 * 2


def test_unshared_switch_keeps_every_core_loading():
    torch.manual_seed(0)
    model = _Linear(150, 130).to(torch.float16).eval()
    x = torch.randn(100, 150).to(torch.float16)
    result = compile_program(torch.export.export(model, (x,)),
                             pass_options=compile_options(share="none"))
    (program,) = _programs(result)
    assert "spyre.ring" not in program.attributes
    assert "share" not in program.attributes["spyre.decisions"].data["spyre.tiling"].data


def _load(ddr: int, lx: int) -> Instr:
    return Instr.make("dma.load", ddr=ddr, lx=lx, rows=1, row_bytes=128, ddr_pitch=128,
                      lx_pitch=128)


def test_loads_at_different_positions_are_not_shared():
    """The k-th load of a block pairs across cores only at the same program position;
    otherwise the send/receive order could differ between two cores, so nothing is shared."""
    programs = {0: [_load(0, 0), _load(128, 128)], 1: [_load(128, 128), _load(0, 0)]}
    same, report = share_loads(programs)
    assert same is programs and report.groups == 0
    assert "different program positions" in report.reason


def test_chain_and_write_after_read():
    """Three cores load the same tile: core 0 loads and sends to 1, 1 receives and sends to
    2, 2 receives; a later load into the sent slot waits for the send."""
    programs = {c: [_load(0, 0), _load(4096 * (c + 1), 0)] for c in range(3)}
    shared, report = share_loads(programs)
    assert (report.groups, report.transfers, report.saved_bytes) == (1, 2, 256)
    assert [i.op for i in shared[0]] == ["dma.load", "ring.send", "dma.load"]
    assert shared[0][1].arg("dst_core") == 1 and shared[0][2].deps == (1,)
    assert [i.op for i in shared[1]] == ["ring.recv", "ring.send", "dma.load"]
    assert shared[1][0].arg("src_core") == 0 and shared[1][1].arg("dst_core") == 2
    assert [i.op for i in shared[2]] == ["ring.recv", "dma.load"]


@pytest.mark.parametrize("causal", [False, True])
def test_shared_attention_matches_eager(causal):
    """The cores of a head share its K and V over the ring (query rows split over gn)."""
    torch.manual_seed(0)

    class _Sdpa(torch.nn.Module):
        def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    q, k, v = (torch.randn(1, 2, 96, 64).half() for _ in range(3))
    result = compile_program(torch.export.export(_Sdpa(), (q, k, v)),
                             pass_options=compile_options(share="ring"))
    shared = [p for p in _programs(result)
              if "share" in p.attributes["spyre.decisions"].data["spyre.tiling"].data]
    assert shared and all(not p.attributes["spyre.ring"].data.startswith("not")
                          for p in shared)
    assert result.binary is not None
    exe = Executable(result.binary)
    expected = _Sdpa()(q.float(), k.float(), v.float())
    out = one(exe(q, k, v)).float()
    assert_close(exe, expected, out)
    prof = exe.last_profile.to_dict()
    assert prof["offchip_bytes"] <= 1.2 * prof["min_offchip_bytes"]


def test_large_tiles_move_in_pieces():
    """A 128 KiB shared block goes down the chain in four 32 KiB pieces; its reader waits
    for all of them."""
    big = Instr.make("dma.load", ddr=0, lx=0, rows=512, row_bytes=256, ddr_pitch=256,
                     lx_pitch=256)
    use = Instr.make("sfu.unary", deps=[0], fn=0, src=0, dst=131072, rows=512, cols=128,
                     src_pitch=256, dst_pitch=256, src_dtype=1, dst_dtype=1)
    shared, report = share_loads({0: [big, use], 1: [big, use]})
    assert report.transfers == 4
    loads = [i for i in shared[0] if i.op == "dma.load"]
    assert [(i.arg("ddr"), i.arg("lx"), i.arg("rows")) for i in loads] == [
        (r * 256, r * 256, 128) for r in (0, 128, 256, 384)]
    recvs = [pc for pc, i in enumerate(shared[1]) if i.op == "ring.recv"]
    assert len(recvs) == 4 and shared[1][-1].deps == tuple(recvs)
