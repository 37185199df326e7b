"""Constant tensors built by op selection (selection matrices, identities, fills) are packed
by NumPy (`graph_build.dense_values`); the bytes must be exactly what xDSL's per-element
`DenseIntOrFPElementsAttr.from_list` writes, special values and overflow included."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    TensorType,
    bf16,
    f16,
    f32,
    f64,
    i32,
    i64,
)

from spyrec.passes.graph.graph_build import dense_values

SPECIAL = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0, -1.0, 65504.0, 6e-8, 1e-8, 3.4e38]


@pytest.mark.parametrize("element", [f16, f32, f64, bf16], ids=["f16", "f32", "f64", "bf16"])
def test_packed_like_from_list(element):
    values = np.concatenate([np.random.default_rng(0).standard_normal(257) * 100, SPECIAL])
    if element is f16:
        values = values[~(np.abs(values) > 65504.0) | np.isinf(values)]
    ttype = TensorType(element, [values.size])
    expected = DenseIntOrFPElementsAttr.from_list(ttype, [float(v) for v in values])
    assert dense_values(ttype, values) == expected


def test_overflow_refused_as_before():
    """A finite value past f16's range is refused (struct's OverflowError), not made inf."""
    with pytest.raises(OverflowError):
        dense_values(TensorType(f16, [2]), np.array([1.0, 1e6]))


@pytest.mark.parametrize("element", [i32, i64], ids=["i32", "i64"])
def test_integers_packed_like_from_list(element):
    """Row maps of element moves (int64) and int32 constants: the same bytes as
    `from_list`, extremes of the type included; a value past the width is refused as
    before (xDSL's range for the width), never wrapped by NumPy."""
    bits = 32 if element is i32 else 64
    values = np.concatenate([np.random.default_rng(1).integers(-1000, 1000, 300),
                             [0, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1]])
    ttype = TensorType(element, [values.size])
    expected = DenseIntOrFPElementsAttr.from_list(ttype, [int(v) for v in values])
    assert dense_values(ttype, values) == expected
    if element is i32:
        with pytest.raises(ValueError, match="out of range"):
            dense_values(TensorType(i32, [1]), np.array([2 ** 32 + 5]))
