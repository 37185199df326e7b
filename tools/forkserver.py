"""A fork server for the test suites: `spyrec` and `spyre-opt` commands without the start-up.

A command-line run of `spyrec` or `spyre-opt` spends about 4 s of CPU importing torch, xDSL
and spyrec's dialects and passes before it does 0.1-1 s of work; the lit suite runs some 230
of them. The server imports all of that once and forks a child per command: the child takes
the client's stdin / stdout / stderr (passed over a Unix socket), working directory,
environment and arguments, runs the same entry point the installed script runs, and sends
back its exit status. The client is a stdlib-only script started with `python -IS`
(tens of milliseconds); when no server answers it runs the installed command itself, so a
test sees the same behaviour either way, only sooner. A command whose interpreter start-up
variables (`PYTHON*`: the hash seed, the import path) differ from the server's also runs
as installed, since those took effect when the server started.

    python -m spyrec.tools.forkserver --socket PATH --clients DIR

prints `ready` once the imports are done and the socket listens, writes the clients
(`DIR/spyrec`, `DIR/spyre-opt`, to put first on PATH), and serves until its parent exits
or it is terminated. test/lit/lit.cfg.py starts one for each lit run (design note 99).

Each command still runs in a process of its own with a fresh copy of the imported state:
nothing one command does reaches the next. The server itself runs no torch op (a fork after
torch has started its thread pools would not be safe).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import pkgutil
import signal
import socket
import struct
import subprocess
import sys
import traceback
from pathlib import Path

# the console scripts of pyproject.toml the server runs
ENTRY_POINTS = {"spyrec": "spyrec.cli:main", "spyre-opt": "spyrec.tools.spyre_opt:main"}

# packages whose modules are all loaded before the first fork (a command imports some of
# them lazily); torch first
PRELOAD = ("torch", "spyrec")

_HEADER = struct.Struct("!I")

# the client: stdlib only, run with `python -IS`; {socket} {fallback} filled in
CLIENT = '''\
#!{python} -IS
"""Run `{name}` in the spyrec fork server at {socket}, or as installed when none answers."""
import json, os, socket, struct, sys
argv = [{name!r}] + sys.argv[1:]
# variables the interpreter reads at start-up (the hash seed, the import path) took effect
# in the server already: a command given other values runs as installed
startup = {{k: v for k, v in os.environ.items() if k.startswith("PYTHON")}}
try:
    if startup != {startup!r}:
        raise OSError("the interpreter's start-up differs")
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect({socket!r})
except OSError:
    os.execv({fallback!r}, [{fallback!r}] + sys.argv[1:])
body = json.dumps({{"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
socket.send_fds(conn, [struct.pack("!I", len(body))], [0, 1, 2])
conn.sendall(body)
reply = b""
while len(reply) < 4:
    chunk = conn.recv(4 - len(reply))
    if not chunk:
        sys.stderr.write("{name}: the spyrec fork server's child died without an exit "
                         "status\\n")
        sys.exit(1)
    reply += chunk
sys.exit(struct.unpack("!i", reply)[0])
'''


def _startup() -> dict[str, str]:
    """The server's interpreter start-up variables (PYTHONHASHSEED, PYTHONPATH, ...)."""
    return {k: v for k, v in os.environ.items() if k.startswith("PYTHON")}


def write_clients(directory: Path, socket_path: str) -> None:
    """The client scripts, one per entry point, executable, in `directory`."""
    bindir = Path(sys.executable).parent
    directory.mkdir(parents=True, exist_ok=True)
    for name in ENTRY_POINTS:
        path = directory / name
        path.write_text(CLIENT.format(python=sys.executable, name=name, socket=socket_path,
                                      fallback=str(bindir / name), startup=_startup()))
        path.chmod(0o755)


def launch(workdir: Path) -> tuple[subprocess.Popen | None, Path | None]:
    """Start a server with its socket and clients in `workdir` and wait until it serves:
    (the server process, the clients' folder). (None, None) where there is no fork or
    SPYREC_LIT_FORKSERVER=0; (process, None) if it did not start (the installed commands
    then run). The caller terminates the process."""
    if os.environ.get("SPYREC_LIT_FORKSERVER", "1") == "0" or not hasattr(os, "fork"):
        return None, None
    process = subprocess.Popen(
        [sys.executable, "-m", "spyrec.tools.forkserver", "--socket", str(workdir / "socket"),
         "--clients", str(workdir / "bin")], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    ready = process.stdout.readline().strip() == "ready"
    return process, workdir / "bin" if ready else None


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the client closed the connection")
        data += chunk
    return data


def _exit_code(exc: SystemExit) -> int:
    """What the interpreter would exit with for `sys.exit(code)`."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    sys.stderr.write(f"{exc.code}\n")
    return 1


def _run_command(conn: socket.socket) -> int:
    """In the forked child: take the client's descriptors, directory, environment and
    arguments, run the entry point, return its exit status."""
    header, fds, _, _ = socket.recv_fds(conn, _HEADER.size, 3)
    request = json.loads(_recv_exact(conn, _HEADER.unpack(header)[0]))
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    module, _, attr = ENTRY_POINTS[sys.argv[0]].partition(":")
    try:
        result = getattr(importlib.import_module(module), attr)()
        code = result if isinstance(result, int) else 0
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:  # noqa: BLE001 - as the interpreter reports an uncaught exception
        traceback.print_exc()
        code = 1
    return code


def _child(listener: socket.socket, conn: socket.socket) -> None:
    """The forked child's whole life: serve one command and exit with its status."""
    listener.close()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the command may wait for its own children
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    code = 1
    try:
        code = _run_command(conn)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        try:
            conn.sendall(struct.pack("!i", code))
        finally:
            os._exit(code & 0xFF)


def _preload() -> None:
    """Import every module of `PRELOAD`'s packages; one that fails to import is left to the
    command that needs it, which reports the failure itself."""
    for name in PRELOAD:
        package = importlib.import_module(name)
        if name == "torch":
            continue
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            try:
                importlib.import_module(info.name)
            except Exception:  # noqa: BLE001 - the command reports it, not the server
                continue


def serve(socket_path: str) -> None:
    """Import everything, listen on `socket_path`, fork a child per connection until the
    parent process exits or SIGTERM arrives."""
    _preload()
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    listener.settimeout(1.0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped as they exit
    print("ready", flush=True)
    try:
        while os.getppid() == parent:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(None)
            if os.fork() == 0:
                _child(listener, conn)
            conn.close()
    finally:
        listener.close()
        Path(socket_path).unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--socket", required=True, help="the Unix socket to listen on")
    parser.add_argument("--clients", type=Path, required=True,
                        help="where to write the client scripts")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    write_clients(args.clients, args.socket)
    serve(args.socket)


if __name__ == "__main__":
    main()
