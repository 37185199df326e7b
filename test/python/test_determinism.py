"""The same program and options give a byte-identical .spyre, in one process or in two."""

from __future__ import annotations

import contextlib
import os
import subprocess

import torch
from conftest import export_mlp

import spyrec


def test_same_process_byte_identical(tmp_path):
    _, _, ep = export_mlp(100, torch.float16)
    spyrec.compile(ep, output=tmp_path / "a.spyre")
    spyrec.compile(ep, output=tmp_path / "b.spyre")
    assert (tmp_path / "a.spyre").read_bytes() == (tmp_path / "b.spyre").read_bytes()


def test_separate_processes_byte_identical(tmp_path, spyrec_cli, cli_env):
    _, _, ep = export_mlp(256, torch.float32)
    model = tmp_path / "m.pt2"
    torch.export.save(ep, model)
    outputs = []
    for seed in ("1", "2"):  # different hash seeds: no dict/set order may leak into the output
        out = tmp_path / f"m{seed}.spyre"
        env = dict(cli_env, PYTHONHASHSEED=seed)
        res = subprocess.run([*spyrec_cli, "compile", str(model), "-o", str(out)],
                             capture_output=True, text=True, env=env, check=False, timeout=600)
        assert res.returncode == 0, res.stderr
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


def test_interrupted_write_leaves_no_file(tmp_path, monkeypatch):
    from spyrec.target import container

    _, _, ep = export_mlp(100, torch.float16)
    target = tmp_path / "m.spyre"

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(container, "_write_body", boom)
    with contextlib.suppress(KeyboardInterrupt):
        spyrec.compile(ep, output=target)
    assert not target.exists()
    assert not [p for p in os.listdir(tmp_path) if p != "m.spyre"]  # no temporary left behind


def test_templates_built_in_parallel_processes_give_the_same_bytes(tmp_path, monkeypatch):
    """spyre-schedule-dataflow builds the distinct kernels' templates in forked processes
    (`jobs`); the `.spyre` is the one a single process writes, ring-shared kernels and
    kernels repeated over layers included."""
    from spyrec.demo import DemoDecoder
    from spyrec.passes.spyrecode import spyre_schedule_dataflow

    used: list[int] = []
    prebuild = spyre_schedule_dataflow.prebuild
    monkeypatch.setattr(spyre_schedule_dataflow, "prebuild",
                        lambda *a, **k: used.append(prebuild(*a, **k)) or used[-1])
    torch.manual_seed(0)
    model = DemoDecoder(256, layers=2).half().eval()
    ep = torch.export.export(model, (torch.randn(2, 32, 256).half(),))
    for jobs in (1, 2):
        options = {"spyre-schedule-dataflow": {"jobs": jobs}}
        spyrec.compile(ep, output=tmp_path / f"{jobs}.spyre", pass_options=options,
                       cache=False)
    assert used == [1, 2]  # one process, then two
    assert (tmp_path / "1.spyre").read_bytes() == (tmp_path / "2.spyre").read_bytes()
