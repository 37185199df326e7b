"""Dialects of spyrec: spyre (graph), ktdp (KTIR), spyrecode (scheduled programs)."""
