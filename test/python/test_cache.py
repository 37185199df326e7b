"""The on-disk compile cache: hits, misses, damaged entries, interruptions, concurrent use."""

from __future__ import annotations

import subprocess

import pytest
import torch
from conftest import export_mlp, one

import spyrec
from spyrec import cache as cache_module
from spyrec.cache import CompileCache, program_fingerprint
from spyrec.driver import compile_program
from spyrec.target import container


@pytest.fixture
def store(tmp_path) -> CompileCache:
    return CompileCache(tmp_path / "cache")


def test_second_compile_is_a_hit_with_the_same_bytes(store, tmp_path):
    _, x, ep = export_mlp(100, torch.float16)
    first = compile_program(ep, tmp_path / "a.spyre", cache=store)
    second = compile_program(ep, tmp_path / "b.spyre", cache=store)
    assert not first.cached and second.cached
    assert list(second.stage_seconds) == ["cache"]  # no stage of the pipeline ran
    assert (tmp_path / "a.spyre").read_bytes() == (tmp_path / "b.spyre").read_bytes()
    assert len(list(store.entries())) == 1
    assert first.binary is not None and second.binary is not None
    exe = spyrec.Executable(second.binary)
    assert torch.equal(one(exe(x)), one(spyrec.Executable(first.binary)(x)))


def test_a_pt2_file_is_keyed_by_its_bytes(store, tmp_path):
    _, _, ep = export_mlp(64, torch.float32)
    torch.export.save(ep, tmp_path / "m.pt2")
    assert not compile_program(tmp_path / "m.pt2", cache=store).cached
    assert compile_program(tmp_path / "m.pt2", cache=store).cached


def test_weights_shapes_and_options_are_part_of_the_key(store):
    _, _, ep = export_mlp(64, torch.float16, seed=0)
    _, _, other_weights = export_mlp(64, torch.float16, seed=1)
    _, _, other_batch = export_mlp(64, torch.float16, batch=32)
    compile_program(ep, cache=store)
    assert not compile_program(other_weights, cache=store).cached
    assert not compile_program(other_batch, cache=store).cached
    unfused: dict[str, dict[str, object]] = {"spyre-fuse": {"enabled": False}}
    assert not compile_program(ep, cache=store, pass_options=unfused).cached
    assert compile_program(ep, cache=store, pass_options=unfused).cached
    assert len(list(store.entries())) == 4


def test_an_edited_compiler_misses(store, monkeypatch):
    _, _, ep = export_mlp(64, torch.float16)
    compile_program(ep, cache=store)
    monkeypatch.setattr(cache_module, "compiler_fingerprint", lambda: "an edited pass")
    assert not compile_program(ep, cache=store).cached


def test_tied_weights_are_hashed_once_by_name():
    layer = torch.nn.Linear(64, 64)
    tied = torch.nn.Sequential(layer, layer).eval()
    untied = torch.nn.Sequential(layer, torch.nn.Linear(64, 64)).eval()
    untied[1].load_state_dict(layer.state_dict())
    x = torch.randn(8, 64)
    a = torch.export.export(tied, (x,))
    b = torch.export.export(untied, (x,))
    # the same numbers, but one program reads one weight twice and the other two weights
    assert program_fingerprint(a) != program_fingerprint(b)
    assert program_fingerprint(a) == program_fingerprint(torch.export.export(tied, (x,)))


def test_a_damaged_entry_is_recompiled(store):
    _, _, ep = export_mlp(64, torch.float16)
    compile_program(ep, cache=store)
    (entry,) = store.entries()
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))
    again = compile_program(ep, cache=store)
    assert not again.cached
    assert compile_program(ep, cache=store).cached  # the entry was written anew


def test_an_interrupted_compile_leaves_no_entry(store, monkeypatch):
    _, _, ep = export_mlp(64, torch.float16)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(container, "_write_body", interrupted)
        with pytest.raises(KeyboardInterrupt):
            compile_program(ep, cache=store)
    assert not list(store.entries())
    assert not list(store.directory.rglob("*.tmp"))
    compile_program(ep, cache=store)
    assert compile_program(ep, cache=store).cached


@pytest.mark.heavy  # slow tier: about 60 s, measured 2026-12-06
def test_concurrent_cli_compiles_share_the_cache(tmp_path, spyrec_cli, cli_env):
    _, _, ep = export_mlp(128, torch.float16)
    torch.export.save(ep, tmp_path / "m.pt2")
    env = dict(cli_env, SPYREC_CACHE="1", SPYREC_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.Popen([*spyrec_cli, "compile", str(tmp_path / "m.pt2"), "-o",
                              str(tmp_path / f"m{i}.spyre")], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(2)]
    for run in runs:
        _, err = run.communicate(timeout=600)
        assert run.returncode == 0, err
    assert (tmp_path / "m0.spyre").read_bytes() == (tmp_path / "m1.spyre").read_bytes()
    store = CompileCache(tmp_path / "cache")
    (entry,) = store.entries()
    assert entry.read_bytes() == (tmp_path / "m0.spyre").read_bytes()
    res = subprocess.run([*spyrec_cli, "compile", str(tmp_path / "m.pt2"), "-o",
                          str(tmp_path / "m2.spyre")], env=env, text=True, capture_output=True,
                         check=False, timeout=600)
    assert res.returncode == 0 and "from the compile cache" in res.stderr
    info = subprocess.run([*spyrec_cli, "cache", "info"], env=env, text=True,
                          capture_output=True, check=False, timeout=600)
    assert "1 entries" in info.stdout and "cache on" in info.stdout
    cleared = subprocess.run([*spyrec_cli, "cache", "clear"], env=env, text=True,
                             capture_output=True, check=False, timeout=600)
    assert "removed 1 entries" in cleared.stdout
    assert not list(store.entries())
    off = subprocess.run([*spyrec_cli, "compile", str(tmp_path / "m.pt2"), "--no-cache"],
                         env=env, text=True, capture_output=True, check=False, timeout=600)
    assert off.returncode == 0 and not list(store.entries())
