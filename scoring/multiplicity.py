"""Multiple comparisons: Holm's step-down (family-wise error) and Benjamini-Hochberg (false discovery
rate) adjusted p-values over one family of tests; pure functions.

A family is every p-value one table prints for one question (the 22 attributes of a calibration
table, the metrics of a paired comparison). Missing p-values (None) are left out of the family and
stay None. A resampling p-value of 0 means "below 1/N" for N resamples; it enters the adjustment as
1/N, its upper bound, so the adjusted value is conservative.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

METHODS = {"holm": "Holm", "bh": "Benjamini-Hochberg"}


def holm(p: np.ndarray) -> np.ndarray:
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    stepped = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def adjust(p_values: Sequence[float | None], method: str = "holm", floor: float = 0.0) -> list[float | None]:
    """Adjusted p-values in the input order; None stays None. `floor`: the resampling bound 1/N (0 for exact tests)."""
    if method not in METHODS:
        raise ValueError(f"Unknown adjustment {method!r}: use one of {', '.join(METHODS)}.")
    present = [i for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = [None] * len(p_values)
    if not present:
        return out
    p = np.array([max(float(p_values[i]), floor) for i in present])
    adjusted = holm(p) if method == "holm" else benjamini_hochberg(p)
    for i, value in zip(present, adjusted):
        out[i] = float(value)
    return out


def resampling_p(p: float | None, resamples: int) -> float | str | None:
    """A resampling p-value as printed: '< 1/N' when no resample reached the observed value, else the value."""
    if p is None:
        return None
    return f"< 1/{resamples}" if p == 0 else p
