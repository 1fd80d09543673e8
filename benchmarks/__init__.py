"""Benchmarks beside CPRT, one Django app (folder) each: see inference/benchmarks.py and docs/structure.md."""
