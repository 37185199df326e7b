"""Constructs of the public ktir-cpu kernels through the back end (design note 89): each
kernel of ktir/kernels/field_constructs.mlir compiles, matches the KTIR interpreter under
the tolerance model of `spyrec.verdict` on the device's DL16, and an injected bug in the
construct's lowering fails the same comparison."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import edited_copy

import spyrec
import spyrec.ktir
from spyrec.diagnostics import CompileError
from spyrec.frontend import ktir_input, ktir_parts, ktir_reshapes
from spyrec.passes.ktir import spyre_legalize_ktir
from spyrec.verdict import check_outputs

KERNELS = Path(__file__).parent / "ktir" / "kernels" / "field_constructs.mlir"
RNG = np.random.default_rng(11)


def _half(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float16)


CASES = {
    "grid_3d": ({"x_ptr": _half(32, 64)}, ("y_ptr", (32, 64)), {}),
    "row_rstd": ({"x_ptr": _half(8, 256)}, ("y_ptr", (8, 256)), {"eps": 1e-5}),
    "column_blocks": ({"x_ptr": _half(16, 256), "w_ptr": _half(16, 256)}, ("y_ptr", (16, 256)),
                      {}),
    "update_in_place": ({"t_ptr": _half(16, 64)}, ("t_ptr", (16, 64)), {}),
    "flat_sum": ({"x_ptr": _half(4, 64)}, ("y_ptr", (2, 64)), {}),
}


def _check(function: str, path: Path = KERNELS) -> bool:
    """Compile `function`, run it on the emulator and compare with the interpreter."""
    inputs, (out, shape), constants = CASES[function]
    exe = spyrec.compile(path, function=function, constants=constants, cache=False)
    got = exe(*(torch.from_numpy(x) for x in inputs.values()))
    arrays = {out: np.zeros(shape, np.float16), **inputs}  # an argument updated in place
    want = spyrec.ktir.execute(path, function, **constants, **arrays)[out]
    assert np.all(want != 0)
    return check_outputs([torch.from_numpy(np.asarray(want))], got, exe).ok


def _edited(tmp_path: Path, old: str, new: str) -> Path:
    return edited_copy(KERNELS, tmp_path, old, new)


@pytest.mark.parametrize("function", sorted(CASES))
def test_construct_matches_the_interpreter(function):
    assert _check(function)


def test_a_grid_read_as_its_transpose_fails_the_check(monkeypatch):
    """Injected bug: the grid [4, 1, 1] taken as [1, 4]: every core reads x = 0, so rows
    0..7 are written four times and rows 8..31 never."""
    monkeypatch.setattr(ktir_input, "_planar_grid", lambda kernel, where: (1, 4))
    assert not _check("grid_3d")


def test_a_z_extent_is_refused(tmp_path):
    path = _edited(tmp_path, "grid = [4, 1, 1]", "grid = [2, 1, 2]")
    with pytest.raises(CompileError, match=r"@grid_3d: grid \[2, 1, 2\] spreads the kernel "
                       r"over 2 planes \(z\); .* fold z into y \(grid = \[2, 2\]"):
        spyrec.compile(path, function="grid_3d", cache=False)


def test_a_dropped_element_op_fails_the_check(monkeypatch):
    """Injected bug: the scalar ops on the extracted sum (divf, addf, rsqrt) dropped, so
    each row is scaled by its sum of squares instead of its reciprocal RMS."""
    def dropped(self, op):
        self.replace(op, [op.operands[0]])

    monkeypatch.setattr(spyre_legalize_ktir._Kernel, "element_op", dropped)
    assert not _check("row_rstd")


def test_an_element_of_a_wider_tensor_is_refused(tmp_path):
    """An element extracted from a tensor of several elements is not computed on as its
    tensor (the op would compute every element, not the one extracted)."""
    path = _edited(tmp_path, "%s = tensor.extract %sum[%c0] : tensor<1xf16>",
                   "%wide = tensor.splat %zero : tensor<2xf16>\n"
                   "      %s0 = tensor.extract %sum[%c0] : tensor<1xf16>\n"
                   "      %w0 = tensor.extract %wide[%c0] : tensor<2xf16>\n"
                   "      %s = arith.addf %s0, %w0 : f16")
    with pytest.raises(CompileError, match=r"arith.addf \(%s\): it computes on elements "
                       r"extracted from .* one-element tensor"):
        spyrec.compile(path, function="row_rstd", constants={"eps": 1e-5}, cache=False)


def _misplaced_block(tmp_path: Path) -> Path:
    """column_blocks with block 1's view at the pointer itself: the interpreter reads
    block 0's elements for block 1's coordinates."""
    return _edited(tmp_path, "%w1_ptr = arith.addi %w_ptr, %c128",
                   "%w1_ptr = arith.addi %w_ptr, %c0")


def test_a_block_not_at_its_origin_is_refused(tmp_path):
    with pytest.raises(CompileError, match=r"argument %w_ptr is a tensor address offset by integer "
                       r"arithmetic before it is viewed"):
        spyrec.compile(_misplaced_block(tmp_path), function="column_blocks", cache=False)


def test_a_block_merged_without_its_offset_fails_the_check(monkeypatch, tmp_path):
    """Injected bug: the offset check dropped, so the misplaced block is merged into a view
    of the whole tensor and block 1 reads its own columns, not the interpreter's."""
    monkeypatch.setattr(ktir_parts, "_at_origin", lambda offset, box, strides: True)
    assert not _check("column_blocks", _misplaced_block(tmp_path))


def test_an_update_in_place_without_aliasing_fails_the_check(monkeypatch):
    """Injected bug: the launch not marked `spyre.inplace`, so the result gets a buffer of
    its own and the kernel loads the tensor from it (zeros), not from the input."""
    class Unmarked:
        @staticmethod
        def set(op, value):
            pass

    monkeypatch.setattr(ktir_input, "INPLACE", Unmarked)
    assert not _check("update_in_place")


@pytest.mark.parametrize(("old", "new", "message"), [
    ('func.func @update_in_place(%t_ptr: index) attributes {grid = [1]}',
     'func.func @update_in_place(%t_ptr: index) attributes {grid = [2]}',
     (r"argument %t_ptr is both loaded and stored \(updated in place\) on 2 cores; a core "
     r"could read what another has written")),
    ('ktdp.store %u, %tt : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>\n    return',
     ('ktdp.store %u, %tt : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>\n'
     '    %again = ktdp.load %tt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>\n'
     '    ktdp.store %again, %tt : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>\n    return'),
     r"ktdp.load \(%again\) reads argument %t_ptr after a ktdp.store to it"),
    ('%u = arith.addf %sq, %t : tensor<16x64xf16>',
     ('%t2 = ktdp.load %tt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>\n'
     '    %u = arith.addf %t2, %t2 : tensor<16x64xf16>'),
     r"the value ktdp.store writes to argument %t_ptr does not depend on ktdp.load \(%t\)"),
])
def test_an_unordered_update_in_place_is_refused(tmp_path, old, new, message):
    with pytest.raises(CompileError, match=message):
        spyrec.compile(_edited(tmp_path, old, new), function="update_in_place", cache=False)


def test_a_flat_sum_without_the_ring_fails_the_check(monkeypatch):
    """Injected bug: the expanded sum replaced by the core's own partial (the ring dropped):
    core 0 stores X0, not X0 + X1."""
    def own_partial(produce, reduce, collapse, fill, shaped):
        for use in list(reduce.results[0].uses):
            use.operation.results[0].replace_all_uses_with(collapse.src)
            ktir_reshapes._erase(use.operation)
        for op in (reduce, produce, collapse):
            ktir_reshapes._erase(op)

    monkeypatch.setattr(ktir_reshapes, "_rebuild", own_partial)
    assert not _check("flat_sum")
