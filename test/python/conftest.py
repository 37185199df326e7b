"""Shared fixtures: small models exported once per session."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import torch

from spyrec.demo import DemoMLP
from spyrec.tools import forkserver

if TYPE_CHECKING:
    from xdist.remote import Producer

BIN = Path(sys.executable).parent

# Tests compile afresh: the on-disk compile cache is off unless a test turns it on
# (test_cache.py); subprocesses of the CLI tests inherit this.
os.environ["SPYREC_CACHE"] = "0"


def export_mlp(features: int, dtype: torch.dtype, batch: int = 64, seed: int = 0):
    torch.manual_seed(seed)
    model = DemoMLP(features).to(dtype).eval()
    x = torch.randn(batch, features).to(dtype)
    return model, x, torch.export.export(model, (x,))


def one(outputs: torch.Tensor | tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The output of a one-output program: an `Executable` call returns a tensor or a tuple."""
    assert isinstance(outputs, torch.Tensor), "the program has several outputs"
    return outputs


def assert_matches_eager(exe, model: torch.nn.Module, *inputs: torch.Tensor) -> torch.Tensor:
    """Run `exe` (a `spyrec.api.Executable`) and check it against eager with
    `assert_close`; returns the device output as fp32."""
    with torch.no_grad():
        expected = model(*inputs)
    out = exe(*inputs)
    assert_close(exe, expected, out)
    return out.float()


def explain_both_ways(tmp_path, ep: torch.export.ExportedProgram, flag: str) -> tuple[str, str]:
    """`spyrec explain` of `ep` saved under `tmp_path`: by default, and with the compile
    switch `flag` (e.g. `--no-ring-reduce`); both must succeed."""
    from click.testing import CliRunner

    from spyrec.cli import main

    path = tmp_path / "model.pt2"
    torch.export.save(ep, path)
    runner = CliRunner()
    default = runner.invoke(main, ["explain", str(path)])
    switched = runner.invoke(main, ["explain", str(path), flag])
    assert default.exit_code == 0 and switched.exit_code == 0, default.output + switched.output
    return default.output, switched.output


def export_symbolic_decoder(seq: torch.export.Dim, layers: int = 1):
    """A half-precision DemoDecoder(128) exported with a symbolic sequence dim `seq`."""
    from spyrec.demo import DemoDecoder

    torch.manual_seed(0)
    model = DemoDecoder(128, layers).half().eval()
    ep = torch.export.export(model, (torch.randn(2, 16, 128).half(),),
                             dynamic_shapes=({1: seq},))
    return model, ep


@pytest.fixture(scope="session")
def fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path | None]:
    """The folder of the fork server's `spyrec` / `spyre-opt` clients (design note 99: the
    installed commands without ~4 s of imports each), one server per pytest process; None
    where there is no fork or SPYREC_LIT_FORKSERVER=0. test_forkserver.py checks that a
    command behaves the same through it."""
    server, clients = forkserver.launch(tmp_path_factory.mktemp("forkserver"))
    yield clients
    if server is not None:
        server.terminate()
        server.wait()


@pytest.fixture(scope="session")
def spyrec_cli(fork_server: Path | None) -> list[str]:
    """The `spyrec` command: the fork server's client, else the installed console script
    (else `python -m spyrec.cli`)."""
    if fork_server is not None:
        return [str(fork_server / "spyrec")]
    script = BIN / "spyrec"
    return [str(script)] if script.exists() else [sys.executable, "-m", "spyrec.cli"]


@pytest.fixture(scope="session")
def cli_env(fork_server: Path | None) -> dict[str, str]:
    """The environment of a CLI test's subprocess: the fork server's clients and the venv's
    commands first on PATH."""
    first = [str(fork_server)] if fork_server is not None else []
    return dict(os.environ, PATH=os.pathsep.join([*first, str(BIN),
                                                  os.environ.get("PATH", "")]))


# Three tiers (docs/architecture.md, Tests):
# - the fast tier, everything not marked `heavy`: lit and the core pytest suite, what
#   `python -m spyrec.tools.check` runs on every change;
# - the slow tier, `@pytest.mark.heavy` and every test of the files in HEAVY_FILES (models,
#   fuzzing, long runs, chosen by measured duration): `python -m spyrec.tools.check --all`
#   and CI (`.ci/run`) run it as well;
# - the opt-in tier, `@pytest.mark.slow`: tests over about 20 s each (the Granite demos of
#   the README) and the op matrix's bf16 / fp32 rank-family cases (test_ops.py), skipped
#   everywhere, CI included, unless SPYREC_SLOW=1.
RUN_SLOW = os.environ.get("SPYREC_SLOW", "") == "1"

# files whose tests are all in the slow tier (measured with `pytest --durations`, 2026-12-06)
HEAVY_FILES = frozenset({
    "test_special_values.py",
    "test_hf_models.py",
    "test_models.py",
    "test_fuzz.py",
    "test_granite.py",
    "test_cli_models.py",
    "test_mutations.py",
    "test_costmodel.py",
    "test_convnet.py",
    "test_gpt.py",
})


# Files whose tests must run in order on one pytest-xdist worker: test_readme.py's commands
# read what earlier ones wrote in the module's folder. (xdist's own `xdist_group` mark does
# not take effect with pytest 9: it renames the items' node ids, which pytest 9 ignores.)
ORDERED_FILES = ("test_readme.py",)

if importlib.util.find_spec("xdist") is not None:  # an unknown hook would be an error
    def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer | None) -> object:
        """xdist's load scheduling, with each file of ORDERED_FILES as one unit of work."""
        from xdist.scheduler import LoadScopeScheduling

        class _Scheduler(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str:
                path = nodeid.split("::", 1)[0]
                return path if path.endswith(ORDERED_FILES) else nodeid

        return _Scheduler(config, log)


# the markers are registered in pyproject.toml; tryfirst: `heavy` is added before `-m` selects
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="opt-in tier: run with SPYREC_SLOW=1")
    for item in items:
        if item.path.name in HEAVY_FILES:
            item.add_marker(pytest.mark.heavy)
        if "slow" in item.keywords and not RUN_SLOW:
            item.add_marker(skip)


def edited_copy(source: Path, tmp_path: Path, old: str, new: str) -> Path:
    """A copy of the text file `source` as `k<suffix>` in `tmp_path` (error messages name
    it) with `old` (which must occur) replaced by `new`: a hand-written kernel with one
    deliberate change."""
    text = source.read_text()
    assert old in text
    path = tmp_path / f"k{source.suffix}"
    path.write_text(text.replace(old, new))
    return path


def assert_close(exe_or_info, expected, actual, names=None):
    """Hold `actual` to `expected` under `spyrec.verdict.check_outputs` (per-element bounds,
    the aggregate error, NaN/inf classes); the verdict's report is the failure message."""
    from spyrec.verdict import check_outputs

    verdict = check_outputs(expected, actual, exe_or_info, names)
    assert verdict.ok, "\n" + str(verdict)
    return verdict


KTIR_TILE = 1024


def ktir_vector_add(n: int, grid: int = 1, out_n: int | None = None, shift: int = 0,
                    sized: bool = False, tile_attr: str = "", kernel_attr: str = "") -> str:
    """Triton's Spyre-path vector add as KTIR: out = x + y, core c's 1024-lane f32 tile at
    c * 1024 + `shift`; x and y are views of n elements, out of `out_n` (default n); all
    three of the run-time scalar %n when `sized`. `tile_attr` is appended to each access
    tile's attributes (", ktdp.masked"), `kernel_attr` to the function's (", ktdp.masked_tails")."""
    out_n = n if out_n is None else out_n
    tile = KTIR_TILE

    def view(name: str, size: int) -> str:
        sizes, mtype = ("%size", "?") if sized else (str(size), str(size))
        symbol = "[s0]" if sized else ""
        last = "s0 - 1" if sized else str(size - 1)
        return (f"%{name}v = ktdp.construct_memory_view %{name}, sizes: [{sizes}], strides: [1] "
                f"{{coordinate_set = affine_set<(d0){symbol} : (d0 >= 0, -d0 + {last} >= 0)>, "
                f"memory_space = #ktdp.memory_space<global>}} : memref<{mtype}xf32>\n"
                f"  %{name}t = ktdp.construct_access_tile %{name}v[%off] {{access_tile_set = "
                f"affine_set<(d0) : (d0 >= 0, -d0 + {tile - 1} >= 0)>, access_tile_order = "
                f"affine_map<(d0) -> (d0)>{tile_attr}}} : memref<{mtype}xf32> -> "
                f"!ktdp.access_tile<{tile}xindex>")

    return f"""
func.func @add(%x: index, %y: index, %out: index{", %n: i32" if sized else ""})
    attributes {{grid = [{grid}, 1]{kernel_attr}}} {{
  %id = ktdp.get_compute_tile_id : index
  %c1024 = arith.constant {tile} : index
  %shift = arith.constant {shift} : index
  %base = arith.muli %id, %c1024 : index
  %off = arith.addi %base, %shift : index
  {"%size = arith.index_cast %n : i32 to index" if sized else ""}
  {view("x", n)}
  {view("y", n)}
  {view("out", out_n)}
  %a = ktdp.load %xt : !ktdp.access_tile<{tile}xindex> -> tensor<{tile}xf32>
  %b = ktdp.load %yt : !ktdp.access_tile<{tile}xindex> -> tensor<{tile}xf32>
  %s = arith.addf %a, %b : tensor<{tile}xf32>
  ktdp.store %s, %outt : tensor<{tile}xf32>, !ktdp.access_tile<{tile}xindex>
  return
}}
"""
