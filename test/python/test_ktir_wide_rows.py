"""Row tiles too wide for LX streamed through it in chunks (spyrec/frontend/ktir_stream.py,
design note 113): each reduction of the row a pass over its chunks, each store another,
matching the KTIR interpreter; injected bugs in the chunking fail the same comparison.
Kernels: ktir/kernels/wide_rows.mlir."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

import spyrec
import spyrec.ktir
from spyrec.frontend import ktir_stream
from spyrec.verdict import check_outputs

KERNELS = Path(__file__).parent / "ktir" / "kernels" / "wide_rows.mlir"


def _check() -> bool:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 131072)).astype(np.float16)
    exe = spyrec.compile(KERNELS, function="row_stats", cache=False)
    got = exe(torch.from_numpy(x))
    names = [b.name for b in exe.binary.outputs]
    want = spyrec.ktir.execute(KERNELS, "row_stats", x=x, mx=np.zeros(2, np.float16),
                               sm=np.zeros(2, np.float32),
                               y=np.zeros((2, 131072), np.float16))
    assert abs(want["sm"]).min() > 100  # the 1000 the sum starts from is in it
    return check_outputs([torch.from_numpy(np.asarray(want[n])) for n in names],
                         list(got), exe).ok


def test_a_wide_row_streams_and_matches_the_interpreter():
    assert _check()
    module = spyrec.compile(KERNELS, function="row_stats", cache=False).binary
    # one core, 16 chunks of 8192 in three passes (max, sum, exp): the row read three times
    (kernel,) = module.kernels
    assert kernel.num_cores == 1
    # the binary says what was streamed (`spyrec inspect` prints its provenance)
    assert module.provenance["ktir_streamed"] == "%xt: 131072 columns in chunks of 8192"


def test_every_chunk_read_at_column_0_fails_the_check(monkeypatch):
    original = ktir_stream._Stream._tile

    def first_chunk(self, tile, body, column):
        zero = ktir_stream.arith.ConstantOp(ktir_stream.IntegerAttr(0, ktir_stream.IndexType()))
        body.add_op(zero)
        return original(self, tile, body, zero.result)

    monkeypatch.setattr(ktir_stream._Stream, "_tile", first_chunk)
    assert not _check()


def test_a_sum_that_drops_its_init_fails_the_check(monkeypatch):
    monkeypatch.setattr(ktir_stream, "_splat_constant", lambda value: 0.0)
    assert not _check()


def test_only_rows_too_wide_for_lx_stream():
    """`row_stats` streams (its 1 x 131072 tile is 512 KB in f32: chunks of 8192 columns);
    the softmax conformance kernel (8 x 256) is left as written."""
    from xdsl.dialects.func import FuncOp

    from spyrec.dialects.ktdp_parse import parse_ktir

    wide = next(iter(parse_ktir(KERNELS).body.block.ops))
    assert isinstance(wide, FuncOp)
    assert ktir_stream.stream_wide_rows(wide) == ["%xt: 131072 columns in chunks of 8192"]
    small = Path(__file__).parent / "ktir" / "kernels" / "softmax.mlir"
    for kernel in parse_ktir(small).body.block.ops:
        assert ktir_stream.stream_wide_rows(kernel) == []  # type: ignore[arg-type]


def test_a_row_stored_where_it_was_loaded_is_not_streamed(tmp_path):
    """exp(x - max) stored back into x: a pass after the store would reload the stored
    values, not the loaded ones, so the block is left as written (and refused by the
    placement, naming its tiles), never streamed into a wrong answer."""
    from xdsl.dialects.func import FuncOp

    from spyrec.dialects.ktdp_parse import parse_ktir

    source = tmp_path / "in_place.mlir"
    source.write_text(KERNELS.read_text().replace(
        "%yt = ktdp.construct_access_tile %yv[%row, 0]",
        "%yt = ktdp.construct_access_tile %xv[%row, 0]"))
    kernel = next(iter(parse_ktir(source).body.block.ops))
    assert isinstance(kernel, FuncOp)
    assert ktir_stream.stream_wide_rows(kernel) == []
