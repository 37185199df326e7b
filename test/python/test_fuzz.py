"""Bounded fuzzing in CI: random programs against eager, damaged IR text, damaged .spyre.

Derandomised (the same examples every run) and small; `python -m spyrec.tools.fuzz` runs
many more (docs/fuzzing.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import export_mlp
from hypothesis import HealthCheck, Phase, given, settings

import spyrec
from spyrec.fuzz import (
    ProgramSpec,
    Step,
    check_ir_text,
    check_program,
    check_spyre_bytes,
    damaged_bytes,
    damaged_texts,
    programs,
)


def ci(examples: int) -> settings:
    # no shrinking in CI: a failing example is printed as it was drawn (shrinking one
    # compiled program at a time took minutes)
    return settings(derandomize=True, database=None, deadline=None, max_examples=examples,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


LIT = Path(__file__).parents[1] / "lit"
SEEDS = [p.read_text() for p in sorted((LIT / "dialects").rglob("*.mlir"))[:12]]


@ci(12)
@given(programs())
def test_random_programs_match_eager(spec):
    check_program(spec)


@pytest.mark.parametrize("spec", [
    # unaligned rows and columns through a linear layer, a broadcast operand and a norm
    ProgramSpec("float16", (3, 67), (Step("linear", (100, 1)), Step("binary_tensor", (0, 1)),
                                     Step("layer_norm"))),
    # size-1 dims, a leading-dim sum and a row softmax in bf16
    ProgramSpec("bfloat16", (1, 17, 64), (Step("sum_lead", (0,)), Step("softmax"))),
    # found by the fuzzer and fixed: a row reduction over one column broke spyre-place-memory
    ProgramSpec("float16", (3,), (Step("unsqueeze"), Step("sum_last"),
                                  Step("slice_lead", (0, 0, 2)), Step("rms_norm"))),
    # found by the fuzzer and fixed: rms_norm's default eps is fp32's for fp16 inputs too
    ProgramSpec("float16", (6, 64), (Step("binary_scalar", (2, 4)), Step("rms_norm"))),
    # found by the fuzzer and fixed: a matmul whose only result is its rows' maximum (every
    # kernel value but the product one column) had no output width in convert-spyre-to-ktir
    ProgramSpec("float32", (64, 64), (Step("amax_last"), Step("linear", (128, 0)),
                                      Step("linear", (128, 0)), Step("amax_last"))),
    ProgramSpec("bfloat16", (16, 16), (Step("linear", (100, 0)), Step("slice_lead", (0, 0, 1)),
                                       Step("mean_last"), Step("unsqueeze"))),
], ids=str)
def test_fixed_programs(spec):
    assert check_program(spec) == "ok"


@ci(40)
@given(damaged_texts(SEEDS))
def test_spyre_opt_never_crashes_on_damaged_ir(tmp_path_factory, text):
    check_ir_text(text, None, tmp_path_factory.mktemp("ir"))


@pytest.fixture(scope="module")
def spyre_bytes(tmp_path_factory) -> bytes:
    _, _, ep = export_mlp(64, torch.float16, batch=16)
    path = tmp_path_factory.mktemp("spyre") / "m.spyre"
    spyrec.compile(ep, output=path)
    return path.read_bytes()


def test_loader_never_crashes_on_damaged_files(spyre_bytes, tmp_path):
    @ci(60)
    @given(damaged_bytes(spyre_bytes))
    def damaged(data):
        check_spyre_bytes(data, tmp_path)

    damaged()
    assert check_spyre_bytes(spyre_bytes, tmp_path) == "loaded"


def test_every_header_byte_is_checked(spyre_bytes, tmp_path):
    """No checksum covers the header: magic, version, flags, manifest length and digest are
    each checked, so a flip of any of its 56 bytes is refused (the flags once were not)."""
    for position in range(56):
        data = bytearray(spyre_bytes)
        data[position] ^= 0x10
        assert check_spyre_bytes(bytes(data), tmp_path) == "refused", position
