"""Per-core programs: the dataflow scheduler (spyre-schedule-dataflow) with its templates and
ring sharing, the trip-count guards of a symbolic size (spyre-place-guards), and the emitter
of the .spyre container (spyre-emit-spyrecode) (docs/layers/spyrecode.md)."""
