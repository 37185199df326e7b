"""spyre-tile's LX model (`passes/planning/lx_need.py`, note 69) against the allocator.

spyre-tile admits a tiling by the LX bytes spyre-place-memory will give the kernel, worked
out on the tile graph without lowering it. These tests lower and place every candidate
tiling (with and without a tail, with one and two buffers) of the tile-graph kernels of a
set of programs and require the same byte count: a matmul with epilogues, a tensor kept in
LX, wide norms, split row sums (ring all-reduce), f32 and f16.
"""

from __future__ import annotations

import pytest
import torch
from xdsl.dialects.builtin import ModuleOp

from spyrec.costmodel import lx_footprint, ranked_tilings
from spyrec.dialects import spyre_plan as plan
from spyrec.dialects.spyre import KernelOp
from spyrec.driver import compile_program
from spyrec.passes.ktir.convert_spyre_to_ktir import build_kernel_func
from spyrec.passes.ktir.spyre_place_memory import assign_lx_slots, lx_reserved
from spyrec.passes.planning.kernel_analysis import KernelInfo, analyze, read_split
from spyrec.passes.planning.lx_need import tile_graph_lx
from spyrec.passes.planning.spyre_tile import _write_tiling
from spyrec.pipelines import compile_options
from spyrec.zoo import DemoDecoderFFN

TILING_KEYS = (plan.TILE, plan.RESIDENT, plan.SHARE, plan.TAIL, plan.STORE_PIECES)


class Norm(torch.nn.Module):
    """A layer norm and an RMS norm's row sum over wide rows."""

    def __init__(self, n: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(n)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.norm(x), (x * x).sum(-1, keepdim=True)


PROGRAMS = {
    "decoder-ffn f16": (lambda: DemoDecoderFFN(256, 2).half(),
                        lambda: torch.randn(2, 32, 256).half()),
    "norms 64x4096 f16": (lambda: Norm(4096).half(), lambda: torch.randn(64, 4096).half()),
    "norms 1024x1024 f32": (lambda: Norm(1024), lambda: torch.randn(1024, 1024)),
    "row sums 4x16384 f16": (lambda: Norm(16384).half(), lambda: torch.randn(4, 16384).half()),
}


def _graph(name: str, double_buffer: bool) -> ModuleOp:
    torch.manual_seed(0)
    make, inputs = PROGRAMS[name]
    ep = torch.export.export(make().eval(), (inputs(),))
    options = compile_options(double_buffer=double_buffer)
    module = compile_program(ep, stop_after="graph", pass_options=options).module
    assert module is not None
    return module


def _placed(kernel: KernelOp, tiling, buffers: int, target) -> int:
    """The allocator's bytes: the kernel lowered with `tiling` and placed."""
    probe = kernel.clone()
    for key in TILING_KEYS:
        probe.attributes.pop(key.constraint.key, None)
    _write_tiling(probe, tiling)
    fn = build_kernel_func(probe, target)
    reserved = lx_reserved(fn)
    return assign_lx_slots(fn, target, buffers) + (reserved[1] if reserved else 0)


@pytest.mark.parametrize("double_buffer", [True, False])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_model_equals_the_allocator(name: str, double_buffer: bool) -> None:
    module = _graph(name, double_buffer)
    target, buffers = plan.target_of(module), plan.options_of(module).buffers
    compared = differs_from_footprint = 0
    for kernel in [o for o in module.walk() if isinstance(o, KernelOp)]:
        info = analyze(kernel)
        if not isinstance(info, KernelInfo):
            continue
        split = read_split(kernel)
        tilings = {t for tail in (0, 2, 3)
                   for _, t in ranked_tilings(info.shape(), split, target, buffers,
                                              tail=tail)[:24]}
        for tiling in sorted(tilings, key=repr):
            model = tile_graph_lx(info, tiling, buffers, target, split)
            assert model == _placed(kernel, tiling, buffers, target), (kernel.sym_name, tiling)
            compared += 1
            differs_from_footprint += model != lx_footprint(info.shape(), tiling, split,
                                                            buffers, target)
    assert compared >= 4
    if name.startswith("norms"):  # where the count-based footprint is not the allocator's
        assert differs_from_footprint
