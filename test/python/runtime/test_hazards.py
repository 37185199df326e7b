"""The LX hazard checker: unordered reads and writes of the same LX bytes."""

import numpy as np
import pytest
from runtime_helpers import DL16, F32, bind, linear_relu_binary, linear_relu_reference, load

from spyrec.runtime.emulator import Emulator, HazardError
from spyrec.target import DEFAULT_TARGET
from spyrec.target.container import KernelImage, SpyreBinary
from spyrec.target.isa import Instr, UnaryFn


def copy(src: int, dst: int, deps: tuple[int, ...] = (), unit: int = 0) -> Instr:
    return Instr.make("sfu.unary", unit=unit, deps=deps, fn=UnaryFn.COPY, src=src, dst=dst,
                      rows=1, cols=32, src_pitch=128, dst_pitch=128, src_dtype=F32,
                      dst_dtype=F32)


def one_core(program: list[Instr]) -> SpyreBinary:
    x = bind("x", (4, 32), "float32", 0)
    return SpyreBinary(DEFAULT_TARGET.name, [x], [], [], [], [KernelImage("k", 1, {0: program})])


def warnings_of(program: list[Instr]) -> list[str]:
    return Emulator(one_core(program), mode="timing").run()[1].warnings


def test_missing_dependency_is_reported_and_shows_in_the_numbers() -> None:
    # The relu (pc 6) no longer waits for the bias add (pc 5) that writes its input.
    binary = linear_relu_binary(drop_dep=True)
    x = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float16)
    (out,), profile = Emulator(binary).run([x])
    assert len(profile.warnings) == 2  # one per core
    warning = profile.warnings[0]
    assert warning.startswith("kernel 'linear_relu': core 0, pc 6 (sfu.unary u1 fn=1 ")
    assert "reads LX [0x40000, 0x42000) last written by pc 5 (sfu.binary" in warning
    assert warning.endswith("which it does not depend on")
    # The relu ran as soon as its engine was free, before the add: it read stale (zero) LX.
    assert not np.array_equal(out, linear_relu_reference(binary, x))
    with pytest.raises(HazardError, match="core 0, pc 6"):
        Emulator(binary, strict=True)


def test_write_after_read() -> None:
    # pc 1 reads LX 0; the load at pc 2 refills LX 0 without waiting for pc 1.
    found = warnings_of([load(0, 0, 1, 128), copy(0, 4096, deps=(0,)), load(128, 0, 1, 128)])
    assert len(found) == 1
    assert "pc 2 (dma.load" in found[0] and "still read by pc 1 (sfu.unary" in found[0]


def test_write_after_write() -> None:
    # The copy (SFU) and the load (DMA) both write LX 4096 with no order between them.
    found = warnings_of([load(0, 0, 1, 128), copy(0, 4096, deps=(0,)), load(128, 4096, 1, 128)])
    assert len(found) == 1 and "overwrites LX [0x1000, 0x1080) last written by pc 1" in found[0]


def test_engine_order_and_transitive_dependencies_order_accesses() -> None:
    program = [
        load(0, 0, 1, 128),  # 0: DMA writes LX 0
        load(128, 0, 1, 128),  # 1: DMA again: after pc 0 by engine order, no hazard
        copy(0, 4096, deps=(1,)),  # 2: reads LX 0 after pc 1, hence after pc 0 too
        copy(4096, 8192, deps=(2,), unit=1),  # 3: other SFU, ordered by the dependency
        load(256, 0, 1, 128, deps=(3,)),  # 4: refills LX 0 after pc 2 read it (via pc 3)
    ]
    assert warnings_of(program) == []


def test_concurrent_readers_must_all_finish_before_a_write() -> None:
    program = [
        load(0, 0, 1, 128),
        copy(0, 4096, deps=(0,), unit=0),
        copy(0, 8192, deps=(0,), unit=1),
        load(128, 0, 1, 128, deps=(2,)),  # waits for the unit 1 reader only
    ]
    found = warnings_of(program)
    assert len(found) == 1 and "still read by pc 1" in found[0]


def test_buffers_sharing_a_stick_conflict() -> None:
    # A 64-byte tile at LX 64 shares the first 128-byte stick (the unit of LX traffic) with
    # the load's data at LX 0, so writing it conflicts with reading LX 0 on the other SFU.
    def narrow(dst: int) -> Instr:
        return Instr.make("sfu.unary", deps=(0,), fn=UnaryFn.COPY, src=4096, dst=dst, rows=1,
                          cols=16, src_pitch=128, dst_pitch=128, src_dtype=F32, dst_dtype=F32)

    found = warnings_of([load(0, 0, 1, 128), narrow(64), copy(0, 8192, deps=(0,), unit=1)])
    assert len(found) == 1 and "pc 2" in found[0] and "last written by pc 1" in found[0]
    assert warnings_of([load(0, 0, 1, 128), narrow(128), copy(0, 8192, deps=(0,), unit=1)]) == []


def test_strided_tiles_are_checked_row_by_row() -> None:
    # Rows of 128 bytes at a 512-byte pitch: a write to LX 256 falls between the rows.
    strided = load(0, 0, 4, 128, lx_pitch=512)
    gap = load(0, 256, 1, 128)
    consumer = Instr.make("sfu.unary", deps=(0,), fn=UnaryFn.COPY, src=0, dst=65536, rows=4,
                          cols=32, src_pitch=512, dst_pitch=128, src_dtype=F32, dst_dtype=DL16)
    assert warnings_of([strided, gap, consumer]) == []
    overlapping = load(0, 1024, 1, 128)  # row 2 of the strided tile
    late_reader = Instr.make("sfu.unary", unit=1, fn=UnaryFn.COPY, src=1024, dst=65536 + 4096,
                             rows=1, cols=32, src_pitch=128, dst_pitch=128, src_dtype=F32,
                             dst_dtype=F32)
    found = warnings_of([strided, overlapping, late_reader])
    assert len(found) == 1 and "pc 2" in found[0] and "last written by pc 1" in found[0]
