"""KTIR kernels from Python and from the command line, through the reference interpreter."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import spyrec.ktir

KERNELS = Path(__file__).parent / "ktir" / "kernels"


def test_execute_vector_add():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((96, 64)).astype(np.float16) for _ in range(2))
    out = spyrec.ktir.execute(KERNELS / "vector_add.mlir", "add", a=a, b=b,
                              c=np.zeros((96, 64), np.float16))
    np.testing.assert_array_equal(out["c"], a + b)  # f16 + f16 rounds the same on both sides


def test_run_cli_saves_outputs(tmp_path, spyrec_cli, cli_env):
    a = np.arange(96 * 64, dtype=np.float16).reshape(96, 64) / 1024
    np.save(tmp_path / "a.npy", a)
    res = subprocess.run(
        [*spyrec_cli, "run", str(KERNELS / "vector_add.mlir"), "--function", "add",
         f"--arg=a={tmp_path / 'a.npy'}", "--arg=b=rand:96x64xfloat16",
         "--arg=c=rand:96x64xfloat16", "--save-outputs", str(tmp_path / "out")],
        capture_output=True, text=True, env=cli_env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "bound by" in res.stdout
    c = np.load(tmp_path / "out" / "c.npy")
    b = np.load(tmp_path / "out" / "b.npy")
    np.testing.assert_array_equal(c, a + b)


@pytest.mark.parametrize("args,message", [
    (["--arg=a=rand:96x64"], "expected rand:SHAPExDTYPE"),
    (["--arg", "nonsense"], "expected NAME=FILE.npy"),
    (["--arg=a=missing.npy"], "missing.npy does not exist"),
])
def test_run_cli_bad_args(spyrec_cli, cli_env, args, message):
    res = subprocess.run([*spyrec_cli, "run", str(KERNELS / "vector_add.mlir"), "--function",
                          "add", *args], capture_output=True, text=True, env=cli_env,
                         timeout=300)
    assert res.returncode != 0 and message in res.stderr and "Traceback" not in res.stderr
