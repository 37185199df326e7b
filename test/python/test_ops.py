"""Every op of the coverage matrix (`spyrec/opcases.py`) against PyTorch eager.

Ops x dtypes (fp16, bf16, fp32) x shapes (stick-aligned 64x128, unaligned 67x255, 3-D
2x5x100, and row broadcasting for binary ops). Tolerances from `Executable.tolerance`: the
coarsest dtype at the host boundary, the program's reduction depth and rounding points.
`python -m spyrec.tools.op_coverage` writes the same matrix to docs/coverage.md.
"""

from __future__ import annotations

import pytest

from spyrec.opcases import cases, run_case

CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_op_matches_eager(case):
    outcome = run_case(case)
    if case.refused:  # a known gap: it must be refused at compile time, with this reason
        assert not outcome.passed and case.refused in outcome.reason, outcome.reason
        return
    assert outcome.passed, outcome.reason
