"""The .spyre container: round trip, plans, atomic writes and refusal of bad files."""

import os
import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from runtime_helpers import bind, linear_relu_binary, load, pipelined_binary

from spyrec.target import GIB, container
from spyrec.target.container import (
    ContainerError,
    KernelImage,
    SpyreBinary,
    build_init_bin,
    build_plans,
    decode_job_binary,
    read_manifest,
    read_spyre,
    write_spyre,
)

PROGRAM_AREA = 7 * 16 * GIB  # segment 7, offset 0 = 0x1C_0000_0000


def rich_binary() -> SpyreBinary:
    """Two kernels, weights of every host dtype (with NaN), intermediates, provenance."""
    binary = linear_relu_binary(dtype="bfloat16")
    extra = [
        (bind("wf32", (3, 5), "float32", 4 * GIB), np.array(
            [[np.nan, -0.0, 1e-30, 3.0, -2.0]] * 3, dtype=np.float32)),
        (bind("wi32", (9,), "int32", 4 * GIB + 4096), np.arange(-4, 5, dtype=np.int32)),
        (bind("wf16", (2, 70), "float16", 5 * GIB), np.ones((2, 70), np.float16)),
    ]
    binary.weights += extra
    binary.intermediates.append(bind("scratch", (128, 64), "float16", 6 * GIB))
    binary.kernels.append(KernelImage("second", 3, {2: [load(0, 0, 1, 128)], 0: []}, 10, 128,
                                      ["model.py:12 aten.relu"]))
    binary.provenance["compiler"] = "spyrec 0.1.0"
    return binary


def test_write_read_round_trip(tmp_path: Path) -> None:
    binary = rich_binary()
    path = tmp_path / "model.spyre"
    write_spyre(binary, path)
    back = read_spyre(path)
    assert back == binary
    assert back.weights[2][1].dtype == np.float32 and np.isnan(back.weights[2][1][0, 0])
    assert back.weights[1][1].dtype == ml_dtypes.bfloat16
    assert back != linear_relu_binary(dtype="bfloat16")
    assert [p.name for p in tmp_path.iterdir()] == ["model.spyre"]  # no temporary left


def test_manifest_describes_plans_and_programs(tmp_path: Path) -> None:
    binary = rich_binary()
    write_spyre(binary, tmp_path / "m.spyre")
    manifest = read_manifest(tmp_path / "m.spyre")
    prep, exec_plan = build_plans(binary)
    assert manifest["prep_plan"] == prep and manifest["exec_plan"] == exec_plan
    assert manifest["target"] == "spyre-aiu"
    assert [b["name"] for b in manifest["signature"]["inputs"]] == ["x"]
    programs = manifest["kernels"][1]["programs"]
    assert [(p["core"], p["instructions"]) for p in programs] == [(0, 0), (2, 1)]
    assert set(manifest["blobs"]) == {"init.bin"} | {f"weights/{i}" for i in range(5)}


def test_plans_are_checked_from_program_sizes(tmp_path: Path) -> None:
    """Reading a file back checks its plans against init.bin's layout computed from the
    programs' sizes, the layout `build_init_bin` writes (with and without encoded programs)."""
    binary = rich_binary()
    init = build_init_bin(binary)
    assert container.init_bin_layout(binary) == (len(init.data), init.kernel_offsets)
    write_spyre(binary, tmp_path / "m.spyre")
    back = read_spyre(tmp_path / "m.spyre")
    assert isinstance(back.kernels[1].programs, container.EncodedPrograms)
    assert container.init_bin_layout(back) == (len(init.data), init.kernel_offsets)


def test_plans_follow_spyrecode() -> None:
    binary = rich_binary()
    prep, exec_plan = build_plans(binary)
    init = build_init_bin(binary)
    # Preparation starts with the program area at offset 0 of segment 7, sized by init.bin
    # (rounded to 128 bytes), and copies init.bin there.
    assert prep[0] == {"op": "Allocate", "name": "spyrecode", "dev_ptr": PROGRAM_AREA,
                       "size": len(init.data)}
    assert prep[1] == {"op": "InitTransfer", "src": "init.bin", "dev_ptr": PROGRAM_AREA,
                       "size": len(init.data)}
    assert len(init.data) % 128 == 0
    kinds = [(s["op"], s.get("name", s.get("src"))) for s in prep[2:]]
    assert kinds[:4] == [("Allocate", "w"), ("InitTransfer", "weights/0"),
                         ("Allocate", "b"), ("InitTransfer", "weights/1")]
    assert ("Allocate", "scratch") in kinds and ("Allocate", "out") in kinds
    assert all(s["dev_ptr"] % 128 == 0 for s in prep)
    # Execution: H2D per input, ComputeOnDevice per kernel, D2H per output.
    assert [(s["op"], s.get("dirn")) for s in exec_plan] == [
        ("DataTransfer", 0), ("ComputeOnDevice", None), ("ComputeOnDevice", None),
        ("DataTransfer", 1)]
    computes = [s for s in exec_plan if s["op"] == "ComputeOnDevice"]
    for step, offset, kernel in zip(computes, init.kernel_offsets, binary.kernels, strict=True):
        assert step["job_bin_ptr"] == PROGRAM_AREA + offset and offset % 128 == 0
        # The job binary at job_bin_ptr decodes back to the kernel's programs.
        assert decode_job_binary(init.data[offset:]) == kernel.programs
    for table in init.tables:
        assert all(offset % 128 == 0 for offset, _ in table.values())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: setattr(b.inputs[0], "addr", 64), "not 128-byte aligned"),
        (lambda b: setattr(b.inputs[0], "addr", 7 * 16 * GIB + 2 * GIB), "reserved for SpyreCode"),
        (lambda b: setattr(b.outputs[0], "addr", 2 * GIB + 4096), "overlaps 'w'"),
        (lambda b: setattr(b.outputs[0], "addr", 16 * GIB - 4096), "crosses a segment boundary"),
        (lambda b: setattr(b.outputs[0], "name", "x"), "bound more than once"),
        (lambda b: setattr(b.kernels[0], "num_cores", 33), "target has 32"),
        (lambda b: b.kernels[0].programs.__setitem__(5, []), r"cores \[5\] outside"),
        (lambda b: b.weights.__setitem__(0, (b.weights[0][0], np.zeros(3, np.float16))),
         "weight 'w' is"),
    ],
)
def test_invalid_binaries_are_refused(change, message: str, tmp_path: Path) -> None:
    binary = linear_relu_binary()
    change(binary)
    with pytest.raises(ContainerError, match=message):
        write_spyre(binary, tmp_path / "bad.spyre")
    assert list(tmp_path.iterdir()) == []


def test_activations_may_share_bytes() -> None:
    # The compiler places activations by liveness: tensors that overlap (or touch) become one
    # arena allocation; separate ones keep their own, named after the tensor.
    binary = linear_relu_binary()
    binary.outputs[0].addr = 8192  # inside x (16 KiB at 0), running 8 KiB past it
    binary.intermediates.append(bind("t", (1, 64), "float16", 40 * 1024))
    prep, _ = build_plans(binary)
    arenas = [s for s in prep[2:] if s["op"] == "Allocate" and "tensors" in s]
    assert [(a["name"], a["dev_ptr"], a["size"], a["tensors"]) for a in arenas] == [
        ("activations@0x0 (x, out)", 0, 16384, ["x", "out"]), ("t", 40960, 128, ["t"])]


def test_program_with_forward_dependency_cannot_be_written(tmp_path: Path) -> None:
    binary = linear_relu_binary()
    binary.kernels[0].programs[0][0] = load(0, 0, 1, 128, deps=(3,))
    with pytest.raises(ContainerError, match=r"linear_relu.*later instruction"):
        write_spyre(binary, tmp_path / "bad.spyre")


def test_failed_write_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "model.spyre"

    def broken_fsync(fd: int) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(container.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk on fire"):
        write_spyre(linear_relu_binary(), path)
    assert list(tmp_path.iterdir()) == []


def test_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "model.spyre"
    write_spyre(linear_relu_binary(), path)
    before = path.read_bytes()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("rename refused")

    monkeypatch.setattr(container.os, "replace", broken_replace)
    with pytest.raises(OSError):
        write_spyre(pipelined_binary(2, 2), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.spyre"]


@pytest.fixture
def good_file(tmp_path: Path) -> Path:
    path = tmp_path / "good.spyre"
    write_spyre(rich_binary(), path)
    return path


def rewrite(path: Path, edit) -> Path:
    data = bytearray(path.read_bytes())
    edit(data)
    path.write_bytes(bytes(data))
    return path


def test_bad_magic(good_file: Path) -> None:
    rewrite(good_file, lambda d: d.__setitem__(slice(0, 4), b"PK\x03\x04"))
    with pytest.raises(ContainerError, match=r"good.spyre: not a .spyre file \(bad magic"):
        read_spyre(good_file)


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "empty.spyre").write_bytes(b"")
    with pytest.raises(ContainerError, match=r"not a .spyre file"):
        read_spyre(tmp_path / "empty.spyre")


def test_unsupported_version(good_file: Path) -> None:
    rewrite(good_file, lambda d: d.__setitem__(slice(8, 12), struct.pack("<I", 99)))
    with pytest.raises(ContainerError, match=r"unsupported format version 99 .*versions 1, 2"):
        read_spyre(good_file)


def test_manifest_checksum(good_file: Path) -> None:
    def edit(data: bytearray) -> None:
        at = data.index(b'"target"')
        data[at + 1] = ord("T")

    rewrite(good_file, edit)
    with pytest.raises(ContainerError, match="checksum mismatch in the manifest"):
        read_spyre(good_file)


def test_blob_checksum(good_file: Path) -> None:
    rewrite(good_file, lambda d: d.__setitem__(len(d) - 1, d[-1] ^ 0x01))
    with pytest.raises(ContainerError, match=r"checksum mismatch in blob 'weights/4'"):
        read_spyre(good_file)


@pytest.mark.parametrize("keep", [4, 30, 200, -1])
def test_truncated(good_file: Path, keep: int) -> None:
    data = good_file.read_bytes()
    good_file.write_bytes(data[:keep])
    with pytest.raises(ContainerError, match=r"good.spyre: (truncated|not a .spyre)"):
        read_spyre(good_file)


def test_trailing_garbage(good_file: Path) -> None:
    with good_file.open("ab") as stream:
        stream.write(b"extra")
    with pytest.raises(ContainerError, match="5 unexpected bytes"):
        read_spyre(good_file)


def test_errors_are_value_errors_with_one_line(good_file: Path) -> None:
    rewrite(good_file, lambda d: d.__setitem__(len(d) - 1, d[-1] ^ 0x01))
    with pytest.raises(ValueError) as info:
        read_spyre(good_file)
    assert "\n" not in str(info.value)


def test_files_are_written_with_default_permissions(tmp_path: Path) -> None:
    # mkstemp creates 0600 files; a model file should not end up private by accident.
    path = tmp_path / "model.spyre"
    write_spyre(linear_relu_binary(), path)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_encoded_programs_count_instructions_without_decoding() -> None:
    """The manifest's instruction counts of packed programs come from their headers (a
    40-layer stack's seven million instructions were decoded to count them); a damaged
    program is refused as decoding refuses it."""
    from spyrec.target.container import EncodedPrograms
    from spyrec.target.isa import EncodingError, Instr, count_instructions, encode_program

    load = Instr.make("dma.load", ddr=128, lx=0, rows=1, row_bytes=128, ddr_pitch=128,
                      lx_pitch=128)
    program = [load, Instr(load.op, load.args, 0, (0,)), Instr(load.op, load.args, 1, (0, 1))]
    code = encode_program(program)
    programs = EncodedPrograms({0: code, 3: code[:len(encode_program(program[:1]))]})
    assert [programs.instructions(c) for c in programs] == [3, 1]
    assert programs._decoded == {}
    for damaged in (code[:-2], code[:2], b"\xff" + code[1:]):
        with pytest.raises(EncodingError):
            count_instructions(damaged)
    # a program of a length counted before is recognised by its header words, not its size
    other = encode_program([Instr(load.op, load.args, 1, ()), Instr(load.op, load.args, 0, (0,)),
                            Instr(load.op, load.args, 0, (0, 1))])
    assert len(other) == len(code) and count_instructions(other) == 3  # units differ
    second = len(encode_program(program[:1]))
    damaged = code[:second] + b"\xff" + code[second + 1:]
    with pytest.raises(EncodingError, match="unknown opcode 255"):
        count_instructions(damaged)
