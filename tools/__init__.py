"""Developer tools: spyre-opt."""
