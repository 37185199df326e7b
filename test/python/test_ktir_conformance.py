"""The KTIR conformance command (`benchmarks/ktir_conformance.py`) on a fake ktir-cpu checkout.

The kernels are written here, small, under the file and function names of ktir-cpu examples
that have references, so the command's references apply to them: a correct vector add
matches; a scalar broadcast that doubles its value is a mismatch, which proves the
comparison can fail; a kernel without a reference is `no reference`, a file that does not
parse is an error, and neither stops the others. In the slow tier, a kernel goes through
compile, `run --check` and profile, and a buggy dynamic vector add runs as written and as
its masked-tail variants.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
conformance = importlib.import_module("ktir_conformance")  # the command, from benchmarks/


def _vector(name: str, n: int, dtype: str, block: str, op: str, params: str,
            grid: str) -> str:
    """A 1-D elementwise kernel: out = x OP y over n elements, tiles of 128 per core."""
    views = "\n".join(
        f"    %{v}v = ktdp.construct_memory_view %{v}, sizes: [{n}], strides: [1] {{"
        f"coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + {n - 1} >= 0)>, memory_space = "
        f"#ktdp.memory_space<global>}} : memref<{n}x{dtype}>\n"
        f"    %{v}t = ktdp.construct_access_tile %{v}v[%off] {{access_tile_set = "
        f"affine_set<(d0) : (d0 >= 0, -d0 + 127 >= 0)>, access_tile_order = "
        f"affine_map<(d0) -> (d0)>}} : memref<{n}x{dtype}> -> !ktdp.access_tile<128xindex>"
        for v in ("x_ptr", "y_ptr", "output_ptr"))
    return f"""module {{
  func.func @{name}(%x_ptr: index, %y_ptr: index, %output_ptr: index{params})
      attributes {{grid = {grid}}} {{
    %id = ktdp.get_compute_tile_id : index
    %block = arith.constant 128 : index
    %off = arith.muli %id, {block} : index
{views}
    %a = ktdp.load %x_ptrt : !ktdp.access_tile<128xindex> -> tensor<128x{dtype}>
    %b = ktdp.load %y_ptrt : !ktdp.access_tile<128xindex> -> tensor<128x{dtype}>
    %c = arith.{op} %a, %b : tensor<128x{dtype}>
    ktdp.store %c, %output_ptrt : tensor<128x{dtype}>, !ktdp.access_tile<128xindex>
    return
  }}
}}
"""


def _dynamic(op: str) -> str:
    """Triton's dynamic vector add: views of n_elements, one 1024-lane tile from 0."""
    views = "\n".join(
        f"    %{v}v = ktdp.construct_memory_view %{v}, sizes: [%n], strides: [1] {{"
        "coordinate_set = affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0)>, memory_space = "
        f"#ktdp.memory_space<global>}} : memref<?xf32>\n"
        f"    %{v}t = ktdp.construct_access_tile %{v}v[%c0] {{access_tile_set = "
        "affine_set<(d0) : (d0 >= 0, -d0 + 1023 >= 0)>, access_tile_order = "
        "affine_map<(d0) -> (d0)>} : memref<?xf32> -> !ktdp.access_tile<1024xindex>"
        for v in ("x_ptr", "y_ptr", "output_ptr"))
    return f"""module {{
  func.func @add_kernel_dynamic(%x_ptr: index, %y_ptr: index, %output_ptr: index,
                                %n_elements: i32) attributes {{grid = [1]}} {{
    %c0 = arith.constant 0 : index
    %n = arith.index_cast %n_elements : i32 to index
{views}
    %a = ktdp.load %x_ptrt : !ktdp.access_tile<1024xindex> -> tensor<1024xf32>
    %b = ktdp.load %y_ptrt : !ktdp.access_tile<1024xindex> -> tensor<1024xf32>
    %c = arith.{op} %a, %b : tensor<1024xf32>
    ktdp.store %c, %output_ptrt : tensor<1024xf32>, !ktdp.access_tile<1024xindex>
    return
  }}
}}
"""


SCALAR_BROADCAST_DOUBLED = """module {
  func.func @scalar_broadcast(%in_ptr: index, %out_ptr: index) attributes {grid = [1, 1]} {
    %c0 = arith.constant 0 : index
    %iv = ktdp.construct_memory_view %in_ptr, sizes: [1, 1], strides: [1, 1] {coordinate_set =
      affine_set<(d0, d1) : (d0 == 0, d1 == 0)>, memory_space = #ktdp.memory_space<global>}
      : memref<1x1xf16>
    %it = ktdp.construct_access_tile %iv[%c0, %c0] {access_tile_set = affine_set<(d0, d1) :
      (d0 == 0, d1 == 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>}
      : memref<1x1xf16> -> !ktdp.access_tile<1x1xindex>
    %in = ktdp.load %it : !ktdp.access_tile<1x1xindex> -> tensor<1x1xf16>
    %twice = arith.addf %in, %in : tensor<1x1xf16>
    %s = tensor.extract %twice[%c0, %c0] : tensor<1x1xf16>
    %b = tensor.splat %s : tensor<4x64xf16>
    %ov = ktdp.construct_memory_view %out_ptr, sizes: [4, 64], strides: [64, 1] {coordinate_set =
      affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<4x64xf16>
    %ot = ktdp.construct_access_tile %ov[%c0, %c0] {access_tile_set = affine_set<(d0, d1) :
      (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order =
      affine_map<(d0, d1) -> (d0, d1)>} : memref<4x64xf16> -> !ktdp.access_tile<4x64xindex>
    ktdp.store %b, %ot : tensor<4x64xf16>, !ktdp.access_tile<4x64xindex>
    return
  }
}
"""


def _checkout(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "examples" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_interpreter_statuses_and_report(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path / "ktir-cpu", {
        "triton-ktir/vector_add_ktir.mlir": _vector(
            "add_kernel", 256, "f16", "%BLOCK_SIZE", "addf", ", %BLOCK_SIZE: index", "[2, 1]"),
        # a deliberate bug: the broadcast value doubled
        "ktir/scalar_broadcast.mlir": SCALAR_BROADCAST_DOUBLED,
        "sdsc/own.mlir": _vector("own", 128, "f16", "%block", "mulf", "", "[1, 1]"),
        "rfc/broken.mlir": "module { func.func @broken( }\n",
        "elsewhere/ignored.mlir": _vector("ignored", 128, "f16", "%block", "addf", "", "[1]"),
    })
    report = tmp_path / "report.md"
    conformance.main([str(checkout), "--interpreter-only", "--report", str(report),
                      "--timeout", "120"])
    text = report.read_text()
    rows = {line.split(" | ")[0].removeprefix("| "): line.split(" | ")[1]
            for line in text.splitlines() if line.startswith("| ") and ".mlir" in line}
    assert rows["triton-ktir/vector_add_ktir.mlir: @add_kernel"] == "match"
    assert rows["ktir/scalar_broadcast.mlir: @scalar_broadcast"].startswith(
        "mismatch: %out_ptr at (0, 0)"), rows
    assert rows["sdsc/own.mlir: @own"] == "no reference"
    assert rows["rfc/broken.mlir: @broken"].startswith("error: rfc/broken.mlir:1:")
    assert not any("ignored" in k for k in rows)
    # the kernel's own bytes: 2 cores x 128 f16 elements x (2 loads + 1 store)
    cells = {line.split(" | ")[0].removeprefix("| "): line.split(" | ")
             for line in text.splitlines() if line.startswith("| ") and ".mlir" in line}
    assert cells["triton-ktir/vector_add_ktir.mlir: @add_kernel"][6] == str(2 * 128 * 2 * 3)
    assert ("4 kernels in 4 runs (a variant is a run): interpreter **1 match**, 1 mismatch, "
            "1 no reference, 1 refused") in text


def test_compare_bounds() -> None:
    """The bound is ulps roundoffs of |reference| plus 1/16 of the scale: one f16 ulp off
    passes at 4 ulps, a 1 % error does not; NaN where the reference has none fails."""
    want = np.linspace(-4, 4, 64).astype(np.float16)
    one_ulp = np.nextafter(want, np.float16(np.inf))
    assert conformance.compare(one_ulp, want, 4.0) is None
    assert conformance.compare((want * np.float16(1.01)).astype(np.float16), want, 4.0)
    assert conformance.compare(one_ulp, want, 0.0) is not None
    broken = want.copy()
    broken[3] = np.nan
    assert "NaN" in (conformance.compare(broken, want, 4.0) or "")


@pytest.mark.heavy
@pytest.mark.slow  # 100 s; the lit ktir-backend tests run each construct in CI
def test_backend_columns_and_masked_variants(tmp_path: Path) -> None:
    """A kernel the back end compiles gets every column: compile ok, the check's verdict,
    emulated µs and off-chip bytes against the minimum. The dynamic vector add, here with a
    deliberate bug (it subtracts), runs as written and as its two masked-tail variants, and
    all three are mismatches against the reference; the back end compiles the variants and
    their binaries agree with the interpreter, moving only the elements in range."""
    checkout = _checkout(tmp_path / "ktir-cpu", {
        "triton-ktir/vector_add_ktir.mlir": _vector(
            "add_kernel", 512, "f16", "%block", "addf", "", "[4, 1]"),
        "triton-ktir/vector_add_dynamic_ktir.mlir": _dynamic("subf"),
    })
    report = tmp_path / "report.md"
    conformance.main([str(checkout), "--report", str(report), "--timeout", "300"])
    lines = report.read_text().splitlines()
    row = next(line for line in lines if "@add_kernel |" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:4] == ["match", "ok", "match"], row
    assert float(cells[4]) > 0
    moved, minimum = (int(v) for v in cells[5].split(" / "))
    assert minimum == 3 * 512 * 2 and moved >= minimum
    dynamic = [[c.strip() for c in line.strip("|").split("|")] for line in lines
               if "@add_kernel_dynamic" in line]
    assert [c[0].split("(")[-1] for c in dynamic[1:]] == [
        "n_elements=256, masked tails)", "n_elements=512, masked tails)"]
    for cells in dynamic:
        assert cells[1].startswith("mismatch: %output_ptr at"), cells
    # the back end compiles the masked variants too (note 88): the binary agrees with the
    # interpreter (both subtract), moving only the elements in range
    assert [(c[2], c[3], c[5]) for c in dynamic[1:]] == [
        ("ok", "match", "3072 / 3072"), ("ok", "match", "6144 / 6144")]
