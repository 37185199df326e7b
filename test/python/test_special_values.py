"""Special values (NaN, +-inf, +-0, values that overflow) through every op of the coverage
matrix, compared with eager by class (`spyrec/special_values.py`, design note 62).

Ops of one dtype and shape family that read the same inputs run as one program with an
output per op. An op listed in `KNOWN` (or, in fp16 and bf16, `KNOWN_16BIT`) may differ, and one of
`KNOWN` must still differ in fp32 (the list may not outlive the deviation); every other op
must give NaN where eager does, the same infinities, and finite values where eager's are
finite.
"""

from __future__ import annotations

import pytest
import torch

import spyrec
from spyrec.special_values import KNOWN, SpecialGroup, known, same_classes, special_groups

GROUPS = special_groups()


def _verdicts(group: SpecialGroup) -> dict[str, str]:
    """op -> "" when the device's output matches eager's by class, else what differs."""
    torch.manual_seed(0)
    model = group.module().eval()
    inputs = group.inputs(torch.Generator().manual_seed(0))
    exe = spyrec.compile(torch.export.export(model, inputs))
    actual = exe(*inputs)
    actual = actual if isinstance(actual, tuple) else (actual,)
    with torch.no_grad():
        expected = model(*inputs)
    out = {}
    for case, e, a in zip(group.cases, expected, actual):
        if not e.dtype.is_floating_point:  # indices: exact
            out[case.op] = "" if torch.equal(e, a) else f"{int((e != a).sum())} indices differ"
        else:
            out[case.op] = same_classes(e, a, dl16=e.dtype != torch.float32)
    return out


@pytest.mark.parametrize("group", GROUPS, ids=[g.id for g in GROUPS])
def test_special_values_match_eager_by_class(group):
    verdicts = _verdicts(group)
    dtype = group.cases[0].dtype
    wrong = {op: why for op, why in verdicts.items() if why and not known(op, dtype)}
    assert not wrong, wrong
    fixed = [op for op, why in verdicts.items() if op in KNOWN and not why]
    # a 16-bit input holds no infinity, so some known deviations only show in fp32
    if dtype == torch.float32:
        assert not fixed, f"{fixed} now match eager: remove them from KNOWN"
