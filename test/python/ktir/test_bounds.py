"""The back end's static bound check (passes/ktir/ktir_bounds.py) on its own: what it proves,
what it leaves to the emulator, and that it stays cheap."""

from __future__ import annotations

import pytest

from spyrec.diagnostics import CompileError
from spyrec.passes.ktir.ktir_bounds import check_tile_bounds
from spyrec.runtime.ktir_interpreter import parse_ktir

HEADER = """#v = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
"""
VIEW = ("%vx = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [64, 1] "
        "{coordinate_set = #v, memory_space = #ktdp.memory_space<global>} : memref<64x64xf32>")


def tile_at(row: str) -> str:
    return (f"%t = ktdp.construct_access_tile %vx[{row}, 0] {{access_tile_set = #rows, "
            "access_tile_order = #id2} : memref<64x64xf32> -> !ktdp.access_tile<8x64xindex>\n"
            "  %d = ktdp.load %t : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf32>")


def check(body: str, grid: str = "[1, 1]") -> None:
    text = (f"{HEADER}func.func @k(%x: index, %i: index) attributes {{grid = {grid}}} {{\n"
            f"  {VIEW}\n{body}\n  func.return\n}}\n")
    kernel = next(iter(parse_ktir(text).body.block.ops))
    check_tile_bounds(kernel)  # type: ignore[arg-type]


def test_affine_apply_and_division_are_evaluated():
    # tile (x, y) of a 4x2 grid reads rows 8 * (2x + y) .. + 7 through affine.apply and
    # arith.divui; the last tile's rows 56..63 are the view's last ones
    body = """  %x2, %y2 = ktdp.get_compute_tile_id : index, index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %r = affine.apply affine_map<(d0, d1) -> (d0 * 16 + d1 * 8)>(%x2, %y2)
  %q = arith.divui %r, %c2 : index
  %row = arith.muli %q, %c2 : index
  """ + tile_at("%row")
    check(body, "[4, 2]")
    with pytest.raises(CompileError, match=r"core 7 \(x=3, y=1\): ktdp.load \(%d\) loads tile "
                       r"%t at coordinates \[64..71, 0..63\]"):
        check(body.replace("d1 * 8", "d1 * 8 + 8"), "[4, 2]")


def test_tiles_that_may_not_run_are_left_alone():
    # under an scf.if on a value only a run knows, or in a loop whose trip count is a
    # kernel argument, a tile past the view may never be accessed: not refused
    check("""  %c100 = arith.constant 100 : index
  %small = arith.cmpi ult, %i, %c100 : index
  scf.if %small {
    """ + tile_at("%i") + """
  }""")
    check("""  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c60 = arith.constant 60 : index
  scf.for %k = %c0 to %i step %c1 {
    """ + tile_at("%c60") + """
  }""")


def test_a_long_loop_stays_cheap(monkeypatch):
    # 10^12 iterations: the budget (BUDGET steps) stops the unrolling and leaves the loop to
    # the emulator, which still range-checks every DMA; counted, not timed
    from spyrec.passes.ktir import ktir_bounds

    steps = []
    step = ktir_bounds._Core.step
    monkeypatch.setattr(ktir_bounds._Core, "step", lambda self: (steps.append(1), step(self)))
    check("""  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %big = arith.constant 1000000000000 : index
  scf.for %k = %c0 to %big step %c1 {
    """ + tile_at("%c0") + """
  }""")
    assert len(steps) == ktir_bounds.BUDGET + 1
