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
        capture_output=True, text=True, env=cli_env, check=False, timeout=300)
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
                         check=False, timeout=300)
    assert res.returncode != 0 and message in res.stderr and "Traceback" not in res.stderr


# Arrays that do not fit the kernel's view of them (vector_add.mlir views a, b and c as
# memref<96x64xf16>): refused before the kernel runs, naming the argument, what the kernel
# needs and what was given, never read as if they fitted (issue 18).
WRONG_ARRAYS = [
    (np.ones((96, 64), np.float32),
     ("@add: argument %a is 96x64 float32, but the kernel reads it through view %va "
     "(memref<96x64xf16>) as f16: pass float16 values")),
    (np.ones((96, 64), np.int64),
     ("@add: argument %a is 96x64 int64, but the kernel reads it through view %va "
     "(memref<96x64xf16>) as f16: pass float16 values")),
    (np.ones((8, 8), np.float16),
     ("@add: argument %a is 8x8 float16, but the kernel views it through view %va "
     "(memref<96x64xf16>): pass an array of shape 96x64 and dtype float16")),
    (np.ones((64, 96), np.float16), "pass an array of shape 96x64 and dtype float16"),
    (np.ones(96 * 64, np.float16), "argument %a is 6144 float16, but"),
]


@pytest.mark.parametrize("array,message", WRONG_ARRAYS)
def test_execute_refuses_arrays_that_do_not_fit_their_views(array, message):
    ok = np.zeros((96, 64), np.float16)
    with pytest.raises(spyrec.ktir.KtirError) as info:
        spyrec.ktir.execute(KERNELS / "vector_add.mlir", "add", a=array, b=ok, c=ok)
    assert message in str(info.value)


@pytest.mark.parametrize("array,message", WRONG_ARRAYS[:3])
def test_run_cli_refuses_arrays_that_do_not_fit_their_views(tmp_path, spyrec_cli, cli_env,
                                                           array, message):
    np.save(tmp_path / "a.npy", array)
    res = subprocess.run(
        [*spyrec_cli, "run", str(KERNELS / "vector_add.mlir"), "--function", "add",
         f"--arg=a={tmp_path / 'a.npy'}", "--arg=b=rand:96x64xfloat16",
         "--arg=c=rand:96x64xfloat16"], capture_output=True, text=True, env=cli_env, check=False,
        timeout=300)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert res.stderr.startswith(f"error: {message}")
    assert "bound by" not in res.stdout  # nothing ran
