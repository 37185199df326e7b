"""lit configuration for spyrec: `spyre-opt` and `filecheck` come from the running venv."""

import os
import sys

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

# Upstream MLIR as an oracle (the optional `mlir` extra, torch-mlir's torch-mlir-opt): tests
# that need it say `REQUIRES: upstream-mlir` and are UNSUPPORTED where it is not installed.
if lit.util.which("torch-mlir-opt", config.environment["PATH"]):
    config.available_features.add("upstream-mlir")
