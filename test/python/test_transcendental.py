"""The elementary functions composed of SFU ops (passes/graph/legalize/transcendental.py):
the op matrix (`test_ops`, `test_special_values`) runs them in every dtype and shape; these
show its comparison catches what a wrong composition would do: a polynomial coefficient off
by 1e-4 (an atan error of about 1e-6 of its value, fp32) and an odd function losing its
sign."""

from __future__ import annotations

import pytest
import torch

from spyrec.opcases import cases, run_case
from spyrec.passes.graph.legalize import transcendental


def _case(op: str, dtype: torch.dtype):
    return next(c for c in cases() if c.op == op and c.dtype == dtype and c.shape == "aligned")


def test_the_clean_compositions_pass_and_a_coefficient_off_by_1e_4_fails_in_fp32(monkeypatch):
    assert run_case(_case("atan", torch.float32)).passed
    q = transcendental.ATAN_Q
    monkeypatch.setattr(transcendental, "ATAN_Q", (q[0], q[1] + 1e-4, *q[2:]))
    outcome = run_case(_case("atan", torch.float32))
    assert not outcome.passed and outcome.aggregate_ratio > 1.0


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
def test_an_odd_function_that_loses_its_sign_fails(monkeypatch, dtype):
    monkeypatch.setattr(transcendental._Build, "odd", lambda self, x, magnitude: magnitude)
    outcome = run_case(_case("asinh", dtype))
    assert not outcome.passed and outcome.element_ratio > 10.0
