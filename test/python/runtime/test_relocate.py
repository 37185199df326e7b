"""Programs that differ only in LPDDR addresses are loaded once and relocated (relocate.py).

The reference is the emulator with `reuse=False`, which loads every kernel instruction by
instruction: with reuse the outputs, profile and trace must be the same, and a relocated
program with a bad address must fail with the very fault the full load gives.
"""

import dataclasses

import numpy as np
import pytest
import torch
from runtime_helpers import bind, linear_relu_binary, load, store

from spyrec.runtime.emulator import Emulator
from spyrec.runtime.memory import DeviceFault, DeviceMemory
from spyrec.runtime.span import TensorTable
from spyrec.target import DEFAULT_TARGET, GIB, MIB
from spyrec.target.container import KernelImage, SpyreBinary
from spyrec.target.isa import Instr


def templates(emulator: Emulator) -> tuple[int, int]:
    """(kernel templates, core templates) an emulator made."""
    kernel = sum(len(t) for t in emulator._kernel_templates.values())
    core = sum(len(t) for t in emulator._core_templates.values())
    return kernel, core


@pytest.fixture(scope="module")
def decoder() -> tuple[SpyreBinary, np.ndarray]:
    from spyrec.api import to_numpy
    from spyrec.demo import DemoDecoder
    from spyrec.driver import compile_program

    torch.manual_seed(0)
    model = DemoDecoder(128, layers=2).to(torch.float16).eval()
    x = torch.randn(2, 16, 128).to(torch.float16)
    result = compile_program(torch.export.export(model, (x,)))
    assert result.binary is not None
    return result.binary, to_numpy(x)


@pytest.mark.parametrize("mode", ["full", "timing"])
def test_a_two_layer_decoder_loads_once_per_template_and_runs_the_same(decoder, mode) -> None:
    binary, x = decoder
    inputs = [x] if mode == "full" else None
    reused = Emulator(binary, mode=mode)
    out, profile = reused.run(inputs)
    ref_out, ref_profile = Emulator(binary, mode=mode, reuse=False).run(inputs)
    assert [o.tobytes() for o in out] == [o.tobytes() for o in ref_out]
    assert profile.to_dict() == ref_profile.to_dict()
    assert profile.trace_events() == ref_profile.trace_events()
    kernels, cores = templates(reused)
    programs = sum(len(k.programs) for k in binary.kernels)
    # the second layer's kernels are the first's at other addresses (21 kernels, 10
    # distinct: the last down projection keeps its result in LX for the final norm, note
    # 61), and a kernel's cores share one program modulo addresses, except where a
    # ring-shared kernel or rows reduced over the ring give each core its own (140
    # programs, 43 loaded; 152 and 35 with every tensor in LPDDR)
    assert kernels <= len(binary.kernels) // 2
    assert cores <= programs // 3


def two_kernels(first: list[Instr], second: list[Instr]) -> SpyreBinary:
    """Two one-core kernels over x (64 x 128 fp32 at 0) and y (the same at 1 GiB)."""
    x = bind("x", (64, 128), "float32", 0)
    y = bind("y", (64, 128), "float32", GIB)
    kernels = [KernelImage("k0", 1, {0: first}), KernelImage("k1", 1, {0: second})]
    return SpyreBinary(DEFAULT_TARGET.name, [x], [y], [], [], kernels)


def looped(base: int) -> list[Instr]:
    """Four 16-row loads of 512-byte rows from `base`, 8 KiB apart (a loop stepping `ddr`),
    then a store of the last tile to y."""
    return [
        Instr.make("loop.begin", trips=4),
        load(base, 0, 16, 512),
        Instr.make("loop.incr", pc=1, field=0, step=16 * 512),
        Instr.make("loop.end"),
        store(0, GIB, 16, 512, deps=(1,)),
    ]


def test_a_relocated_loop_steps_from_its_own_base() -> None:
    emulator = Emulator(two_kernels(looped(0), looped(GIB)), mode="timing")
    assert templates(emulator)[0] == 1
    k0, k1 = (emulator._kernels[p] for p in sorted(emulator._kernels))
    assert k1.timed is k0.timed  # scheduled once
    full = Emulator(two_kernels(looped(0), looped(GIB)))
    k1 = full._kernels[max(full._kernels)]
    assert [i.arg("ddr") for i in k1.programs[0]] == [GIB + i * 8192 for i in range(4)] + [GIB]


def fault(binary: SpyreBinary, reuse: bool) -> str:
    with pytest.raises(DeviceFault) as info:
        Emulator(binary, mode="timing", reuse=reuse)
    return str(info.value)


@pytest.mark.parametrize("bad,message", [
    (looped(64), "LPDDR address 0x40 is not 128-byte aligned (loop iteration 0)"),
    (looped(4096), "runs past the end of allocation 'x' [0x0, 0x8000) (loop iteration 3)"),
    (looped(5 * GIB), "LPDDR address 0x140000000 is not inside any allocation"),
    (looped(7 * 16 * GIB), "is in segment 7, which is reserved for SpyreCode"),
])
def test_a_relocated_kernel_with_a_bad_address_fails_as_the_full_load_does(bad, message):
    binary = two_kernels(looped(0), bad)
    expected = fault(binary, reuse=False)
    assert message in expected
    assert fault(binary, reuse=True) == expected


def test_a_relocated_core_with_a_bad_address_fails_as_the_full_load_does() -> None:
    binary = linear_relu_binary(cores=4)
    program = binary.kernels[0].programs[2]
    program[0] = dataclasses.replace(program[0], args=(64 * GIB, *program[0].args[1:]))
    expected = fault(binary, reuse=False)
    assert expected.startswith("core 2, pc 0 ")
    assert fault(binary, reuse=True) == expected


def test_a_relocated_kernel_beyond_the_span_fails_as_the_full_load_does() -> None:
    big = bind("big", (1 << 20, 128), "float32", 0)  # 512 MiB

    def kernel(name: str, far: int) -> KernelImage:
        return KernelImage(name, 1, {0: [load(0, 0, 1, 512), load(far, 0, 1, 512)]})

    binary = SpyreBinary(DEFAULT_TARGET.name, [big], [], [], [],
                         [kernel("near", 255 * MIB), kernel("far", 300 * MIB)])
    expected = fault(binary, reuse=False)
    assert "beyond the 256 MiB a core may span in one tensor" in expected
    assert fault(binary, reuse=True) == expected


def test_kernels_with_hazards_are_checked_each_time() -> None:
    binary = linear_relu_binary(drop_dep=True)
    binary.kernels.append(dataclasses.replace(binary.kernels[0], name="again"))
    emulator = Emulator(binary, mode="timing")
    assert templates(emulator) == (0, 0)
    warnings = emulator.run()[1].warnings
    assert warnings == Emulator(binary, mode="timing", reuse=False).run()[1].warnings
    assert {w.split(":")[0] for w in warnings} == {"kernel 'linear_relu'", "kernel 'again'"}


def test_tensor_lookup_in_numpy_agrees_with_the_one_by_one_lookup() -> None:
    # An arena of activations sharing bytes by liveness (a long one under two short ones),
    # a tensor far behind the accesses it holds, and accesses no binding holds whole (past
    # the end of a tensor, into the next): -1, where the one-by-one lookup faults.
    memory = DeviceMemory(DEFAULT_TARGET, backed=False)
    memory.allocate(0, 1 << 20, "arena")
    memory.allocate(1 << 20, 1 << 16, "loose")
    tensors = [("long", 0, 1 << 19), ("short1", 4096, 8192), ("short2", 8192, 12288)]
    tensors += [(f"tiny{i}", 600_000 + 128 * i, 600_000 + 128 * i + 128) for i in range(40)]
    tensors += [("loose", 1 << 20, (1 << 20) + (1 << 16))]
    table = TensorTable(tensors, memory)
    rng = np.random.default_rng(3)
    starts = rng.integers(0, (1 << 20) + (1 << 16) - 4096, 2000) // 128 * 128
    ends = np.minimum(starts + rng.integers(1, 40_000, 2000),
                      np.where(starts < 1 << 20, 1 << 20, (1 << 20) + (1 << 16)))
    starts = np.append(starts, [4096, 5120, 600_000, 600_000 + 128 * 39, 590_000])
    ends = np.append(ends, [4200, 9000, 600_100, 600_000 + 128 * 40, 600_100])

    def one_by_one(start: int, end: int) -> str | None:
        try:
            return table.tensor_of(start, end)
        except DeviceFault:
            return None

    expected = [one_by_one(int(s), int(e)) for s, e in zip(starts, ends, strict=True)]
    ids = table.tensor_ids(starts, ends).tolist()
    assert [None if i < 0 else table.name(i) for i in ids] == expected
    assert expected[-5:] == ["short1", "long", "tiny0", "tiny39", None]
    assert {"long", "loose", None} <= set(expected)
