"""Indirect access tiles through the back end (design note 95): the kernels of
ktir/kernels/indirect.mlir (gathers by int32 and int64 index, a scatter updating its table
in place, a strided block per index, paged rows) match the KTIR interpreter; an index out
of the table faults with the instruction and the index, two cores scattering to one row
fault as a race, and what the DMA cannot express is refused at compile time naming the
op. Injected bugs in the pieces fail the same comparisons."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import edited_copy

import spyrec
import spyrec.ktir
from spyrec.diagnostics import CompileError
from spyrec.passes.ktir import ktir_indirect
from spyrec.runtime.memory import DeviceFault
from spyrec.verdict import check_outputs

KERNELS = Path(__file__).parent / "ktir" / "kernels" / "indirect.mlir"
RNG = np.random.default_rng(95)
TABLE = RNG.standard_normal((64, 64)).astype(np.float16)
IDS = np.array([[3, 3, 63, 0, 17, 5, 9, 9, 40, 41, 42, 1, 2, 60, 61, 8],
                [0, 1, 2, 3, 4, 5, 6, 7, 63, 62, 61, 60, 59, 58, 57, 3]], np.int64)
X = RNG.standard_normal((16, 8, 4, 64)).astype(np.float32)
POOL = RNG.standard_normal((8, 16, 64)).astype(np.float16)
VALS = RNG.standard_normal((16, 64)).astype(np.float16)
# core 0 scatters rows 0..7 of vals, core 1 rows 8..15: distinct across the cores, row 5
# twice on core 0 (its later row, vals[6], is kept, as the interpreter stores in tile order)
SLOTS = np.array([10, 11, 5, 12, 13, 14, 5, 30, 40, 41, 42, 43, 44, 45, 46, 63], np.int32)

CASES = {
    "embed_i64": ({"table": TABLE, "ids": IDS}, {"out": (32, 64), "dtype": np.float16}),
    "block_per_index": ({"x_ptr": X, "idx": np.array([15, 0, 7, 7], np.int32)},
                        {"out": (4, 8, 1, 64), "dtype": np.float32}),
    "paged_rows": ({"pool": POOL, "pages": np.array([6, 0, 7, 2], np.int32)},
                   {"out": (64, 64), "dtype": np.float16}),
}


def _compare(function: str, inputs: dict[str, np.ndarray], out: str | None,
             path: Path = KERNELS) -> bool:
    """The compiled kernel against the interpreter on `inputs` (+ a zero `out`)."""
    exe = spyrec.compile(path, function=function, numerics="ieee", cache=False)
    got = exe(*(torch.from_numpy(inputs[b.name]) for b in exe.binary.inputs))
    args = dict(inputs)
    if out is not None:
        shape, dtype = CASES[function][1][out], CASES[function][1]["dtype"]
        args[out] = np.zeros(shape, dtype)
    want = spyrec.ktir.execute(path, function, **args)[out or "table"]
    return check_outputs([torch.from_numpy(np.asarray(want))], got, exe).ok


@pytest.mark.parametrize("function", sorted(CASES))
def test_gathers_match_the_interpreter(function):
    assert _compare(function, CASES[function][0], "out")


def test_a_scatter_updates_its_table_in_place():
    inputs = {"vals": VALS, "idx": SLOTS, "table": TABLE}
    assert _compare("scatter_rows", inputs, None)
    exe = spyrec.compile(KERNELS, function="scatter_rows", numerics="ieee", cache=False)
    got = exe(*(torch.from_numpy(inputs[b.name]) for b in exe.binary.inputs))
    assert isinstance(got, torch.Tensor)
    got = got.numpy()
    untouched = np.setdiff1d(np.arange(64), SLOTS)
    assert np.array_equal(got[untouched], TABLE[untouched])  # the caller's rows kept
    assert np.array_equal(got[5], VALS[6])  # a core's repeated row: its last write


def test_paged_rows_are_one_gather_per_page_row():
    exe = spyrec.compile(KERNELS, function="paged_rows", cache=False)
    gathers = [i for i in exe.binary.kernels[0].programs[0] if i.op == "dma.gather"]
    assert len(gathers) == 16 and {i.arg("rows") for i in gathers} == {4}


@pytest.mark.parametrize("bad", [64, -1])
def test_an_index_outside_the_table_faults_located(bad):
    exe = spyrec.compile(KERNELS, function="embed_i64", cache=False)
    ids = IDS.copy()
    ids[1, 5] = bad
    with pytest.raises(DeviceFault) as info:
        exe(torch.from_numpy(TABLE), torch.from_numpy(ids))
    message = str(info.value)
    assert "core 1" in message and "dma.gather row 5" in message
    assert f"index {bad} is outside the table's rows [0, 64)" in message
    assert "kernel 'embed_i64'" in message


def test_two_cores_scattering_to_one_row_fault_as_a_race():
    exe = spyrec.compile(KERNELS, function="scatter_rows", cache=False)
    slots = SLOTS.copy()
    slots[12] = 10  # core 1's row 4 onto core 0's first row
    with pytest.raises(DeviceFault, match="table row 10 was also scattered to by core 0 in "
                       "this kernel; the cores are not ordered"):
        exe(torch.from_numpy(VALS), torch.from_numpy(slots), torch.from_numpy(TABLE))


def _edited(tmp_path: Path, old: str, new: str) -> Path:
    return edited_copy(KERNELS, tmp_path, old, new)


@pytest.mark.parametrize(("function", "old", "new", "message"), [
    # an element gather: the index on the contiguous dim
    ("paged_rows", "%vp[ind(%vb[%t floordiv 16]), (%t mod 16), (%d)]",
     "%vp[(%t floordiv 16), (%t mod 16), ind(%vb[%d floordiv 16])]",
     "the indirect subscript is on the last (contiguous) dim"),
    # the wrong element type for the indices (floats are refused by the op's verifier)
    ("embed_i64", "memref<2x16xi64>", "memref<2x16xi16>",
     "%ids gives the indices of the indirect access tile (%rows) but holds i16"),
    ("embed_i64", "memref<2x16xi64>", "memref<2x16xf32>",
     ("k.mlir:22:3: 'ktdp.construct_indirect_access_tile' op index view of subscript 0 "
      "holds f32, expected integers")),
    # a direct subscript past the view: the block's fifth slice of a 4-deep dim
    ("block_per_index", "%h = arith.constant 1 : index", "%h = arith.constant 4 : index",
     "reads coordinate 4 of dim 2, outside the table view's [0, 4)"),
    # an index position past the index view
    ("embed_i64", "ind(%vi[%x, %r])", "ind(%vi[%x, %r + 1])",
     "reads its index at position 16 of the index view's dim 1, outside [0, 16)"),
])
def test_what_the_dma_cannot_do_is_refused(tmp_path, function, old, new, message):
    with pytest.raises(CompileError) as info:
        spyrec.compile(_edited(tmp_path, old, new), function=function, cache=False)
    assert message in str(info.value)


def test_lx_rows_read_at_the_wrong_spacing_fail_the_check(monkeypatch):
    """Injected bug: every piece's LX rows taken as consecutive, so paged_rows writes a
    page's rows over its neighbours'."""
    pieces = ktir_indirect._pieces

    def bad(direct, index_at):
        return tuple(p.__class__(p.ddr, p.rows, p.index_addr, p.lx_row, 1)
                     for p in pieces(direct, index_at))
    monkeypatch.setattr(ktir_indirect, "_pieces", bad)
    assert not _compare("paged_rows", CASES["paged_rows"][0], "out")
