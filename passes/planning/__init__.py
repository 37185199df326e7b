"""Kernel planning on the spyre dialect: fusion into kernels (spyre-fuse), the core split
(spyre-partition-cores) and per-core tiling (spyre-tile), over one kernel analysis
(docs/layers/graph.md)."""
