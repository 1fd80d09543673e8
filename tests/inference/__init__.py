"""Tests of the inference app: providers (against tests/fakes), runs, run pages, a real worker."""
