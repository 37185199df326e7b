"""The op coverage matrix: one small torch module per op, run through spyrec and eager.

`test/python/test_ops.py` parametrises pytest over `cases()`, and `tools/op_coverage.py`
runs the same cases to write `docs/coverage.md`, so the table in the docs is what the suite
measures. A case is an op, a dtype and a shape family:

- `aligned`: 64 x 128, whole sticks in every dtype;
- `unaligned`: 67 x 255, neither rows nor columns a multiple of anything;
- `3d`: 2 x 5 x 100 (leading dims become rows);
- `1d`: 100 (one row; ops on leading dims skip it) and `5d`: 2 x 2 x 3 x 4 x 64;
- `broadcast` (binary ops): a 64 x 128 tensor with a row vector of 128;
- `outer` (binary ops): a 67 x 1 column with a row vector of 255 (both broadcast);
- `image` (convolution, batch norm, pooling): a 2 x 8 x 16 x 16 NCHW image;
- `image_odd` (pooling with ceil_mode, norms over H and W; fp16): a 2 x 8 x 9 x 7 image;
- `signal` / `signal_aligned` (1-D convolution, group norm): a 2 x 8 x 45 NCL signal, or
  1 x 64 x 24 (the channels whole fp16 sticks);
- `heads16` (attention): q, k, v of [1, 2, 16, 16], or [1, 16, 64] tokens split into 4 heads;
- `mask_aligned` / `mask_unaligned` (attention masks): q [2, 2, L, 64], k and v [2, 2, S, 64]
  with L = S = 32, or L = 37 and S = 45, and a bias or mask broadcast to [2, 2, L, S].
"""

from __future__ import annotations

from spyrec.opcases.attention import attention_cases, mqa_cases, rotary_cases
from spyrec.opcases.core import SHAPES, OpCase, Outcome, elementwise_cases, run_case
from spyrec.opcases.elementwise import broadcasting_cases, div_mode_cases, predicate_cases
from spyrec.opcases.gathers import gather_cases
from spyrec.opcases.images import image_cases
from spyrec.opcases.masks import mask_algebra_cases
from spyrec.opcases.movement import (
    index_and_infinity_cases,
    masked_write_cases,
    movement_cases,
)
from spyrec.opcases.signals import routing_cases, signal_cases

__all__ = ["SHAPES", "OpCase", "Outcome", "cases", "run_case"]


def cases() -> list[OpCase]:
    """Every case of the matrix, family by family (the order `docs/coverage.md` lists)."""
    return [*elementwise_cases(), *image_cases(), *gather_cases(), *predicate_cases(),
            *attention_cases(), *broadcasting_cases(), *movement_cases(), *signal_cases(),
            *routing_cases(), *rotary_cases(), *mqa_cases(), *div_mode_cases(),
            *masked_write_cases(), *index_and_infinity_cases(), *mask_algebra_cases()]
