"""Every command README.md shows runs as written, so the README cannot drift.

The README's shell blocks are parsed line by line (a line's `# ...` comment and comment-only
lines are dropped); each `spyrec ...` command runs in one folder holding the files the
README's "Use" section says it holds, in the README's order (a command may read what an
earlier one wrote: model.spyre, graph.mlir, k.spyre). `spyrec` runs in-process through its
click entry point with the command's own arguments (a subprocess per command would add a
torch import, ~2 s, to each), `spyre-opt` as the installed script. The Python block runs as
a script in the same folder. Commands over ~20 s (the Granite demos) are in the slow tier
(`SPYREC_SLOW=1`). The set-up commands are what CI runs itself: they are checked against
`.ci/run` rather than run again.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
KERNELS = Path(__file__).parent / "ktir" / "kernels"

# one pytest-xdist worker runs this file's tests in order (ORDERED_FILES in conftest.py): a
# command may read what an earlier one wrote in the module's folder
# commands over ~20 s on a 2-core machine (measured: granite-8b-decode 21 s, the layer 36 s)
SLOW = ("granite-8b",)


def _blocks(language: str) -> list[str]:
    return [body for lang, body in re.findall(r"```(\w*)\n(.*?)```", README, re.DOTALL)
            if lang == language]


def _commands(block: str) -> list[str]:
    """The block's commands: one a line, without comments and comment-only lines."""
    commands = []
    for line in block.splitlines():
        command = re.split(r"\s+#", line.strip(), maxsplit=1)[0].strip()
        if command and not command.startswith("#"):
            commands.append(command)
    return commands


SETUP = [c for block in _blocks("sh") for c in _commands(block) if "python3 -m venv" in c]
USE = [c for block in _blocks("sh") for c in _commands(block)
       if c.startswith(("spyrec ", "spyre-opt "))]


class _MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 128)
        self.fc2 = torch.nn.Linear(128, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class _Cumprod(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumprod(x, dim=1)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files the README's "Use" section says its folder holds."""
    path = tmp_path_factory.mktemp("readme")
    torch.manual_seed(0)
    seq = torch.export.Dim("seq", max=64)
    x = torch.randn(2, 32, 64)
    torch.export.save(torch.export.export(_MLP().eval(), (x,), dynamic_shapes=({1: seq},)),
                      path / "model.pt2")
    torch.export.save(torch.export.export(_Cumprod(), (torch.randn(4, 64),)),
                      path / "broken.pt2")
    np.save(path / "x.npy", x.numpy())
    np.save(path / "b.npy", np.random.default_rng(0).standard_normal((96, 64))
            .astype(np.float16))
    (path / "kernel.mlir").write_text((KERNELS / "vector_add.mlir").read_text()
                                      + (KERNELS / "softmax.mlir").read_text())
    return path


def test_the_readme_has_its_commands() -> None:
    """The parse found the blocks (a README reformatted beyond the parser fails here)."""
    assert len(SETUP) == 2 and len(USE) >= 20 and len(_blocks("python")) == 1


def test_setup_commands_are_what_ci_runs() -> None:
    """The test-suite command is `.ci/run`'s (which only adds -q); it installs upstream MLIR
    at the pin of pyproject's `mlir` extra; the demo command installs the same way with
    fewer extras and no MLIR, and its `spyrec demo` is run by test_cli.py::test_demo."""
    import tomllib

    ci = next(line for line in (ROOT / ".ci" / "run").read_text().splitlines()
              if "python3 -m venv" in line).replace(" -q", "")
    demo, suite = SETUP
    assert suite == ci
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["mlir"]
    installs = ci.split(" && ")[:-1]
    assert installs[-1] == ".venv/bin/pip install --no-deps " + " ".join(pins)
    steps = demo.split(" && ")
    assert steps[:-1] == [s.replace("'.[dev,hf]'", "'.[dev]'") for s in installs[:-1]]
    assert steps[-1] == ".venv/bin/spyrec demo"


@pytest.mark.parametrize("command", [pytest.param(c, marks=pytest.mark.slow)
                                     if any(s in c for s in SLOW) else c for c in USE])
def test_readme_command(command: str, folder: Path, cli_env: dict[str, str],
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The command, as written, exits 0 without a traceback."""
    from click.testing import CliRunner

    from spyrec.cli import main

    monkeypatch.chdir(folder)
    monkeypatch.setenv("SPYREC_CACHE_DIR", str(folder / "cache"))  # not the user's cache
    program, *args = shlex.split(command)
    if program == "spyre-opt":
        res = subprocess.run([str(Path(sys.executable).parent / "spyre-opt"), *args],
                             capture_output=True, text=True, env=cli_env, check=False, timeout=300)
        assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
        return
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0 and result.exception is None, \
        f"{command}: exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    assert "Traceback" not in result.output


def test_readme_python_block(folder: Path, cli_env: dict[str, str]) -> None:
    """The "From Python" block, as a script in the folder of the examples."""
    (code,) = _blocks("python")
    script = folder / "readme_block.py"
    script.write_text(code)
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         cwd=folder, env=cli_env, check=False, timeout=600)
    assert res.returncode == 0, res.stderr
