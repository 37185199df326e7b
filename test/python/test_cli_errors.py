"""Bad input ends in a one-paragraph message and exit status 1 (usage errors: 2), never a
traceback or a destroyed file; what a user types just works (issue 18, items 4 and 5).

Most cases run `spyrec` in-process through click's runner (an uncaught exception would be
the runner's `exception`, not a SystemExit); a few run the installed scripts to show what
a terminal shows.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from click.testing import CliRunner, Result
from conftest import one

from spyrec.cli import main
from spyrec.dialects.ktdp_parse import parse_ktir
from spyrec.dialects.spyre import LaunchOp


def _invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _fails(status: int, *args: str | Path) -> str:
    """Run spyrec with `args`; it must exit `status` through sys.exit (no exception escaped),
    with a message and no traceback; returns the output."""
    res = _invoke(*args)
    assert res.exit_code == status, res.output
    assert isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output
    assert "Error: " in res.output or "error: " in res.output
    return res.output


class _Linear(torch.nn.Module):
    def __init__(self, out: int) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(64, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


class _Embedding(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.table = torch.nn.Embedding(10, 64)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.table(ids)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """model.pt2/.spyre (Linear 64->64), other.pt2 (64->128), emb.pt2/.spyre (an embedding
    of 10 rows whose saved example ids include 200, and random ids, from [0, 16), some 10
    or more: out of range)."""
    path = tmp_path_factory.mktemp("errors")
    torch.manual_seed(0)
    x = torch.randn(32, 64)
    torch.export.save(torch.export.export(_Linear(64), (x,)), path / "model.pt2")
    torch.export.save(torch.export.export(_Linear(128), (x,)), path / "other.pt2")
    ids = torch.tensor([[*range(10)] * 6 + [1, 2, 3, 200]])
    torch.export.save(torch.export.export(_Embedding(), (ids,)), path / "emb.pt2")
    for name in ("model", "emb"):
        res = _invoke("compile", path / f"{name}.pt2", "-o", path / f"{name}.spyre")
        assert res.exit_code == 0, res.output
    np.save(path / "x.npy", x.numpy())
    torch.save(x, path / "x.pt")
    np.save(path / "x64.npy", x.double().numpy())
    return SimpleNamespace(dir=path, model=path / "model.pt2", spyre=path / "model.spyre",
                           other=path / "other.pt2", emb=path / "emb.pt2",
                           emb_spyre=path / "emb.spyre", x=x)


def _with_manifest(src: Path, dst: Path, change) -> Path:
    """A copy of the .spyre `src` whose manifest `change` edits, checksums made valid."""
    from spyrec.target import round_up
    from spyrec.target.container import _HEADER, ALIGNMENT

    data = src.read_bytes()
    magic, version, flags, size, _ = _HEADER.unpack(data[:_HEADER.size])
    manifest = json.loads(data[_HEADER.size:_HEADER.size + size])
    blobs = data[round_up(_HEADER.size + size, ALIGNMENT):]
    change(manifest)
    raw = json.dumps(manifest).encode()
    head = _HEADER.pack(magic, version, flags, len(raw), hashlib.sha256(raw).digest()) + raw
    dst.write_bytes(head + bytes(round_up(len(head), ALIGNMENT) - len(head)) + blobs)
    return dst


# ---- item 4: no traceback -------------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "profile", "inspect"])
def test_a_spyre_naming_an_unknown_dtype(files, tmp_path, command):
    def damage(manifest):
        manifest["signature"]["inputs"][0]["dtype"] = "float8"

    bad = _with_manifest(files.spyre, tmp_path / "bad.spyre", damage)
    out = _fails(1, command, bad)
    assert "bad.spyre: tensor 'x' has the dtype 'float8'" in out and "recompile" in out


def test_check_against_a_pt2_of_another_signature(files):
    out = _fails(1, "run", files.spyre, "--check", files.other)
    assert "other.pt2 does not match" in out and "output 'relu'" in out
    assert "[32, 128]" in out and "emulated time" not in out  # refused before running


def test_arg_arrays_too_large_for_memory_are_refused_before_drawing(tmp_path):
    kernel = Path(__file__).parent / "ktir" / "kernels" / "vector_add.mlir"
    out = _fails(1, "run", kernel, "--function", "add",
                 "--arg", "a=rand:100000x100000xfloat32")
    assert "--arg a=rand:100000x100000xfloat32: 10000000000 elements" in out
    assert "use a smaller shape" in out


@pytest.mark.parametrize("args,needle", [
    (["--batch", "-4"], "-4 is not in the range"),
    (["--batch", "3"], "give an even number"),
    (["--features", "100"], "give a multiple of 64"),
    (["--features", "0"], "0 is not in the range"),
    (["--features", "100000"], "100000 is not in the range"),
    (["--model", "nope"], "'nope' is not in the zoo"),
])
def test_demo_options_out_of_range(args, needle):
    assert needle in _fails(2, "demo", *args)


def test_a_device_fault_in_run_check_run_and_profile(files):
    """An embedding index out of range: the fault's message (core, pc, instruction, address)
    without a traceback, whether the ids are the .pt2's (--check) or random ones."""
    for args in (["run", files.emb_spyre, "--check", files.emb], ["run", files.emb_spyre],
                 ["profile", files.emb_spyre]):
        out = _fails(1, *args)
        assert "the device faulted: core " in out and ", pc " in out, out
        assert "(dma.gather " in out and "(address 0x" in out
        assert "is outside the table's rows [0, 10)" in out


def test_a_device_fault_in_a_terminal(files, spyrec_cli, cli_env):
    res = subprocess.run([*spyrec_cli, "run", str(files.emb_spyre), "--check", str(files.emb)],
                         capture_output=True, text=True, env=cli_env, check=False, timeout=300)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    note, error = res.stderr.splitlines()  # which inputs, then the one-paragraph error
    assert note.startswith("inputs: the example inputs saved in ")
    assert error.startswith("error: the device faulted: core ")


def _spyre_opt(*args: str) -> tuple[int, str]:
    """spyre-opt in-process: its exit status and stderr."""
    from spyrec.tools.spyre_opt import main as spyre_opt

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            spyre_opt(list(args))
            status = 0
        except SystemExit as exc:
            status = int(exc.code or 0)
    return status, err.getvalue()


@pytest.fixture
def tiny_mlir(tmp_path: Path) -> Path:
    path = tmp_path / "k.mlir"
    path.write_text("func.func @f() {\n  func.return\n}\n")
    return path


@pytest.mark.parametrize("passes,needle", [
    ("nosuchpass", "no pass named 'nosuchpass'"),
    ("spyre-fus", "did you mean spyre-fuse"),
    ("spyre-fuse{bogus=1}", "pass 'spyre-fuse': Provided arguments [\"bogus\"] not found"),
    ("spyre-fuse{enabled=maybe}", "pass 'spyre-fuse': Incompatible types"),
    ("spyre-fuse{", "Expected argument name here"),
    (",,", "Expected pass name here"),
])
def test_spyre_opt_bad_pipelines_are_usage_errors(tiny_mlir, passes, needle):
    status, err = _spyre_opt(str(tiny_mlir), "-p", passes)
    assert status == 2 and needle in err and "Traceback" not in err
    assert err.startswith(f"spyre-opt: error: -p '{passes}': ")


def test_spyre_opt_unknown_extension(tiny_mlir):
    text = tiny_mlir.with_suffix(".txt")
    text.write_text(tiny_mlir.read_text())
    status, err = _spyre_opt(str(text))
    assert status == 2 and "k.txt: spyre-opt reads a file by its extension" in err
    assert "-f mlir" in err


def test_spyre_opt_output_over_its_input_and_non_files(tiny_mlir, tmp_path):
    """-o naming the input is written after the passes, atomically (it used to be emptied
    before the parse); a directory or device is refused; a failed run leaves -o alone."""
    status, _ = _spyre_opt(str(tiny_mlir), "-o", str(tiny_mlir))
    assert status == 0 and "func.return" in tiny_mlir.read_text()
    for target in (tmp_path, Path("/dev/null")):
        status, err = _spyre_opt(str(tiny_mlir), "-o", str(target))
        assert status == 2 and "not a regular file" in err
    garbage = tmp_path / "garbage.mlir"
    garbage.write_text("garbage")
    status, _ = _spyre_opt(str(garbage), "-o", str(tiny_mlir))
    assert status == 1 and "func.return" in tiny_mlir.read_text()


def test_output_that_would_destroy_a_file_is_refused_before_work(files, tmp_path):
    before = files.model.read_bytes()
    out = _fails(2, "compile", files.model, "-o", files.model)
    assert "is the input" in out and "would destroy it" in out
    assert files.model.read_bytes() == before
    assert "is a directory" in _fails(2, "compile", files.model, "-o", tmp_path)
    assert "not a regular file" in _fails(2, "compile", files.model, "-o", "/dev/null")
    assert "not a folder" in _fails(2, "compile", files.model, "-o", tmp_path / "no" / "m.spyre")
    assert "frontend" not in _invoke("compile", files.model, "-o", files.model).output
    assert "is the input" in _fails(2, "profile", files.spyre, "--trace", files.spyre)
    assert "compiled .spyre already" in _fails(2, "compile", files.spyre)


def test_missing_files_name_the_file(tmp_path):
    for command in ("run", "profile", "inspect"):
        out = _fails(1, command, tmp_path / "nope.spyre")
        assert "nope.spyre: No such file or directory" in out


# ---- item 5: what a user types just works ---------------------------------------------------


def test_run_a_binary_with_input_files_and_save_outputs(files, tmp_path):
    with torch.no_grad():
        expected = torch.export.load(files.model).module()(files.x).numpy()
    for source in ("x.npy", "x.pt"):
        outs = tmp_path / source
        res = _invoke("run", files.spyre, "--input", f"x={files.dir / source}",
                      "--save-outputs", outs, "--check", files.model)
        assert res.exit_code == 0, res.output
        assert "relu: ok" in res.output and "example inputs" not in res.output
        saved = np.load(outs / "relu.npy")
        assert saved.shape == (32, 64) and np.allclose(saved, expected, atol=1e-4)


def test_run_input_mistakes(files):
    assert "input 'x': [32, 64] torch.float64 does not match the binary's [32, 64] " \
        "torch.float32" in _fails(1, "run", files.spyre, "--input", f"x={files.dir}/x64.npy")
    assert "no input 'y' (its inputs: x)" in _fails(2, "run", files.spyre, "--input", "y=a.npy")
    assert "model.pt2 is neither .npy nor .pt" in _fails(
        1, "run", files.spyre, "--input", f"x={files.model}")
    assert "not a file" in _fails(1, "run", files.spyre, "--input", "x=missing.npy")
    assert "--arg is for a KTIR .mlir kernel or a .spyre compiled from one" in _fails(
        2, "run", files.spyre, "--arg", "a=1")


def test_emit_with_output_writes_the_file(files, tmp_path):
    target = tmp_path / "k.mlir"
    res = _invoke("compile", files.model, "--emit=ktir", "-o", target)
    assert res.exit_code == 0, res.output
    assert "ktdp.construct_access_tile" in target.read_text()
    assert "ktdp.construct_access_tile" not in res.output  # in the file, not on stdout
    # the kernels alone (no host dialect); the whole program beside them, generic, readable
    assert "spyre.launch" not in target.read_text() and "spyre.param" not in target.read_text()
    host = tmp_path / "k.host.mlir"
    assert '"spyre.launch"' in host.read_text() and f"wrote {host}" in res.output
    program = parse_ktir(host)  # spyrec reads it back (spyre-opt can go on from it)
    callees = {op.callee.root_reference.data for op in program.walk()
               if isinstance(op, LaunchOp)}
    assert callees and target.read_text().count("func.func @") == len(callees)


def test_short_help_everywhere():
    for args in (["-h"], ["run", "-h"], ["compile", "-h"], ["cache", "info", "-h"]):
        res = _invoke(*args)
        assert res.exit_code == 0 and "Usage:" in res.output, args


def test_version_and_help_import_neither_torch_nor_the_runtime():
    """What keeps them well under a second (measured 0.14 s and 0.1 s, against 0.8 s when
    the CLI imported the KTIR interpreter and ml_dtypes)."""
    probe = ("import sys; sys.argv = ['spyrec', '{}']\n"
             "from spyrec.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "heavy = [m for m in ('torch', 'numpy', 'spyrec.runtime.ktir_interpreter') "
             "if m in sys.modules]\n"
             "assert not heavy, heavy\n")
    for flag in ("--version", "--help"):
        res = subprocess.run([sys.executable, "-c", probe.format(flag)], capture_output=True,
                             text=True, check=False, timeout=60)
        assert res.returncode == 0, res.stderr


def test_import_spyrec_exposes_ktir_lazily():
    code = ("import sys, spyrec\nassert 'torch' not in sys.modules\n"
            "assert callable(spyrec.ktir.execute)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False, timeout=120)
    assert res.returncode == 0, res.stderr


def test_a_dim_without_min_runs_from_one_to_max():
    """torch.export.Dim's default min is 0; spyrec runs 1..max (it stopped with "symbol
    'x.dim0' has the empty range [0, 64]")."""
    import spyrec

    torch.manual_seed(0)
    model = _Linear(64).eval()
    rows = torch.export.Dim("rows", max=64)
    ep = torch.export.export(model, (torch.randn(8, 64),), dynamic_shapes=({0: rows},))
    exe = spyrec.compile(ep)
    assert exe.binary.symbols == {"x.dim0": (1, 64)}
    x = torch.randn(17, 64)
    with torch.no_grad():
        assert torch.allclose(one(exe(x)), model(x), atol=1e-4)


def test_an_empty_range_names_the_dim_and_what_to_pass():
    from spyrec.diagnostics import CompileError
    from spyrec.frontend.symbolic import _bounds

    symbol = object()
    ep = SimpleNamespace(range_constraints={symbol: SimpleNamespace(lower=0, upper=0)})
    with pytest.raises(CompileError, match=r"m.pt2: input 'x' dim 1 is symbolic with the range "
                                           r"\[0, 0\].*torch.export.Dim\('seq', min=1"):
        _bounds(ep, symbol, "input 'x' dim 1", "m.pt2")  # type: ignore[arg-type]


def test_progress_inside_a_stage(files, capsys):
    """Passes report progress through the driver (scheduling counts the kernels), and the
    CLI prints it as periodic lines off a terminal."""
    from spyrec.cli import _StageReport
    from spyrec.driver import compile_program

    heard: list[tuple[str, str, int, int]] = []
    compile_program(files.model, on_progress=lambda *report: heard.append(report))
    assert ("spyrecode", "kernels scheduled", 0, 1) in heard

    now = [0.0]
    report = _StageReport()
    report.clock, report.tty, report.last = (lambda: now[0]), False, 0.0
    capsys.readouterr()
    for second in range(25):
        now[0] = float(second)
        report.progress("spyrecode", "cores' templates derived", second, 25)
    assert capsys.readouterr().err.splitlines() == ["  spyrecode  cores' templates derived: 10/25",
                     "  spyrecode  cores' templates derived: 20/25"]


def test_progress_on_a_terminal_is_one_updating_line(capsys):
    """On a terminal the progress line is redrawn in place (at once for new work, then at
    most every 0.2 s) and cleared before the stage's time is printed."""
    from spyrec.cli import _StageReport

    now = [0.0]
    report = _StageReport()
    report.clock, report.tty, report.last = (lambda: now[0]), True, 0.0
    capsys.readouterr()
    for done, second in enumerate((0.1, 0.3, 0.35, 0.6, 0.65), 1):
        now[0] = second
        report.progress("graph", "core splits weighed", done, 5)
    report.stage("graph", 0.5)
    err = capsys.readouterr().err
    assert err.count("\r\x1b[K  graph      core splits weighed: ") == 3  # 0.1, 0.3, 0.6 s
    assert err.endswith("core splits weighed: 4/5\r\x1b[K  graph         500.0 ms\n")
