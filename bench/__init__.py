"""Benchmarks run by hand (not tests): ``python -m bench.engine --help``."""
