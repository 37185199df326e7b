"""Symbolic sizes that cost what the actual size costs (design note 49): the compiler guards
the work only padded positions need with `loop.begin trips=1` and lists the guards in the
.spyre's patch table; per call the host's program correction sets each guard's trips from
the actual size, and the emulator runs (and times) the patched programs."""

from __future__ import annotations

import copy
import hashlib
import json
import struct
import subprocess

import numpy as np
import pytest
import torch
from conftest import assert_close, export_symbolic_decoder

import spyrec
from spyrec.runtime.emulator import Emulator
from spyrec.target import round_up
from spyrec.target.container import FORMAT_VERSION, ContainerError, Patch, read_spyre, write_spyre

MAX = 128
SEQ = torch.export.Dim("seq", min=1, max=MAX)


@pytest.fixture(scope="module")
def decoder():
    model, ep = export_symbolic_decoder(SEQ)
    return model, ep, spyrec.compile(ep)


def _close(exe, out, expected):
    assert_close(exe, expected, out)


def test_decoder_matches_eager_and_costs_less_at_small_sizes(decoder):
    """Causal attention, norms, SwiGLU: compiled once at 128 and run at 1, an unaligned 37
    and 128, matching eager with no hazard; the device time falls with the size."""
    model, _, exe = decoder
    assert exe.binary.patches, "no guard placed"
    times = {}
    for size in (1, 37, MAX):
        x = torch.randn(2, size, 128).half()
        out = exe(x)
        with torch.no_grad():
            _close(exe, out, model(x))
        assert not [w for w in exe.last_profile.warnings if "hazard" in w.lower()]
        times[size] = exe.last_profile.to_dict()["emulated_us"]
    assert times[1] < times[MAX]
    assert times[37] <= times[MAX]


def test_guarded_outputs_are_the_padded_programs_bit_for_bit(decoder):
    """What runs at size s reads only bytes whose last writer also ran, so the real rows
    equal those of the whole program (the same binary with its patch table dropped)."""
    _, _, exe = decoder
    whole = copy.copy(exe.binary)
    whole.patches = []
    x = np.random.default_rng(1).standard_normal((2, 37, 128)).astype(np.float16)
    guarded, prof = Emulator(exe.binary).run([x])
    padded, full = Emulator(whole).run([x])
    assert np.array_equal(guarded[0], padded[0])
    assert prof.kernels[-1].instructions < full.kernels[-1].instructions


def test_timing_mode_takes_the_size_and_checks_it(decoder):
    _, _, exe = decoder
    emulator = Emulator(exe.binary, mode="timing")
    small = emulator.run(sizes={"x.dim1": 1})[1].to_dict()["emulated_us"]
    large = emulator.run(sizes={"x.dim1": MAX})[1].to_dict()["emulated_us"]
    default = emulator.run()[1].to_dict()["emulated_us"]
    assert small < large == default
    with pytest.raises(spyrec.diagnostics.SpyrecError, match="outside the range"):
        emulator.run(sizes={"x.dim1": MAX + 1})


def test_an_mlp_over_tokens_skips_padded_rows():
    """Linear -> GELU -> linear over a symbolic token count."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.GELU(),
                                torch.nn.Linear(256, 128)).half().eval()
    tokens = torch.export.Dim("tokens", min=1, max=256)
    ep = torch.export.export(model, (torch.randn(32, 128).half(),),
                             dynamic_shapes=({0: tokens},))
    exe = spyrec.compile(ep)
    times = {}
    for size in (1, 100, 256):
        x = torch.randn(size, 128).half()
        out = exe(x)
        with torch.no_grad():
            _close(exe, out, model(x))
        times[size] = exe.last_profile.to_dict()["emulated_us"]
    assert times[1] < times[100] < times[256]


def test_patch_table_round_trip(decoder, tmp_path):
    _, _, exe = decoder
    path = tmp_path / "d.spyre"
    write_spyre(exe.binary, path)
    back = read_spyre(path)
    assert back.patches == exe.binary.patches and back == exe.binary
    with path.open("rb") as stream:
        assert struct.unpack("<8sI", stream.read(12))[1] == FORMAT_VERSION == 2
    # the plan's program-correction step carries each trips field's device address
    emulator = Emulator(back, mode="timing")
    step = next(s for s in emulator.exec_plan if s.get("fn") == "patch_trips")
    entry = step["patches"][0]
    raw = emulator.memory.read(entry["dev_ptr"] - 4, 12)
    assert raw[0] == 15 and int.from_bytes(raw[4:], "little") == len(entry["thresholds"])


def _rewrite_manifest(path, edit):
    """Rewrite a .spyre's manifest (with a valid checksum), keeping its blobs."""
    data = path.read_bytes()
    magic, version, flags, size, _ = struct.unpack_from("<8sIIQ32s", data)
    manifest = json.loads(data[56: 56 + size])
    blobs = data[round_up(56 + size, 128):]
    version = edit(manifest) or version
    body = json.dumps(manifest, separators=(",", ":")).encode()
    head = struct.pack("<8sIIQ32s", magic, version, flags, len(body),
                       hashlib.sha256(body).digest())
    out = head + body
    path.write_bytes(out + bytes(round_up(len(out), 128) - len(out)) + blobs)


@pytest.mark.parametrize("edit,message", [
    (lambda p: p.__setitem__(2, p[2] + 1), (r"the instruction there is \S+, not a loop.begin "
                                            r"of 1 trips")),
    (lambda p: p.__setitem__(4, [MAX + 1]), (r"thresholds \[129\] are not non-decreasing "
                                             r"sizes in \[1, 128\]")),
    (lambda p: p.__setitem__(3, "seq"), r"symbol 'seq' is not declared"),
    (lambda p: p.__setitem__(1, 99), r"the binary has no such program"),
], ids=["not-a-loop", "threshold-out-of-range", "unknown-symbol", "no-such-core"])
def test_a_corrupt_patch_table_is_refused(decoder, tmp_path, edit, message):
    _, _, exe = decoder
    path = tmp_path / "d.spyre"
    write_spyre(exe.binary, path)
    _rewrite_manifest(path, lambda m: edit(m["patches"][0]))
    with pytest.raises(ContainerError, match=rf"patch 0 \(kernel .*\): {message}.*"
                                             r"the patch table is corrupt: recompile"):
        read_spyre(path)
    bad = copy.copy(exe.binary)
    first = exe.binary.patches[0]
    bad.patches = [Patch(first.kernel, first.core, first.pc + 1, first.symbol,
                         first.thresholds)]
    with pytest.raises(ContainerError, match=r"not a loop.begin"):
        write_spyre(bad, tmp_path / "bad.spyre")


def test_version_1_files_are_still_read(tmp_path):
    """A .spyre of format 1 (no patch table) reads as before."""
    ep = torch.export.export(torch.nn.Linear(64, 32), (torch.randn(4, 64),))
    binary = spyrec.compile(ep).binary
    path = tmp_path / "v1.spyre"
    write_spyre(binary, path)

    def to_v1(manifest):
        manifest["format_version"] = 1
        del manifest["patches"]
        return 1

    _rewrite_manifest(path, to_v1)
    assert read_spyre(path) == binary


def test_cli_profile_at_a_size_and_inspect_the_patch_table(decoder, spyrec_cli, cli_env,
                                                          tmp_path):
    _, _, exe = decoder
    path = tmp_path / "d.spyre"
    write_spyre(exe.binary, path)

    def run(*args):
        res = subprocess.run([*spyrec_cli, *args], capture_output=True, text=True,
                             env=cli_env, timeout=600, check=False)
        assert res.returncode == 0, res.stdout + res.stderr
        return res.stdout

    def emulated(out):
        return float(out.split("emulated time ")[1].split(" us")[0])

    small = run("profile", str(path), "--mode", "timing", "--size", "x.dim1=3")
    large = run("profile", str(path), "--mode", "timing")
    assert emulated(small) < emulated(large)
    assert emulated(run("profile", str(path), "--size", "x.dim1=3")) == emulated(small)
    shown = run("inspect", str(path), "--no-programs")
    assert f"patch table ({len(exe.binary.patches)} loops" in shown
    assert "'fn': 'patch_trips'" in shown
    first = exe.binary.patches[0]
    assert (f"kernel {exe.binary.kernels[first.kernel].name} core {first.core} pc {first.pc}: "
            f"runs if x.dim1 >= {first.thresholds[0]}") in shown
