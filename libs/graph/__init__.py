"""Dependency graphs, deltas and traversals: pure, no I/O."""
