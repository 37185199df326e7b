"""A hand-written kernel whose own tiles fit LX only with one slot each is placed single
buffered (`spyre.single_buffered`) and still matches the interpreter; one that does not fit
even so is refused naming its largest tiles (spyre-place-memory). The kernel's sum is a
named `linalg.add` into a `tensor.empty`, a form the streaming of wide rows
(spyrec/frontend/ktir_stream.py) leaves as written: the placement sees the kernel's tiles."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

import spyrec
import spyrec.ktir
from spyrec.diagnostics import CompileError
from spyrec.driver import compile_program
from spyrec.verdict import check_outputs

KERNEL = """module {
  func.func @wide_rows(%x_ptr: index, %y_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [2, N], strides: [N, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + LAST >= 0)>,
      memory_space = #ktdp.memory_space<global>
    } : memref<2xNxf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [2, N], strides: [N, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + LAST >= 0)>,
      memory_space = #ktdp.memory_space<global>
    } : memref<2xNxf16>
    scf.for %r = %c0 to %c2 step %c1 {
      %xt = ktdp.construct_access_tile %xv[%r, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + LAST >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<2xNxf16> -> !ktdp.access_tile<1xNxindex>
      %yt = ktdp.construct_access_tile %yv[%r, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + LAST >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<2xNxf16> -> !ktdp.access_tile<1xNxindex>
      %x = ktdp.load %xt : !ktdp.access_tile<1xNxindex> -> tensor<1xNxf16>
      %e = tensor.empty() : tensor<1xNxf16>
      %y = linalg.add ins(%x, %x : tensor<1xNxf16>, tensor<1xNxf16>)
                      outs(%e : tensor<1xNxf16>) -> tensor<1xNxf16>
      ktdp.store %y, %yt : tensor<1xNxf16>, !ktdp.access_tile<1xNxindex>
    }
    return
  }
}
"""


def _kernel(tmp_path, cols: int):
    path = tmp_path / f"wide_{cols}.mlir"
    path.write_text(KERNEL.replace("LAST", str(cols - 1)).replace("N", str(cols)))
    return path


@pytest.mark.parametrize(("cols", "single"), [(65536, False), (262144, True)])
def test_rows_fit_double_or_single_buffered(tmp_path, cols, single):
    """128 KB rows fit twice over; 512 KB rows (a load and a sum, 2 MB double buffered)
    fit one slot each, and the result is the same."""
    path = _kernel(tmp_path, cols)
    text = io.StringIO()
    compile_program(path, tmp_path / "k.spyre", stop_after="ktir", print_ir=text)
    assert ("spyre.single_buffered" in text.getvalue()) == single
    x = np.random.default_rng(3).standard_normal((2, cols)).astype(np.float16)
    exe = spyrec.compile(path, numerics="ieee", cache=False)
    got = exe(torch.from_numpy(x))
    want = spyrec.ktir.execute(path, "wide_rows", x_ptr=x, y_ptr=np.zeros_like(x))["y_ptr"]
    assert check_outputs([torch.from_numpy(want)], got, exe).ok


def test_rows_too_wide_even_single_buffered_are_refused(tmp_path):
    with pytest.raises(CompileError, match=r"kernel @wide_rows: its tiles need \d+ B of LX "
                       r"with double buffering \(\d+ B with one buffer each\) but only \d+ B "
                       r"are usable \(largest: %x \(tensor<1x786432xf16>"):
        spyrec.compile(_kernel(tmp_path, 786432), cache=False)
