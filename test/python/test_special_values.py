"""Special values (NaN, +-inf, +-0, values that overflow) through every op of the coverage
matrix, compared with eager by class (`spyrec/special_values.py`, design note 62).

Ops of one dtype and shape family that read the same inputs run as one program with an
output per op. An op listed in `KNOWN` (or, in fp16 and bf16, `KNOWN_16BIT`) may differ,
and each op of `KNOWN` must still differ in fp32 (the list may not outlive the deviation);
every other op must pass `spyrec.verdict.check_outputs`: NaN where eager has NaN, the same
infinities, and the finite values within their bounds.
"""

from __future__ import annotations

import pytest
import torch

import spyrec
from spyrec.special_values import CPU_DEPENDENT, KNOWN, SpecialGroup, known, special_groups
from spyrec.verdict import OutputVerdict, check_outputs

GROUPS = special_groups()


def _verdicts(group: SpecialGroup) -> dict[str, OutputVerdict]:
    """op -> the verdict of `check_outputs` on its output (classes, then the finite values
    within their bounds)."""
    torch.manual_seed(0)
    model = group.module().eval()
    inputs = group.inputs(torch.Generator().manual_seed(0))
    exe = spyrec.compile(torch.export.export(model, inputs))
    actual = exe(*inputs)
    with torch.no_grad():
        expected = model(*inputs)
    ops = [case.op for case in group.cases]
    verdict = check_outputs(expected, actual, exe, names=ops)
    return {out.name: out for out in verdict.outputs}


# bfloat16 is stored on the device as DL16 like float16, whose groups run in CI; its groups
# run in the opt-in tier (SPYREC_SLOW=1), CI's 30-minute limit being why (design note 99)
@pytest.mark.parametrize("group", [
    pytest.param(g, id=g.id, marks=(pytest.mark.slow,) if g.cases[0].dtype == torch.bfloat16
                 else ()) for g in GROUPS])
def test_special_values_match_eager_by_class(group):
    verdicts = _verdicts(group)
    dtype = group.cases[0].dtype
    wrong = [str(v) for op, v in verdicts.items() if not v.ok and not known(op, dtype)]
    assert not wrong, "\n" + "\n".join(wrong)
    fixed = [op for op, v in verdicts.items()
             if op in KNOWN and op not in CPU_DEPENDENT and v.ok]
    # a 16-bit input holds no infinity, so some known deviations only show in fp32
    if dtype == torch.float32:
        assert not fixed, f"{fixed} now match eager: remove them from KNOWN"
