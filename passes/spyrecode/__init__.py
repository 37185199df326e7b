"""Per-core programs: the dataflow scheduler (spyre-schedule-dataflow) with its templates and
ring sharing, and the emitter of the .spyre container (spyre-emit-spyrecode)
(docs/layers/spyrecode.md)."""
