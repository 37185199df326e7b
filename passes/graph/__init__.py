"""Graph passes on the spyre dialect: ATen to Spyre ops (spyre-legalize) and the stick layout
(spyre-stickify), with the helpers that build graph ops (docs/layers/graph.md)."""
