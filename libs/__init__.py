"""Ember's shared libraries: the pure core (template, graph) and the thin I/O edges."""
