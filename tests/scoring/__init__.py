"""Tests of the scoring app: engine, agreement, metrics, pages, CPRT-Bench import, exports."""
