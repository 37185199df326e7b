"""lit configuration for spyrec: `spyre-opt` and `filecheck` come from the running venv."""

import os
import sys

import lit.formats

config.name = "spyrec"  # noqa: F821 (`config` is injected by lit)
config.test_format = lit.formats.ShTest(execute_external=False)  # noqa: F821
config.suffixes = [".mlir", ".py"]  # noqa: F821
config.excludes = ["lit.cfg.py", "Inputs"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
config.test_exec_root = config.test_source_root  # noqa: F821

config.substitutions.append((r"\bFileCheck\b", "filecheck"))  # noqa: F821
config.substitutions.append(("%python", sys.executable))  # noqa: F821

# The venv's bin directory holds spyre-opt and filecheck; tests need not activate it.
config.environment["PATH"] = os.pathsep.join(  # noqa: F821
    [os.path.dirname(sys.executable), config.environment.get("PATH", "")]  # noqa: F821
)
if "HOME" in os.environ:
    config.environment["HOME"] = os.environ["HOME"]  # noqa: F821
