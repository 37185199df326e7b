"""A broadcast written whole into an LX tile: the SFU copy spyre-legalize-ktir builds for a
broadcast that is stored as it is (a splat of a row statistic, a scalar broadcast over a
tile; docs/ktir.md §6, design note 94).

The SFU's unary ops read a source of the destination's shape, so a source of one row or one
column would be read past its end. `broadcast_copy(...)` writes the destination from it
exactly, one corelet's rows at a time:

- one row over all rows: `sfu.unary` COPY with source pitch 0 (the ISA's row broadcast);
- one column (or one element) along the row: keep(x, 0) = -0.0 over the destination, whatever
  LX held there (NaN included), then `sfu.colwise` ADD of the column (source pitch 0 for one
  element over all rows): -0.0 + v is v for every v, both zeros, infinities and NaN included,
  rounded once to the destination type as a copy rounds.

A tile of the destination's own shape is not a broadcast (`None`: the caller's plain copy).
"""

from __future__ import annotations

from typing import Any

from spyrec.target.isa import BinaryFn, UnaryFn, f32_bits

# `it`, `src` and `out` are core_walk's CoreWalk and LxTensors, typed Any: core_walk imports
# this module (masked_tiles.py gives the reason)


def broadcast_copy(it: Any, src: Any, out: Any, half: int, row: int, count: int,
                   halves: int) -> bool:
    """Emit the copy of `src` broadcast over rows [row, row + count) of `out` if `src` is a
    row, a column or one element of it; False (nothing emitted) if `src` has `out`'s shape."""
    from spyrec.passes.spyrecode.core_walk import part, whole

    rows, cols = out.shape
    one_row = src.shape[0] == 1 < rows
    one_column = src.shape[1] == 1 < cols
    if not one_row and not one_column:
        return False
    dst = out.addr + row * out.pitch
    src_at = src.addr if one_row else src.addr + row * src.pitch
    reads = whole(src) if one_row else part(src, half, halves)
    writes = part(out, half, halves)
    common = {"unit": half, "dst": dst, "rows": count, "cols": cols, "dst_pitch": out.pitch,
              "dst_dtype": out.dtype}
    if not one_column:
        it.stream.emit("sfu.unary", reads, writes, fn=UnaryFn.COPY, src=src_at, src_pitch=0,
                       src_dtype=src.dtype, **common)
        return True
    it.stream.emit("sfu.scalar", writes, writes, fn=BinaryFn.KEEP, src=dst,
                   src_pitch=out.pitch, src_dtype=out.dtype, imm=f32_bits(0.0), reverse=0,
                   **common)
    it.stream.emit("sfu.colwise", writes + reads, writes, fn=BinaryFn.ADD, src0=dst,
                   src0_pitch=out.pitch, src0_dtype=out.dtype, src1=src_at,
                   src1_pitch=0 if one_row else src.pitch, src1_dtype=src.dtype, reverse=0,
                   **common)
    return True
