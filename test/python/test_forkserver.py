"""The lit suite's fork server (spyrec.tools.forkserver, design note 99): a command run
through it behaves as the installed command does (output, exit status, working directory,
environment, stdin), and its client runs the installed command when no server answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spyrec.tools import forkserver

KERNELS = Path(__file__).parent / "ktir" / "kernels" / "stored_broadcasts.mlir"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    work = tmp_path_factory.mktemp("forkserver")
    process, clients = forkserver.launch(work)
    assert process is not None and clients is not None
    yield clients
    process.terminate()
    process.wait(timeout=30)
    assert not (work / "socket").exists()  # it cleans up after itself


def _both(bin_dir: Path, args: list[str], **kwargs) -> tuple[subprocess.CompletedProcess,
                                                            subprocess.CompletedProcess]:
    """The command through the server's client and as installed."""
    installed = Path(sys.executable).parent / args[0]
    via = subprocess.run([str(bin_dir / args[0]), *args[1:]], capture_output=True, text=True,
                         check=False, **kwargs)
    direct = subprocess.run([str(installed), *args[1:]], capture_output=True, text=True,
                            check=False, **kwargs)
    return via, direct


def test_a_compile_prints_what_the_installed_command_prints(server):
    via, direct = _both(server, ["spyrec", "compile", str(KERNELS), "--function",
                                 "row_fill", "--emit=spyrecode"])
    assert via.returncode == direct.returncode == 0
    assert via.stdout == direct.stdout and "spyrecode.sfu_unary" in via.stdout


@pytest.mark.parametrize("args, status", [
    (["spyrec", "compile", "missing.mlir"], 1),   # a located error, exit status 1
    (["spyre-opt", "--no-such-option"], 2),        # a usage error
])
def test_errors_keep_their_message_and_status(server, tmp_path, args, status):
    via, direct = _both(server, args, cwd=tmp_path)
    assert via.returncode == direct.returncode == status
    assert via.stderr == direct.stderr and via.stderr


def test_working_directory_environment_and_stdin_are_the_clients(server, tmp_path):
    """A relative output path lands in the client's directory; the client's environment
    (here: no compile cache) reaches the command; stdin is the client's."""
    (tmp_path / "k.mlir").write_text(KERNELS.read_text())
    env = dict(os.environ, SPYREC_CACHE="0")
    result = subprocess.run([str(server / "spyrec"), "compile", "k.mlir", "--function",
                             "row_fill", "-o", "k.spyre"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "k.spyre").stat().st_size > 0
    source = "func.func @f(%a: f32) -> f32 {\n  func.return %a : f32\n}\n"
    via, direct = _both(server, ["spyre-opt"], input=source)
    assert via.returncode == direct.returncode == 0
    assert via.stdout == direct.stdout and "func.func @f" in via.stdout


def test_the_client_runs_the_installed_command_without_a_server(tmp_path):
    forkserver.write_clients(tmp_path, str(tmp_path / "no-server"))
    result = subprocess.run([str(tmp_path / "spyrec"), "--help"], capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0 and "Usage" in result.stdout



def test_another_hash_seed_runs_the_installed_command(tmp_path, monkeypatch):
    """PYTHONHASHSEED took effect when the server started: a command given another seed
    (test_determinism.py compiles under two) runs as installed. Here the "server" listens
    and never answers: a client that used it would wait until the time limit."""
    import socket

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp_path / "socket"))
    listener.listen(4)
    for name in [k for k in os.environ if k.startswith("PYTHON")]:
        monkeypatch.delenv(name)
    forkserver.write_clients(tmp_path, str(tmp_path / "socket"))  # records no PYTHON*
    env = dict(os.environ)
    try:
        result = subprocess.run([str(tmp_path / "spyrec"), "--help"], capture_output=True,
                                text=True, check=False, timeout=120,
                                env=dict(env, PYTHONHASHSEED="12345"))
        assert result.returncode == 0 and "Usage" in result.stdout
        with pytest.raises(subprocess.TimeoutExpired):  # the same seed: it asks the server
            subprocess.run([str(tmp_path / "spyrec"), "--help"], capture_output=True,
                           check=False, timeout=5, env=env)
    finally:
        listener.close()
