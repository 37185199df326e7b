# RUN: %python %s | filecheck %s
# spyre-opt must start without importing torch (3.8 s); it reads only the registry.
import sys

from spyrec.registry import DIALECTS, PASSES
from spyrec.tools import spyre_opt  # noqa: F401

for load in DIALECTS.values():
    load()
for load in PASSES.values():
    load()
# CHECK: torch imported: False
print("torch imported:", "torch" in sys.modules)
# CHECK: passes: 12
print("passes:", len(PASSES))
