"""spyre-legalize's patterns, one module per family of ATen ops (the pass itself, which
assembles them, is `passes/graph/spyre_legalize.py`)."""
