"""Every op of the coverage matrix (`spyrec/opcases/`) against PyTorch eager.

Ops x dtypes (fp16, bf16, fp32) x shapes (stick-aligned 64x128, unaligned 67x255, 3-D
2x5x100, and row broadcasting for binary ops). Compared by `spyrec.verdict.check_outputs`:
per-element bounds and the aggregate error from each output's dtype, reduction depth and
rounding points, NaN/inf by class.
`python -m spyrec.tools.op_coverage` writes the same matrix to docs/coverage.md.
"""

from __future__ import annotations

import pytest
import torch
from conftest import assert_close, one

from spyrec.opcases import cases, run_case

CASES = cases()


# CI runs every op in float16 at the unaligned shape and the op-specific families
# (broadcast, image, signal, mask, heads: the fast tier) and in float32 at the unaligned
# shape (the slow tier, `heavy`). The rest is in the opt-in tier (SPYREC_SLOW=1): the rank
# families 1d / 3d / 5d (how leading dims become rows is the row merge the families' 3-D
# and 4-D shapes exercise), the aligned shape (the unaligned one runs the same lowering
# plus the stick padding), bfloat16 (DL16 storage as fp16; its own rounding is the
# cast's), and float32's families. docs/coverage.md (`python -m spyrec.tools.op_coverage`)
# measures every case; CI's 30-minute limit is why the split exists (design note 99).
RANK_FAMILIES = ("1d", "3d", "5d")
OPT_IN_FP16 = (*RANK_FAMILIES, "aligned")


def _tier(case) -> tuple:
    if case.dtype == torch.float16:
        return (pytest.mark.slow,) if case.shape in OPT_IN_FP16 else ()
    if case.dtype == torch.float32:  # the unaligned shape; the rest opt-in
        return (pytest.mark.heavy, *((pytest.mark.slow,) if case.shape != "unaligned" else ()))
    if case.dtype == torch.bfloat16:
        return (pytest.mark.heavy, pytest.mark.slow)
    return (pytest.mark.heavy,)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=_tier(c)) for c in CASES])
def test_op_matches_eager(case):
    outcome = run_case(case)
    if case.refused:  # a known gap: it must be refused at compile time, with this reason
        assert not outcome.passed and case.refused in outcome.reason, outcome.reason
        return
    assert outcome.passed, outcome.reason


@pytest.mark.parametrize("shape", [(67, 67), (64, 160), (3, 32)], ids=str)
@pytest.mark.parametrize("fn", [lambda a, b: a.float() * 2, lambda a, b: a + b],
                         ids=["cast", "add_mixed"])
def test_f16_and_f32_in_one_kernel(shape, fn):
    """A kernel reading f16 and writing f32 tiles its columns in f16 sticks (64 elements),
    so every tile starts on a stick of both; with N % 64 in (0, 32] the last tile is wider
    than the f32 rows' padding (67 columns: 96 padded in f32, 128 in f16), and each DMA
    moves only its view's sticks (it used to run past the allocation: a device fault)."""
    import spyrec
    from spyrec.opcases.core import _Fn

    gen = torch.Generator().manual_seed(0)
    a = torch.randn(*shape, generator=gen).half()
    b = torch.randn(*shape, generator=gen)
    model = _Fn(fn)
    exe = spyrec.compile(torch.export.export(model, (a, b)))
    expected = model(a, b)
    out = one(exe(a, b))
    assert out.dtype == torch.float32
    assert_close(exe, expected, out)
