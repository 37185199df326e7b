"""lit configuration for spyrec: `spyre-opt` and `filecheck` come from the running venv."""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import lit.formats
import lit.util
from lit.TestingConfig import TestingConfig

config: TestingConfig = globals()["config"]  # lit runs this file with `config` defined

config.name = "spyrec"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = {".mlir", ".py"}
config.excludes = {"lit.cfg.py", "Inputs"}
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.test_source_root

config.substitutions.append((r"\bFileCheck\b", "filecheck"))
config.substitutions.append(("%python", sys.executable))

# The venv's bin directory holds spyre-opt and filecheck; tests need not activate it.
config.environment["PATH"] = os.pathsep.join(
    [os.path.dirname(sys.executable), config.environment.get("PATH", "")]
)
if "HOME" in os.environ:
    config.environment["HOME"] = os.environ["HOME"]


def _start_fork_server() -> None:
    """Run `spyrec` and `spyre-opt` through spyrec's fork server (spyrec.tools.forkserver,
    design note 99): it imports torch, xDSL and spyrec once, and each command forks from
    it instead of spending ~4 s of CPU on imports. Its clients go first on PATH; they run
    the installed commands themselves if the server is gone. SPYREC_LIT_FORKSERVER=0 runs
    the installed commands directly."""
    from spyrec.tools import forkserver

    workdir = Path(tempfile.mkdtemp(prefix="spyrec-lit-"))
    server, clients = forkserver.launch(workdir)

    def stop() -> None:
        if server is not None:
            server.terminate()
            server.wait()
        shutil.rmtree(workdir, ignore_errors=True)

    atexit.register(stop)
    if clients is not None:  # else the installed commands
        config.environment["PATH"] = os.pathsep.join([str(clients),
                                                      config.environment["PATH"]])


_start_fork_server()

# Upstream MLIR as an oracle (the optional `mlir` extra, torch-mlir's torch-mlir-opt): tests
# that need it say `REQUIRES: upstream-mlir` and are UNSUPPORTED where it is not installed,
# unless SPYREC_UPSTREAM_MLIR=required (CI: .ci/run), where its absence is an error.
if lit.util.which("torch-mlir-opt", config.environment["PATH"]):
    config.available_features.add("upstream-mlir")
elif os.environ.get("SPYREC_UPSTREAM_MLIR") == "required":
    globals()["lit_config"].fatal("SPYREC_UPSTREAM_MLIR=required but torch-mlir-opt is not on "
                                  "PATH: pip install --no-deps torch-mlir==20261001 (the `mlir` "
                                  "extra)")

# The reference KTIR dialect's `ktir-opt` (torch-spyre/ktir-mlir-frontend), if on PATH:
# `REQUIRES: ktir-opt` tests run it on emitted kernels. Its releases before the
# `#ktdp.memory_space<global | ct_local, ct_id = N>` spelling read only the older
# `#ktdp.spyre_memory_space<HBM | LX, core = N>` (docs/ktir.md §1), so `%ktir-spelling` is a
# filter mapping the current spelling to the one this ktir-opt reads (`cat` if it reads both).
KTIR_OPT = lit.util.which("ktir-opt", config.environment["PATH"])
if KTIR_OPT:
    config.available_features.add("ktir-opt")
    probe = ("func.func @f(%a: index) {\n  %v = ktdp.construct_memory_view %a, sizes: [1], "
             "strides: [1] {coordinate_set = affine_set<(d0) : (d0 == 0)>, memory_space = "
             "#ktdp.memory_space<global>} : memref<1xf16>\n  return\n}\n")
    current = subprocess.run([KTIR_OPT], input=probe, capture_output=True, text=True,
                             check=False).returncode == 0
    config.substitutions.append(("%ktir-spelling", "cat" if current else (
        "sed -E -e 's/#ktdp[.]memory_space<global>/#ktdp.spyre_memory_space<HBM>/g' "
        "-e 's/#ktdp[.]memory_space<ct_local, ct_id = ([0-9]+)>/"
        "#ktdp.spyre_memory_space<LX, core = \\1>/g'")))
