"""Tiles narrower than a stick at multiples of their width (spyrec/frontend/ktir_blocks.py,
design note 112): the tensor's last dim is stored in blocks of the tile width, the binding
keeps the kernel's shape, and the emulator matches the KTIR interpreter. Kernels:
ktir/kernels/narrow_tiles.mlir."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import spyrec
import spyrec.ktir
from spyrec.diagnostics import CompileError
from spyrec.passes.spyrecode import program_tensors
from spyrec.runtime.layout import from_device, to_device
from spyrec.runtime.memory import DeviceFault
from spyrec.target.layout import DeviceLayout
from spyrec.verdict import check_outputs

KERNELS = Path(__file__).parent / "ktir" / "kernels" / "narrow_tiles.mlir"
RNG = np.random.default_rng(11)

CASES = {
    # 16 x 32 f16 blocks (64-byte rows) of a 32 x 64 tensor, two cores per stick
    "half_sticks": ({"x": RNG.standard_normal((32, 64)).astype(np.float16)},
                    ("y", (32, 64), np.float16)),
    # one f32 per row, stored by 8 cores interleaved into a 64-element vector
    "row_sums": ({"x": RNG.standard_normal((64, 128)).astype(np.float32)},
                 ("s", (64,), np.float32)),
}


def _run(function: str) -> tuple[spyrec.Executable, list[torch.Tensor], np.ndarray]:
    inputs, (out, shape, dtype) = CASES[function]
    exe = spyrec.compile(KERNELS, function=function, cache=False)
    got = exe(*(torch.from_numpy(x) for x in inputs.values()))
    want = spyrec.ktir.execute(KERNELS, function, **inputs,
                               **{out: np.zeros(shape, dtype)})[out]
    assert np.any(want != 0)
    return exe, [got] if isinstance(got, torch.Tensor) else list(got), np.asarray(want)


@pytest.mark.parametrize("function", sorted(CASES))
def test_narrow_tiles_match_the_interpreter(function):
    exe, got, want = _run(function)
    assert check_outputs([torch.from_numpy(want)], got, exe).ok
    # the caller passes and receives the kernel's shapes; the device holds blocks
    shape = CASES[function][1][1]
    (output,) = exe.binary.outputs
    assert output.layout.shape == shape and output.layout.block is not None
    assert output.layout.device_shape[-1] == output.layout.block


def test_the_blocked_copy_is_exact():
    """x + x is exact in any binary format: the device's result is twice the DL16 input in
    every element, so no element went to another's place."""
    exe, (got,), _ = _run("half_sticks")
    (x_binding,) = exe.binary.inputs
    x = CASES["half_sticks"][0]["x"]
    on_device = from_device(x_binding.layout, to_device(x_binding.layout, x))
    assert np.array_equal(got.numpy(), (on_device * 2).astype(np.float16))


def test_a_host_that_ignores_the_blocks_fails_the_check(monkeypatch):
    """Bindings without the block split (the host writing dense 128-byte rows of 64 f16
    while the kernel reads 32-column blocks a stick each) never pass: the allocation is
    half what the kernel reads, and the emulator faults on the first DMA past it."""
    binding = program_tensors._binding

    def dense(name, value, host_perms=None, host_blocks=None):
        found = binding(name, value, host_perms, host_blocks)
        layout = replace(found.layout, block=None)
        return replace(found, layout=layout)

    monkeypatch.setattr(program_tensors, "_binding", dense)
    with pytest.raises(DeviceFault, match=r"dma.load .*is not inside any allocation"):
        _run("half_sticks")


def test_a_tile_off_its_block_is_refused_by_name():
    with pytest.raises(CompileError, match=r"@off_block, core \d .*loads tile %xt at column "
                       r"16, not a multiple of its width 32: every tile on %xv is 32 columns "
                       r"wide, narrower than a 128-byte stick"):
        spyrec.compile(KERNELS, function="off_block", cache=False)


def test_a_vector_of_columns_and_rows_is_refused_as_a_transpose():
    """Row sums (a column in LX, a stick per value) and a loaded row (one stick) stored
    into one vector: no blocking holds both as they are, so the vector keeps its dense
    layout and the column's store is refused, never written as a row."""
    with pytest.raises(CompileError, match=r"@column_and_row, core \(0, 0\): ktdp.store: "
                       r"the 8x1 LX tile does not match the 1x8 block"):
        spyrec.compile(KERNELS, function="column_and_row", cache=False)


@pytest.mark.parametrize("shape, perm, block", [((6, 10), None, 5), ((4, 3, 8), (0, 2, 1), 1),
                                                ((12,), None, 4)])
def test_a_blocked_layout_round_trips(shape, perm, block):
    layout = DeviceLayout(shape, "float32", perm, block)
    assert DeviceLayout.from_dict(layout.to_dict()) == layout
    host = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    raw = to_device(layout, host)
    # every block padded to a stick of its own: 32 f32 per stick
    assert raw.size == layout.rows * 128
    rows = raw.view(np.float32).reshape(layout.rows, 32)
    permuted = host if perm is None else host.transpose(perm)
    assert np.array_equal(rows[:, :block], permuted.reshape(-1, block))
    assert not rows[:, block:].any()
    assert np.array_equal(from_device(layout, raw), host)


def test_inspect_shows_the_blocks(tmp_path):
    from click.testing import CliRunner

    from spyrec.cli import main

    out = tmp_path / "half.spyre"
    runner = CliRunner()
    result = runner.invoke(main, ["compile", str(KERNELS), "--function", "half_sticks",
                                  "-o", str(out)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["inspect", str(out)])
    assert "input x: [32, 64] float16 @ 0x0, stored as [32, 2, 32] (blocks of 32 columns, " \
        "each in whole sticks)" in result.output, result.output

