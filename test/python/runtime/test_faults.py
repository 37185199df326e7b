"""Device faults: bad accesses are refused with core, pc, instruction and address."""

import re

import pytest
from runtime_helpers import DL16, F32, bind, linear_relu_binary, load, store

from spyrec.runtime.emulator import Emulator
from spyrec.runtime.memory import DeviceFault, DeviceMemory, LocalMemory
from spyrec.target import DEFAULT_TARGET, GIB, MIB
from spyrec.target.container import KernelImage, SpyreBinary
from spyrec.target.isa import Instr, Region, UnaryFn

LX = DEFAULT_TARGET.lx_bytes


def with_instr(core: int, pc: int, instr: Instr) -> SpyreBinary:
    binary = linear_relu_binary()
    binary.kernels[0].programs[core][pc] = instr
    return binary


def fault_of(binary: SpyreBinary, mode: str = "full") -> DeviceFault:
    with pytest.raises(DeviceFault) as info:
        Emulator(binary, mode=mode)
    return info.value


@pytest.mark.parametrize("mode", ["full", "timing"])
def test_misaligned_dma(mode: str) -> None:
    instr = load(64, 0, 1, 128)
    fault = fault_of(with_instr(1, 0, instr), mode)
    assert str(fault) == (f"core 1, pc 0 ({instr.disassemble()}): "
                          "LPDDR address 0x40 is not 128-byte aligned")
    assert (fault.core, fault.pc, fault.address) == (1, 0, 0x40)


def test_misaligned_pitch() -> None:
    fault = fault_of(with_instr(0, 0, load(0, 0, 4, 128, ddr_pitch=192)))
    assert "LPDDR pitch 192 is not a multiple of 128 bytes" in str(fault)
    assert "0xc0" in str(fault)


def test_unallocated_address() -> None:
    instr = load(5 * GIB, 0, 1, 128)
    message = str(fault_of(with_instr(0, 1, instr)))
    assert message.startswith("core 0, pc 1 (dma.load u0 ddr=5368709120 ")
    assert message.endswith("LPDDR address 0x140000000 is not inside any allocation")


def test_access_past_the_end_of_an_allocation() -> None:
    # x is 64 rows of 256 bytes = 16 KiB at address 0; 65 rows run past its end.
    message = str(fault_of(with_instr(0, 0, load(0, 0, 65, 256))))
    assert "LPDDR range [0x0, 0x4100) runs past the end of allocation 'x' [0x0, 0x4000)" in message


def test_program_segment_is_off_limits() -> None:
    message = str(fault_of(with_instr(0, 0, load(7 * 16 * GIB, 0, 1, 128))))
    assert "LPDDR address 0x1c00000000 is in segment 7, which is reserved for SpyreCode" in message


def test_lx_overflow() -> None:
    instr = load(0, LX - 64, 1, 128)
    fault = fault_of(with_instr(0, 2, instr))
    assert str(fault) == (f"core 0, pc 2 ({instr.disassemble()}): LX tile [0x1fffc0, 0x200040) "
                          f"overflows the {LX}-byte LX by 64 bytes")


def test_lx_overflow_of_a_strided_compute_tile() -> None:
    # 64 rows at a pitch of 33 KiB reach 63 * 33 KiB + 256 bytes, past 2 MiB.
    instr = Instr.make("sfu.unary", fn=UnaryFn.COPY, src=0, dst=0, rows=64, cols=64,
                       src_pitch=33792, dst_pitch=128, src_dtype=F32, dst_dtype=DL16)
    assert "overflows the 2097152-byte LX by" in str(fault_of(with_instr(1, 6, instr)))


@pytest.mark.parametrize(
    ("instr", "message"),
    [
        (Instr.make("pt.matmul", unit=2, a=0, b=0, c=0, m=8, k=8, n=8, a_pitch=128, b_pitch=128,
                    c_pitch=128, in_dtype=DL16, accumulate=0),
         "PT unit 2 does not exist (a core has 2 corelets)"),
        (Instr("dma.load", (0, 0, 1, 128, 128, 128), unit=1), "DMA unit 1 does not exist"),
        (Instr.make("sfu.unary", fn=99, src=0, dst=0, rows=1, cols=1, src_pitch=128,
                    dst_pitch=128, src_dtype=F32, dst_dtype=F32), "fn=99 is not a unary"),
        (Instr.make("sfu.unary", fn=UnaryFn.EXP, src=0, dst=0, rows=1, cols=1, src_pitch=128,
                    dst_pitch=128, src_dtype=7, dst_dtype=F32), "src_dtype=7 is not a device"),
        (Instr.make("sfu.unary", fn=UnaryFn.EXP, src=0, dst=0, rows=1, cols=1, src_pitch=128,
                    dst_pitch=128, src_dtype=2, dst_dtype=2), "EXP has no int32 form"),
        (Instr.make("pt.matmul", a=0, b=0, c=0, m=0, k=8, n=8, a_pitch=128, b_pitch=128,
                    c_pitch=128, in_dtype=DL16, accumulate=0), "m=0 must be positive"),
        (Instr.make("pt.matmul", a=0, b=0, c=0, m=8, k=8, n=8, a_pitch=128, b_pitch=128,
                    c_pitch=128, in_dtype=2, accumulate=0), "no int32 mode"),
    ],
)
def test_invalid_instructions(instr: Instr, message: str) -> None:
    fault = fault_of(with_instr(0, 3, instr))
    assert str(fault).startswith("core 0, pc 3 (")
    assert message in str(fault)


def test_memory_level_faults_have_no_context() -> None:
    memory = DeviceMemory(DEFAULT_TARGET)
    memory.allocate(0, 256, "a")
    with pytest.raises(DeviceFault, match=re.escape("'b' [0x80, 0x180) overlaps 'a' [0x0, 0x100)")):
        memory.allocate(128, 256, "b")
    with pytest.raises(DeviceFault, match="outside the 0x2000000000-byte device address space"):
        memory.allocate(128 * GIB, 128, "c")
    with pytest.raises(DeviceFault, match=r"^LX tile at 0x0 with pitch -128 reaches below"):
        LocalMemory(1024, backed=False).check(Region(0, 2, 128, -128))


def big_tensor_binary(programs: dict[int, list[Instr]]) -> SpyreBinary:
    """A kernel over a 512 MiB fp32 tensor 'big' (2^20 rows of 128 elements, 512-byte rows)."""
    big = bind("big", (1 << 20, 128), "float32", 0)
    kernel = KernelImage("span", max(programs) + 1, programs)
    return SpyreBinary(DEFAULT_TARGET.name, [big], [], [], [], [kernel])


def test_a_core_may_not_span_more_than_256_mib_of_one_tensor() -> None:
    # Core 1 reads a row at 0x100 and one 300 MiB further: its span of 'big' reaches
    # 300 MiB + 512 bytes - 0x100 = 300.0 MiB, beyond the 256 MiB window.
    far = load(300 * MIB, 0, 1, 512)
    programs = {0: [load(0, 0, 1, 512)], 1: [load(256, 0, 1, 256), far]}
    fault = fault_of(big_tensor_binary(programs), mode="timing")
    assert (fault.core, fault.pc, fault.address) == (1, 1, 300 * MIB)
    assert str(fault) == (
        f"core 1, pc 1 ({far.disassemble()}): LPDDR range [0x12c00000, 0x12c00200) of tensor "
        "'big' widens this core's span of it to [0x100, 0x12c00200), 300.0 MiB, beyond the "
        "256 MiB a core may span in one tensor")


def test_the_span_is_per_core() -> None:
    # Each core stays within its own 256 MiB of the tensor, which spans 512 MiB in all.
    programs = {0: [load(0, 0, 1, 512), load(255 * MIB, 0, 1, 512)],
                1: [load(256 * MIB, 0, 1, 512), load(511 * MIB, 0, 1, 512)]}
    Emulator(big_tensor_binary(programs), mode="timing")  # no fault


@pytest.mark.parametrize("mode", ["full", "timing"])
def test_dma_running_out_of_its_tensor_into_the_next(mode: str) -> None:
    # a and b (64 rows of 128 bytes each) are activations placed back to back, so one
    # allocation (an arena) holds both; a load of 65 rows from a's start stays inside the
    # allocation but reads b's first row. The back end's bound check refuses the kernel that
    # would make it (passes/ktir/ktir_bounds.py); the device faults on whatever gets past that.
    a = bind("a", (64, 64), "float16", 0)
    b = bind("b", (64, 64), "float16", 64 * 128)
    out = bind("out", (64, 64), "float16", 2 * 64 * 128)
    good = [load(a.addr, 0, 64, 128), store(0, out.addr, 64, 128, deps=(0,))]
    bad = [load(a.addr, 0, 65, 128), store(0, out.addr, 64, 128, deps=(0,))]

    def binary(program: list[Instr]) -> SpyreBinary:
        kernel = KernelImage("copy", 1, {0: program}, 0, 3 * 64 * 128)
        return SpyreBinary(DEFAULT_TARGET.name, [a, b], [out], [], [], [kernel])

    Emulator(binary(good), mode=mode)  # in bounds: loads
    fault = fault_of(binary(bad), mode)
    assert str(fault) == (
        f"core 0, pc 0 ({bad[0].disassemble()}): LPDDR range [0x0, 0x2080) runs past the end "
        "of tensor 'a' [0x0, 0x2000) into tensor 'b'; a DMA may only touch the tensor it "
        "addresses")
    assert (fault.core, fault.pc, fault.address) == (0, 0, 0)
