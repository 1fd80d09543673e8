"""Per-attribute calibration of an annotate run (spec section 4, the paper's Section 4 analysis).

For each attribute: the model's positive rate minus the reference's positive rate on the same
images, where the reference is the human majority (two or more humans, an even split gives 0) or the
consensus ground truth. Labels are binarised (0.5 -> 0). Positive differences are over-prediction.

Each difference comes with what a reader needs to tell a real gap from noise:
- a 95% percentile bootstrap interval over images (one seeded draw shared by every attribute, as for
  the run metrics; an attribute's resample uses the drawn images that have both labels);
- the exact McNemar test of "the model and the reference say yes equally often": the two labels are
  paired on each image, so only the discordant images count, model-yes/reference-no (b) against
  model-no/reference-yes (c), and p is the two-sided binomial test of b out of b + c at 1/2
  (p = 1 when there is no discordant image).
"""
from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np

from . import resample

PAPER_FINDING = ("The paper (Section 4) finds that models over-predict most attributes by more than 10 "
                 "percentage points relative to humans, and under-predict race/ethnicity.")


N_BOOT = 500
SEED = 20260322
CHUNK = 50  # resamples whose image multiplicities are held at once


def _bootstrap_intervals(diff: np.ndarray, valid: np.ndarray, resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, defined) per attribute of the mean of `diff` over valid images, bootstrapped over images."""
    n, attributes = diff.shape
    samples = np.full((resamples, attributes), np.nan)
    idx = resample.draw(n, resamples, seed)
    for start in range(0, resamples, CHUNK):
        W = resample.multiplicities(idx[start:start + CHUNK], n).astype(float)
        rows = W.shape[0]
        sums, counts = W @ diff, W @ valid
        with np.errstate(invalid="ignore", divide="ignore"):
            samples[start:start + rows] = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    defined = np.isfinite(samples).sum(axis=0)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an attribute no resample defines: NaN, shown as no interval
        lo, hi = np.nanpercentile(samples, [2.5, 97.5], axis=0)
    return lo, hi, defined


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts b and c."""
    from scipy import stats  # imported where used (start-up time)

    return float(stats.binomtest(b, b + c, 0.5).pvalue) if b + c else 1.0


def attribute_calibration(model: np.ndarray, reference: np.ndarray, keys: Sequence[str], levels: Sequence[int],
                          resamples: int = N_BOOT, seed: int = SEED) -> list[dict]:
    """model, reference: (images, attributes) binary with NaN where missing. One row per attribute."""
    model = np.asarray(model, dtype=float)
    reference = np.asarray(reference, dtype=float)
    both = ~np.isnan(model) & ~np.isnan(reference)
    diff = np.where(both, np.nan_to_num(model) - np.nan_to_num(reference), 0.0)
    if model.shape[0] and resamples:
        lo, hi, defined = _bootstrap_intervals(diff, both.astype(float), resamples, seed)
    else:
        lo = hi = np.full(len(keys), np.nan)
        defined = np.zeros(len(keys), dtype=int)
    rows = []
    for j, key in enumerate(keys):
        m = both[:, j]
        n = int(m.sum())
        model_rate = float(model[m, j].mean()) if n else None
        reference_rate = float(reference[m, j].mean()) if n else None
        b = int(((model[:, j] == 1) & (reference[:, j] == 0) & m).sum())
        c = int(((model[:, j] == 0) & (reference[:, j] == 1) & m).sum())
        rows.append({
            "attribute": key, "level": int(levels[j]), "n": n, "model_rate": model_rate, "reference_rate": reference_rate,
            "difference": None if not n else model_rate - reference_rate,
            "lo": float(lo[j]) if n and np.isfinite(lo[j]) else None, "hi": float(hi[j]) if n and np.isfinite(hi[j]) else None,
            "defined": int(defined[j]), "model_only": b, "reference_only": c, "p_value": mcnemar_exact(b, c) if n else None,
        })
    return rows


SORTS = {
    "difference": lambda r: -(r["difference"] if r["difference"] is not None else -9),
    "abs": lambda r: -(abs(r["difference"]) if r["difference"] is not None else -1),
    "attribute": lambda r: r["attribute"],
    "level": lambda r: (r["level"], r["attribute"]),
    "model_rate": lambda r: -(r["model_rate"] if r["model_rate"] is not None else -1),
}


def sort_rows(rows: list[dict], key: str) -> list[dict]:
    return sorted(rows, key=SORTS.get(key, SORTS["difference"]))
