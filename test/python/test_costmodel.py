"""The compiler's cost model against the emulator's clock on the benchmark kernels.

spyre-tile records the predicted cycles of the tiling it chose; the emulator measures the
same kernel. They share the target description, so they must agree within 15 %
(benchmarks/README.md and docs/design.md record the measured ratios): on the MLP benchmark
and on the roofline suite's kernels (benchmarks/roofline.py) at its quick sizes.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from spyrec.api import Executable
from spyrec.costmodel import (
    KernelShape,
    MoveShape,
    Split,
    Tiling,
    best_tiling,
    candidate_splits,
    core_span_bytes,
    core_spans,
    predict,
    tail_pieces,
    tail_rows,
)
from spyrec.demo import DemoMLP
from spyrec.driver import compile_program
from spyrec.pipelines import compile_options
from spyrec.runtime.emulator import Emulator
from spyrec.target import DEFAULT_TARGET
from spyrec.zoo import Chain, Gemm, RowSum, Sdpa, Softmax, SwiGLU


def predicted_cycles(module) -> list[float]:
    """spyre-tile's predicted cycles of every kernel of a compiled module, in order."""
    return [
        op.attributes["spyre.decisions"].data["spyre.tiling"].data["predicted_cycles"].value.data
        for op in module.walk() if op.name == "spyrecode.program"]


@pytest.mark.parametrize("rows,features,dtype", [
    (64, 100, torch.float16),
    (64, 256, torch.float16),
    (256, 1024, torch.float16),
    (256, 512, torch.float32),
])
def test_predicted_cycles_within_15_percent(rows, features, dtype):
    """Each kernel on its own best split (keep_in_lx=False): with the fc1 result kept in
    LX for fc2 the f32 MLP takes an 8x1 split whose fc1 the model predicts 15.0 % short
    (14364 against 16907 cycles, its B block in one ring chain of 8 cores; note 61); the
    suite's SwiGLU case holds kept kernels."""
    torch.manual_seed(0)
    model = DemoMLP(features).to(dtype).eval()
    x = torch.randn(rows, features).to(dtype)
    result = compile_program(torch.export.export(model, (x,)),
                             pass_options=compile_options(keep_in_lx=False))
    assert result.binary is not None
    predicted = predicted_cycles(result.module)
    exe = Executable(result.binary)
    exe(x)
    measured = [k["emulated_us"] * DEFAULT_TARGET.clock_hz / 1e6
                for k in exe.last_profile.to_dict()["kernels"]]
    assert len(predicted) == len(measured) == 3
    for p, m in zip(predicted, measured):
        assert 0.85 <= p / m <= 1.15, (p, m)


def _sdpa(heads: int, q_len: int, kv_len: int, dim: int, causal: bool = False):
    return Sdpa(causal), (torch.randn(1, heads, q_len, dim), torch.randn(1, heads, kv_len, dim),
                          torch.randn(1, heads, kv_len, dim))


# The roofline suite's kernels at its --quick sizes (1024), gemm 128^3 (4 cores that spend
# half their DMA time in setup: identical programs set up in lockstep, so the channel idles
# meanwhile, and the model counts each core's setups in full) and Granite's attention shape
# (32 heads of 128, 128 tokens, causal).
class _TableOverHeads(torch.nn.Module):
    """q * cos with cos [S, D] broadcast over the heads of q [1, H, S, D]: the broadcast is a
    move kernel that loads each tile of the table once and stores it to every head."""

    def forward(self, q: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
        return q * cos


SUITE = {
    "gemm 128x128x128": lambda: (Gemm(128, 128), (torch.randn(128, 128),)),
    "gemm 256x1000x320": lambda: (Gemm(1000, 320), (torch.randn(256, 1000),)),
    "gemm 1024x1024x1024": lambda: (Gemm(1024, 1024), (torch.randn(1024, 1024),)),
    # a tail (note 57): the last column tile in three row pieces (112, 112, 76 rows)
    "gemm 1500x1000x1500": lambda: (Gemm(1000, 1500), (torch.randn(1500, 1000),)),
    "add->gelu->mul 1024x1024": lambda: (Chain(), tuple(torch.randn(1024, 1024)
                                                       for _ in range(3))),
    "softmax 1024x1024": lambda: (Softmax(), (torch.randn(1024, 1024),)),
    "layernorm 1024x1024": lambda: (torch.nn.LayerNorm(1024), (torch.randn(1024, 1024),)),
    "rmsnorm 1024x1024": lambda: (torch.nn.RMSNorm(1024), (torch.randn(1024, 1024),)),
    "sdpa prefill h8 L256 S256 d64": lambda: _sdpa(8, 256, 256, 64),
    "sdpa decode h8 L1 S1024 d64": lambda: _sdpa(8, 1, 1024, 64),
    "sdpa causal h32 L128 d128": lambda: _sdpa(32, 128, 128, 128, causal=True),
    "table over heads h32 S512 d128": lambda: (_TableOverHeads(), (torch.randn(1, 32, 512, 128),
                                                                   torch.randn(512, 128))),
    # few long rows, split over grid rows and all-reduced with ring.reduce (note 59)
    "rowsum 4x16384": lambda: (RowSum(), (torch.randn(4, 16384),)),
    "rmsnorm 4x16384": lambda: (torch.nn.RMSNorm(16384), (torch.randn(4, 16384),)),
    "layernorm 2x8192": lambda: (torch.nn.LayerNorm(8192), (torch.randn(2, 8192),)),
    # the gate kernel keeps silu(gate(x)) in LX for the up kernel (note 61)
    "swiglu 128x1024x4096": lambda: (SwiGLU(1024, 4096), (torch.randn(128, 1024),)),
}

# The benchmark's switched-off variants the model must follow as well: unfused row ops (a
# reduction stores a stick per row; an operand of one column is read by every core of a
# grid row) and GEMMs and attention without ring sharing (the choice between shared and
# unshared attention rests on both predictions). Not here: `nobuf` GEMMs with ring
# sharing, which the model serialises (dma + pt + sfu + ring) while the emulator overlaps the
# ring with the matmuls (predicted 0.63 of 128^3, 1.33 of 1024^3; docs/design.md note 16).
VARIANTS = [
    ("softmax 1024x1024", {"fuse": False}),
    ("layernorm 1024x1024", {"fuse": False}),
    ("add->gelu->mul 1024x1024", {"fuse": False}),
    ("gemm 128x128x128", {"share": "none"}),
    ("gemm 256x1000x320", {"share": "none"}),
    ("sdpa prefill h8 L256 S256 d64", {"share": "none"}),
    ("add->gelu->mul 1024x1024", {"double_buffer": False}),
    ("gemm 1500x1000x1500", {"tail": 1}),
    ("rmsnorm 4x16384", {"ring_reduce": False}),
    ("layernorm 2x8192", {"ring_reduce": False}),
    ("swiglu 128x1024x4096", {"keep_in_lx": False}),
]


def _check_suite_case(case: str, options: dict[str, Any]) -> None:  # compile_options' keywords
    torch.manual_seed(0)
    module, inputs = SUITE[case]()
    module = module.to(torch.float16).eval()
    inputs = tuple(t.to(torch.float16) for t in inputs)
    result = compile_program(torch.export.export(module, inputs),
                             pass_options=compile_options(**options))
    assert result.binary is not None
    predicted = predicted_cycles(result.module)
    _, profile = Emulator(result.binary, mode="timing").run()
    measured = [k.cycles for k in profile.kernels]
    assert len(predicted) == len(measured) >= 1
    for p, m in zip(predicted, measured, strict=True):
        assert 0.85 <= p / m <= 1.15, (case, options, p, m)


@pytest.mark.parametrize("case", sorted(SUITE))
def test_roofline_suite_kernels_within_15_percent(case):
    _check_suite_case(case, {})


@pytest.mark.parametrize("case,options", VARIANTS,
                         ids=[f"{c}-{next(iter(o))}" for c, o in VARIANTS])
def test_switched_off_variants_within_15_percent(case, options):
    _check_suite_case(case, options)


def test_repeated_questions_are_answered_from_memory():
    """A model's repeated layers ask the cost model the same questions; the ranking is
    computed once, and a caller changing the list it got does not change the next answer."""
    from spyrec.costmodel import KernelShape, Split, _ranked_tilings, ranked_tilings

    shape = KernelShape(rows=512, cols=4096, k=4096, in_itemsize=2, out_itemsize=2)
    split = Split(4, 8)
    first = ranked_tilings(shape, split, DEFAULT_TARGET)
    hits = _ranked_tilings.cache_info().hits
    first.clear()
    again = ranked_tilings(shape, split, DEFAULT_TARGET)
    assert _ranked_tilings.cache_info().hits == hits + 1
    assert again and again[0][0].cycles <= again[-1][0].cycles


def test_tail_rows_are_whole_pt_blocks_but_the_last():
    """A tail's pieces (note 57) take whole 16-row blocks (8 rows a corelet, the PT array's
    block), the last one the rest; a count whose last piece would be empty, odd or under 16
    rows is not offered."""
    assert tail_rows(300, 3) == (112, 76)
    assert tail_rows(300, 2) == (160, 140)
    assert tail_rows(128, 4) == (32, 32)
    shape = KernelShape(1500, 1500, 1000, 2, 2, sfu_passes=1)
    sliced = Tiling(300, 128, 64, "a", True)
    # four pieces of 80 rows or five of 64: a K step (640 or 512 cycles a corelet) is
    # shorter than the 6 grid columns' 64x128 B slices take over the channel (98304 B /
    # 136.5 B a cycle = 720); three of 112 take 896
    assert tail_pieces(shape, Split(5, 6), sliced, DEFAULT_TARGET) == [2, 3]
    # two K steps (K = 128): nothing to overlap, no tail
    small = KernelShape(128, 128, 128, 2, 2, sfu_passes=1)
    assert tail_pieces(small, Split(2, 2), Tiling(64, 64, 64, "a", True), DEFAULT_TARGET) == []


def test_tail_is_chosen_where_the_drain_dominates():
    """1500x1000x1500 on 5x6: 128-wide column tiles with the last one in three row pieces,
    predicted 13 % faster than without (the emulator: 12 %); the tail of 2048^3 is predicted
    to gain too little to be taken."""
    shape = KernelShape(1500, 1500, 1000, 2, 2, sfu_passes=1)
    best = best_tiling(shape, Split(5, 6), DEFAULT_TARGET)
    assert best is not None and best[0] == Tiling(300, 128, 64, "a", True, 3)
    whole = predict(shape, Split(5, 6), Tiling(300, 128, 64, "a", True), DEFAULT_TARGET)
    assert best[1].cycles < whole.cycles * 0.9
    big = KernelShape(2048, 2048, 2048, 2, 2, sfu_passes=1)
    chosen = best_tiling(big, Split(8, 4), DEFAULT_TARGET)
    assert chosen is not None and chosen[0].tail == 1


def test_no_split_leaves_a_core_spanning_more_than_256_mib_of_a_tensor() -> None:
    # hf:pegasus_x's 1 GiB broadcast: 1,024 runs of 512 f32 rows of 512, split 2x2, had a
    # core store 512 MiB of rows apart and fault when it ran
    move = MoveShape(rows=1024 * 512, run=512, in_rows=512, cols=512, itemsize=4)
    limit = DEFAULT_TARGET.per_core_span_bytes
    assert core_span_bytes(move, Split(2, 2)) == (511 * 512 + 256) * 2048 > limit
    splits = candidate_splits(move, DEFAULT_TARGET)
    assert Split(2, 2) not in splits and Split(4, 1) in splits
    assert all(core_span_bytes(move, s) <= limit for s in splits)
    # one core's columns of a single 300 MB row are all it spans; a row split keeps 2 rows
    row = KernelShape(rows=1, cols=75_000_000, k=0, in_itemsize=4, out_itemsize=4)
    assert core_span_bytes(row, Split(1, 2)) == 150_000_000 and Split(1, 1) not in \
        candidate_splits(row, DEFAULT_TARGET)
    # a full-size LM head's weight [4096, 49152] fp16: each core reads its columns down all
    # 4096 rows, so no split keeps it within the span (refused at compile time); half of it
    # fits
    head = KernelShape(rows=1, cols=49152, k=4096, in_itemsize=2, out_itemsize=2)
    assert core_spans(head, Split(1, 32))["weight"] == 4095 * 98304 + 3072
    assert candidate_splits(head, DEFAULT_TARGET) == []
    assert candidate_splits(KernelShape(rows=1, cols=24576, k=4096, in_itemsize=2,
                                        out_itemsize=2), DEFAULT_TARGET)
