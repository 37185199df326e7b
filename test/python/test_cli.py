"""The command line as a user meets it: compile, run --check, inspect, demo, and errors."""

from __future__ import annotations

import subprocess

import pytest
import torch
from conftest import export_mlp


def _run(cli, env, *args, cwd=None):
    return subprocess.run([*cli, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          check=False, timeout=600)


def _save_mlp(directory, features, dtype):
    path = directory / f"mlp_{features}_{str(dtype).removeprefix('torch.')}.pt2"
    _, _, ep = export_mlp(features, dtype)
    torch.export.save(ep, path)
    return path


@pytest.fixture(scope="module")
def mlp_pt2(tmp_path_factory):
    return _save_mlp(tmp_path_factory.mktemp("cli"), 100, torch.float16)


@pytest.mark.heavy  # slow tier: 25-33 s each, measured 2026-12-06
@pytest.mark.parametrize("features,dtype", [(100, torch.float16), (256, torch.float32)],
                         ids=["100-fp16", "256-fp32"])
def test_compile_run_check_inspect(spyrec_cli, cli_env, tmp_path, features, dtype):
    mlp_pt2 = _save_mlp(tmp_path, features, dtype)
    out = mlp_pt2.with_suffix(".spyre")
    res = _run(spyrec_cli, cli_env, "compile", str(mlp_pt2), "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert out.exists() and "wrote" in res.stderr
    for stage in ("frontend", "graph", "ktir", "spyrecode", "emit"):
        assert stage in res.stderr
    res = _run(spyrec_cli, cli_env, "run", str(out), "--check", str(mlp_pt2))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "emulated time" in res.stdout and "worst element" in res.stdout
    assert "ok" in res.stdout and "FAILED" not in res.stdout
    res = _run(spyrec_cli, cli_env, "inspect", str(out))
    assert res.returncode == 0, res.stderr
    assert "job preparation plan" in res.stdout and "pt.matmul" in res.stdout


@pytest.mark.parametrize("stage,marker", [("graph", "spyre.kernel"),
                                          ("ktir", "ktdp.construct_access_tile"),
                                          ("spyrecode", "spyrecode.pt_matmul")])
def test_emit_prints_the_stage(spyrec_cli, cli_env, mlp_pt2, stage, marker):
    res = _run(spyrec_cli, cli_env, "compile", str(mlp_pt2), f"--emit={stage}")
    assert res.returncode == 0, res.stderr
    assert marker in res.stdout


def test_print_ir_after_all_names_every_pass(spyrec_cli, cli_env, mlp_pt2, tmp_path):
    res = _run(spyrec_cli, cli_env, "compile", str(mlp_pt2), "-o", str(tmp_path / "m.spyre"),
               "--print-ir-after-all")
    assert res.returncode == 0, res.stderr
    from spyrec.pipelines import DEFAULT_PIPELINE

    for name in (p for stage in DEFAULT_PIPELINE for p in stage.passes):
        assert f"IR after {name} " in res.stdout


def test_missing_file(spyrec_cli, cli_env, tmp_path):
    res = _run(spyrec_cli, cli_env, "compile", str(tmp_path / "nope.pt2"))
    assert res.returncode == 1
    assert "nope.pt2: no such file" in res.stderr and "Traceback" not in res.stderr


def test_not_a_pt2(spyrec_cli, cli_env, tmp_path):
    bogus = tmp_path / "bogus.pt2"
    bogus.write_text("this is not a torch.export archive")
    res = _run(spyrec_cli, cli_env, "compile", str(bogus))
    assert res.returncode == 1
    assert "bogus.pt2: not a torch.export program" in res.stderr
    assert "Traceback" not in res.stderr
    assert not bogus.with_suffix(".spyre").exists()


def _rewritten(src, dst, member_suffix, change):
    """A copy of the .pt2 `src` with one member's bytes changed by `change`."""
    import zipfile

    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            zout.writestr(info, change(data) if info.filename.endswith(member_suffix) else data)
    return dst


def test_truncated_corrupt_and_foreign_version_pt2(tmp_path, mlp_pt2):
    """Each broken .pt2 gets a message that says what is wrong with it, before torch reads
    it (torch's own message for a newer schema only says to look at its log)."""
    import json

    from spyrec.diagnostics import CompileError
    from spyrec.frontend.importer import load_program

    data = mlp_pt2.read_bytes()
    truncated = tmp_path / "truncated.pt2"
    truncated.write_bytes(data[:len(data) // 2])
    with pytest.raises(CompileError, match=r"truncated.pt2: a truncated or corrupt .pt2"):
        load_program(truncated)
    flipped = bytearray(data)
    at = data.index(b'"graph_module"')
    flipped[at + 30:at + 40] = b"@" * 10
    corrupt = tmp_path / "corrupt.pt2"
    corrupt.write_bytes(bytes(flipped))
    with pytest.raises(CompileError, match=r"corrupt.pt2: a corrupt .pt2: member "
                                           r"'.*models/model.json' fails its checksum"):
        load_program(corrupt)

    def newer(raw):
        meta = json.loads(raw)
        meta["schema_version"] = {"major": 99, "minor": 1}
        meta["torch_version"] = "3.1.0"
        return json.dumps(meta).encode()

    foreign = _rewritten(mlp_pt2, tmp_path / "foreign.pt2", "models/model.json", newer)
    with pytest.raises(CompileError, match=r"foreign.pt2: written by torch 3.1.0 with export "
                                           r"schema 99.1; this spyrec runs torch 2.13.0.*"
                                           r"Re-export the model with torch 2.13.0"):
        load_program(foreign)


def test_not_a_spyre(spyrec_cli, cli_env, tmp_path):
    bogus = tmp_path / "bogus.spyre"
    bogus.write_bytes(b"\x00" * 64)
    res = _run(spyrec_cli, cli_env, "run", str(bogus))
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "bogus.spyre" in res.stderr


class _Unsupported(torch.nn.Module):
    def forward(self, x):
        y = torch.cumprod(x, dim=1)
        z = torch.sort(y, dim=1).values
        return torch.cummax(z, dim=1).values


def test_unsupported_ops_are_listed_together(spyrec_cli, cli_env, tmp_path):
    path = tmp_path / "unsupported.pt2"
    torch.export.save(torch.export.export(_Unsupported(), (torch.randn(4, 64),)), path)
    res = _run(spyrec_cli, cli_env, "compile", str(path))
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "3 op(s) have no Spyre lowering yet" in res.stderr
    for node in ("cumprod", "sort", "cummax"):
        assert f"(node {node}" in res.stderr
    assert "test_cli.py:" in res.stderr  # the model source line of each node


def test_wrong_input_shape_and_dtype(tmp_path):
    import spyrec
    from spyrec.diagnostics import RunError

    _, x, ep = export_mlp(100, torch.float16)
    exe = spyrec.compile(ep)
    with pytest.raises(RunError, match=r"input 'x': expected shape \[64, 100\] torch.float16, "
                                       r"got \[32, 100\]"):
        exe(torch.randn(32, 100, dtype=torch.float16))
    with pytest.raises(RunError, match=r"got \[64, 100\] torch.float32"):
        exe(torch.randn(64, 100))
    with pytest.raises(RunError, match="takes 1 input"):
        exe(x, x)


def test_demo(spyrec_cli, cli_env):
    res = _run(spyrec_cli, cli_env, "demo")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "match" in res.stdout and "roofline ratio" in res.stdout


@pytest.mark.heavy  # slow tier: 25-33 s each, measured 2026-12-06
def test_profile_trace_and_json(spyrec_cli, cli_env, mlp_pt2, tmp_path):
    import json

    binary = tmp_path / "m.spyre"
    assert _run(spyrec_cli, cli_env, "compile", str(mlp_pt2), "-o", str(binary)).returncode == 0
    trace = tmp_path / "trace.json"
    res = _run(spyrec_cli, cli_env, "profile", str(binary), "--trace", str(trace))
    assert res.returncode == 0, res.stderr
    assert "roofline" in res.stdout and "utilisation" in res.stdout and "k0" in res.stdout
    events = json.loads(trace.read_text())["traceEvents"]
    slices = [e for e in events if e.get("ph") == "X"]
    assert slices and all(e["dur"] >= 0 for e in slices)
    assert {e["name"] for e in slices} >= {"dma.load", "pt.matmul", "dma.store"}
    counters = [e for e in events if e.get("ph") == "C" and e["name"] == "LX bytes"]
    assert max(e["args"]["footprint"] for e in counters) > 0
    full = json.loads(_run(spyrec_cli, cli_env, "profile", str(binary), "--json").stdout)
    timing = json.loads(_run(spyrec_cli, cli_env, "profile", str(binary), "--json",
                             "--mode", "timing").stdout)
    for key in ("emulated_us", "roofline_us", "flops", "offchip_bytes", "min_offchip_bytes",
                "lx_peak_bytes", "kernels"):
        assert key in full
    # timing-only mode skips the data but not a single cycle
    assert timing["emulated_us"] == full["emulated_us"]


def test_explain_prints_the_ledger(spyrec_cli, cli_env, mlp_pt2):
    res = _run(spyrec_cli, cli_env, "explain", str(mlp_pt2))
    assert res.returncode == 0, res.stderr
    assert "kernel k0: 2 op(s) (linear, relu)" in res.stdout
    assert "cores: " in res.stdout and "tiles: " in res.stdout and "alternatives:" in res.stdout


class _SwiGLU(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate = torch.nn.Linear(256, 1024, bias=False)
        self.up = torch.nn.Linear(256, 1024, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(self.gate(x)) * self.up(x)


def test_explain_prints_the_fusion_decisions(spyrec_cli, cli_env, tmp_path):
    """spyre-fuse's cost-model decisions (design note 50): the SwiGLU product joins the up
    matmul, with both predicted costs."""
    model = _SwiGLU().to(torch.float16).eval()
    path = tmp_path / "swiglu.pt2"
    torch.export.save(torch.export.export(model, (torch.randn(1, 64, 256, dtype=torch.float16),)),
                      path)
    res = _run(spyrec_cli, cli_env, "explain", str(path))
    assert res.returncode == 0, res.stderr
    assert "kernel k1: " in res.stdout and "(linear_1, mul)" in res.stdout
    assert "  fusion: joined mul: " in res.stdout and "predicted cycles fused against" in res.stdout


@pytest.mark.heavy  # slow tier: 25-33 s each, measured 2026-12-06
def test_explain_with_a_forced_tail(spyrec_cli, cli_env, tmp_path):
    """`--tail N` forces the last column tile of K-sliced A blocks into N row pieces (design
    note 57), and the ledger says so; `--tail 1` keeps every tile whole."""
    model = torch.nn.Linear(1000, 200).to(torch.float16).eval()
    path = tmp_path / "linear.pt2"
    torch.export.save(torch.export.export(model, (torch.randn(96, 1000, dtype=torch.float16),)),
                      path)
    res = _run(spyrec_cli, cli_env, "explain", str(path), "--resident", "a", "--tail", "2")
    assert res.returncode == 0, res.stderr
    assert "the last column tile in 2 row pieces" in res.stdout
    res = _run(spyrec_cli, cli_env, "explain", str(path), "--resident", "a", "--tail", "1")
    assert res.returncode == 0, res.stderr
    assert "row pieces" not in res.stdout
