"""Fault injection: a good .spyre with ring and loop instructions, broken one way at a time.

Each case writes the file, breaks it (its bytes or one instruction), reads it back and runs
it, and checks that the error names what went wrong and where: the file and the blob, or
the core, pc (and loop iteration), instruction and address.
"""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from runtime_helpers import bind, load, recv, send, store, two_tensor_binary

from spyrec.runtime.emulator import Emulator, HazardError
from spyrec.runtime.memory import DeviceFault
from spyrec.runtime.timing import DeadlockError
from spyrec.target import DEFAULT_TARGET, GIB, MIB
from spyrec.target.container import (
    ContainerError,
    EncodedPrograms,
    KernelImage,
    SpyreBinary,
    read_manifest,
    read_spyre,
    write_spyre,
)
from spyrec.target.isa import Instr, encode_program

ROW, OUT = 128, 1 * GIB
LX = DEFAULT_TARGET.lx_bytes


def pipeline() -> dict[int, list[Instr]]:
    """Core 0 loads x (64 rows of one fp32 stick) in a loop of 4 tiles of 16 rows and sends
    each tile to core 1, which receives and stores it: out == x. Each load and receive waits
    for the previous iteration's send or store of its buffer (a later pc of the body)."""
    tile = 16 * ROW
    return {
        0: [Instr.make("loop.begin", trips=4),
            Instr.make("loop.incr", pc=2, field=0, step=tile),
            load(0, 0, 16, ROW, deps=(3,)),
            send(0, 16, ROW, 1, deps=(2,)),
            Instr.make("loop.end")],
        1: [Instr.make("loop.begin", trips=4),
            recv(0x8000, 16, ROW, 0, deps=(2,)),
            store(0x8000, OUT, 16, ROW, deps=(1,)),
            Instr.make("loop.incr", pc=2, field=1, step=tile),
            Instr.make("loop.end")],
    }


def written(tmp_path: Path, programs: dict[int, list[Instr]]) -> Path:
    path = tmp_path / "ring.spyre"
    write_spyre(two_tensor_binary(programs), path)
    return path


def x_of() -> np.ndarray:
    return np.random.default_rng(11).standard_normal((64, 32)).astype(np.float32)


def test_the_good_file_runs(tmp_path: Path) -> None:
    x = x_of()
    (out,), _ = Emulator(read_spyre(written(tmp_path, pipeline()))).run([x])
    np.testing.assert_array_equal(out, x)


def test_a_flipped_byte_in_a_program_fails_the_blob_checksum(tmp_path: Path) -> None:
    path = written(tmp_path, pipeline())
    blob = read_manifest(path)["blobs"]["init.bin"]
    data = bytearray(path.read_bytes())
    blob_area = len(data) - _blobs_size(read_manifest(path))  # the blobs end the file
    data[blob_area + blob["offset"] + blob["size"] - 3] ^= 0xFF  # in core 1's last program
    path.write_bytes(bytes(data))
    with pytest.raises(ContainerError, match=r"ring.spyre: checksum mismatch in blob 'init.bin'"):
        read_spyre(path)


def _blobs_size(manifest: dict) -> int:
    return max(entry["offset"] + entry["size"] for entry in manifest["blobs"].values())


def test_a_flipped_byte_in_the_manifest_fails_its_checksum(tmp_path: Path) -> None:
    path = written(tmp_path, pipeline())
    data = bytearray(path.read_bytes())
    data[data.index(b'"num_cores":2') + len('"num_cores":')] = ord("3")
    path.write_bytes(bytes(data))
    with pytest.raises(ContainerError, match=r"ring.spyre: checksum mismatch in the manifest"):
        read_spyre(path)


def test_a_truncated_file_says_how_much_is_missing(tmp_path: Path) -> None:
    path = written(tmp_path, pipeline())
    data = path.read_bytes()
    path.write_bytes(data[:-100])
    with pytest.raises(ContainerError, match=rf"ring.spyre: truncated: the blobs end at byte "
                                             rf"{len(data)}, the file has {len(data) - 100}"):
        read_spyre(path)


def test_a_program_whose_dependency_points_forward(tmp_path: Path) -> None:
    # Core 1's store (pc 2) made to wait for pc 4, the loop.end after it, in the bytes: a
    # file's programs stay encoded through reading and planning, and the emulator checks
    # them when it loads.
    programs = pipeline()
    code = {core: encode_program(program) for core, program in programs.items()}
    sizes = [4 + 8 * len(i.spec.fields) + 4 * len(i.deps) for i in programs[1]]
    dep = sum(sizes[:3]) - 4  # the store's one dependency, the last 4 bytes of pc 2
    code[1] = code[1][:dep] + (4).to_bytes(4, "little") + code[1][dep + 4:]
    binary = two_tensor_binary(programs)
    binary.kernels[0] = dataclasses.replace(binary.kernels[0], programs=EncodedPrograms(code))
    path = tmp_path / "forward.spyre"
    write_spyre(binary, path)
    with pytest.raises(DeviceFault) as info:
        Emulator(read_spyre(path), mode="timing")
    assert (info.value.core, info.value.pc) == (1, 2)
    assert str(info.value).endswith("dma.store depends on a later instruction (pc 4)")


def run_file(tmp_path: Path, programs: dict[int, list[Instr]], **options) -> None:
    Emulator(read_spyre(written(tmp_path, programs)), mode="timing", **options).run()


def test_a_dma_misaligned_in_one_loop_iteration(tmp_path: Path) -> None:
    # core 1's store advances by 2 KiB + 64 bytes: iteration 0 is aligned, iteration 1 not
    programs = pipeline()
    programs[1][3] = Instr.make("loop.incr", pc=2, field=1, step=16 * ROW + 64)
    with pytest.raises(DeviceFault) as info:
        run_file(tmp_path, programs)
    fault = info.value
    assert (fault.core, fault.pc, fault.address) == (1, 2, OUT + 2048 + 64)
    assert str(fault) == ("core 1, pc 2 (dma.store u0 lx=32768 ddr=1073743936 rows=16 "
                          "row_bytes=128 lx_pitch=128 ddr_pitch=128 deps=[1]): LPDDR address "
                          "0x40000840 is not 128-byte aligned (loop iteration 1)")


def test_a_ring_receive_that_overflows_lx(tmp_path: Path) -> None:
    programs = pipeline()
    programs[1][1] = recv(LX - 1024, 16, ROW, 0, deps=(2,))  # 2 KiB from 1 KiB below the end
    programs[1][2] = store(LX - 1024, OUT, 16, ROW, deps=(1,))
    with pytest.raises(DeviceFault) as info:
        run_file(tmp_path, programs)
    assert str(info.value) == (
        f"core 1, pc 1 ({programs[1][1].disassemble()}): LX tile [0x1ffc00, 0x200400) "
        f"overflows the {LX}-byte LX by 1024 bytes (loop iteration 0)")


def test_two_cores_waiting_for_each_other(tmp_path: Path) -> None:
    # core 0 now sends only after a receive from core 1, which core 1 never sends
    programs = pipeline()
    programs[0] = [Instr.make("loop.begin", trips=4),
                   Instr.make("loop.incr", pc=3, field=0, step=16 * ROW),
                   recv(0x4000, 1, ROW, 1),
                   load(0, 0, 16, ROW, deps=(4,)),
                   send(0, 16, ROW, 1, deps=(2, 3)),
                   Instr.make("loop.end")]
    with pytest.raises(DeadlockError) as info:
        run_file(tmp_path, programs)
    message = str(info.value)
    assert message.startswith("deadlock in kernel 'k': ")
    assert ("core 0: pc 2 (iteration 0) (ring.recv u0 dst=16384 rows=1 row_bytes=128 "
            "dst_pitch=128 src_core=1 tag=0) waits for a ring.send from core 1 to core 0 with "
            "tag 0, which core 1's program does not have") in message
    assert ("core 1: pc 1 (iteration 0) (ring.recv u0 dst=32768 rows=16 row_bytes=128 "
            "dst_pitch=128 src_core=0 tag=0 deps=[2]) waits for core 0 pc 4 (iteration 0) "
            "(ring.send), "
            "which core 0 never reaches") in message
    assert ("core 0: pc 4 (iteration 0) (ring.send u0 src=0 rows=16 row_bytes=128 "
            "src_pitch=128 dst_core=1 tag=0 deps=[2,3]) waits for pc 2 (iteration 0) "
            "(ring.recv)") in message


def test_a_ring_transfer_racing_a_read(tmp_path: Path) -> None:
    # core 1's store no longer waits for the receive that fills its buffer
    programs = pipeline()
    programs[1][2] = store(0x8000, OUT, 16, ROW)
    binary = read_spyre(written(tmp_path, programs))
    _, profile = Emulator(binary, mode="timing").run()
    races = [w for w in profile.warnings if "last written by" in w]
    assert races[0] == (
        "kernel 'k': core 1, pc 2 (iteration 0) (dma.store u0 lx=32768 ddr=1073741824 rows=16 "
        "row_bytes=128 lx_pitch=128 ddr_pitch=128): reads LX [0x8000, 0x8800) last written by "
        "pc 1 (iteration 0) (ring.recv u0 dst=32768 rows=16 row_bytes=128 dst_pitch=128 "
        "src_core=0 tag=0 deps=[2]), which it does not depend on")
    with pytest.raises(HazardError, match=r"core 1, pc 2 \(iteration 0\) \(dma.store .* last "
                                          r"written by pc 1 \(iteration 0\) \(ring.recv"):
        Emulator(binary, mode="timing", strict=True)


def test_a_span_violation_in_a_file(tmp_path: Path) -> None:
    big = bind("big", (1 << 20, 128), "float32", 0)  # 512 MiB
    far = load(257 * MIB, 0, 1, 512)
    kernel = KernelImage("span", 1, {0: [load(0, 0, 1, 512), far]})
    path = tmp_path / "span.spyre"
    write_spyre(SpyreBinary(DEFAULT_TARGET.name, [big], [], [], [], [kernel]), path)
    with pytest.raises(DeviceFault) as info:
        Emulator(read_spyre(path), mode="timing")
    assert (info.value.core, info.value.pc, info.value.address) == (0, 1, 257 * MIB)
    assert str(info.value).startswith(f"core 0, pc 1 ({far.disassemble()}): LPDDR range "
                                      "[0x10100000, 0x10100200) of tensor 'big' widens")
