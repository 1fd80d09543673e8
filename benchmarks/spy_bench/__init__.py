"""SPY-Bench (achernarwang/specify-privacy-yourself) as a run kind: see kind.py, upstream.py, metrics.py."""
from .kind import SpyBenchKind  # noqa: F401
