"""The computed-metrics cache: a stored result per key, recomputed when its fingerprint changes.

The scoring pages' numbers come from scoring.metrics / scoring.agreement; the services read the ORM
(mostly through scoring.queries), compute, and keep the result here.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..models import ComputedMetrics


def jsonable(value):
    """numpy scalars and arrays to Python; NaN and infinities to None (PostgreSQL's jsonb refuses NaN)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def cached(key: str, fingerprint: str, compute) -> dict:
    """The stored result for `key` if its fingerprint matches, else compute, store and return it."""
    entry = ComputedMetrics.objects.filter(key=key).only("fingerprint", "data").first()
    if entry is not None and entry.fingerprint == fingerprint:
        return entry.data
    started = time.perf_counter()
    data = jsonable(compute())
    ComputedMetrics.objects.update_or_create(
        key=key, defaults={"fingerprint": fingerprint, "data": data, "seconds": time.perf_counter() - started}
    )
    return data
