"""Gathers of rows by index (embedding, index_select): dma.gather on the device."""

from __future__ import annotations

import torch

from spyrec.opcases.core import DTYPES, OpCase, _Fn

# ---- gathers of rows by index (embedding, index_select): dma.gather on the device ----------

# shape family -> (index shape, table rows, table width)
GATHER_SHAPES = {"aligned": ((4, 16), 256, 128), "unaligned": ((3, 7), 67, 255),
                 "3d": ((2, 5, 3), 100, 100)}


class _Embedding(torch.nn.Module):
    def __init__(self, rows: int, width: int):
        super().__init__()
        self.table = torch.nn.Embedding(rows, width)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.table(ids)


def _ids(shape: tuple[int, ...], rows: int, dtype: torch.dtype,
         g: torch.Generator) -> torch.Tensor:
    ids = torch.randint(0, rows, shape, generator=g, dtype=dtype)
    ids.view(-1)[:2] = torch.tensor([0, rows - 1])  # both ends of the table
    return ids


def gather_cases() -> list[OpCase]:
    """embedding with int64 and int32 ids (a weight table), index_select of rows of an
    activation, per table dtype and index shape."""
    out: list[OpCase] = []
    for dtype in DTYPES:
        for shape_name, (ids, rows, width) in GATHER_SHAPES.items():
            for op, id_dtype in (("embedding", torch.int64), ("embedding_int32", torch.int32)):
                out.append(OpCase(op, dtype, shape_name,
                                  lambda r=rows, w=width, d=dtype: _Embedding(r, w).to(d),
                                  lambda g, s=ids, r=rows, i=id_dtype: (_ids(s, r, i, g),)))
            count = ids[-1] * 2
            out.append(OpCase("index_select", dtype, shape_name,
                              lambda: _Fn(lambda x, i: torch.index_select(x, 0, i) * 2),
                              lambda g, r=rows, w=width, d=dtype, c=count: (
                                  torch.randn(r, w, generator=g).to(d),
                                  _ids((c,), r, torch.int64, g))))
    return out
