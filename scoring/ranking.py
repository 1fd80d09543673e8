"""Like-for-like ranking of judge runs on a fixed comparison set (spec section 4, issues 27 and 34): pure
functions over numpy arrays.

- The **comparison set** is fixed by the data, never by the runs [decision]: the ground-truth images of
  the dataset version and/or split the page names, or, when it names neither, of the test split (the
  caller's choice, scoring.services.leaderboard). A filter (strategy, a small sample run) therefore
  never shrinks it to one run's images.
- A run's **coverage** is its valid predictions on the comparison set / the size of that set, so a run
  over a 10-image sample covers 10 of 500 images, not 100%. Runs below the floor are listed "not
  ranked" with their coverage; they do not shrink the common set.
- The ranked runs are measured on the **common set**: the comparison images every ranked run answered.
  Nothing is ranked when the common set has fewer than `MIN_COMMON` images [decision: below that
  the intervals and the rank distribution say nothing]. A run whose sort metric is undefined on the
  common set (constant predictions for a correlation, no pair of levels for a pairwise accuracy) is
  listed "not ranked" with that reason, and the common set is taken again without it; so with
  every metric undefined nothing is ranked.
- Every metric carries a bootstrap 95% interval from resamples of the common images shared by all
  ranked runs, and the same resamples give each run's **rank distribution** (P(rank 1), median rank
  and its 95% range) under the metric the table is sorted by.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import resample
from .engine import Bounds
from .metrics import N_BOOT, SEED, THRESHOLDS, _with_interval, point_and_intervals, predicted_levels

COVERAGE_FLOOR = 0.95
MIN_COMMON = 10  # fewer common images: nothing is ranked
RULES = f"fixed-set, min-common {MIN_COMMON}, undefined sort unranked"  # in the cache's fingerprint: a stored ranking made under other rules is stale
LOWER_IS_BETTER = {"mae", "bias"}  # bias: by its absolute value


@dataclass
class RunPredictions:
    image_id: np.ndarray  # images with ground truth that the run has a result for
    gt: np.ndarray
    gt_level: np.ndarray
    pred: np.ndarray
    valid: np.ndarray  # outcome "ok" with a score

    @property
    def coverage(self) -> float | None:
        return float(self.valid.mean()) if self.valid.size else None

    def answered(self) -> np.ndarray:
        return np.unique(self.image_id[self.valid])


def coverage_of(run: RunPredictions, images: np.ndarray) -> float | None:
    """Valid predictions on `images` / their number."""
    return float(np.isin(images, run.answered()).sum() / images.size) if images.size else None


def _better_first(metric: str, values: np.ndarray) -> np.ndarray:
    """Values turned so that smaller is better, NaN (undefined) last."""
    v = np.abs(values) if metric == "bias" else values
    v = v if metric in LOWER_IS_BETTER else -v
    return np.where(np.isfinite(v), v, np.inf)


def rank_stability(samples: dict[int, np.ndarray], metric: str) -> dict[int, dict]:
    """Per run: the distribution of its rank over the shared resamples (1 = best; ties share the better rank)."""
    ids = sorted(samples)
    if not ids or not len(samples[ids[0]]):
        return {rid: {"p_first": None, "median_rank": None, "rank_lo": None, "rank_hi": None, "resamples": 0} for rid in ids}
    table = np.stack([_better_first(metric, np.asarray(samples[rid], dtype=float)) for rid in ids])  # (runs, resamples)
    ranks = (table[None, :, :] < table[:, None, :]).sum(axis=1) + 1  # runs strictly better, plus one
    out = {}
    for i, rid in enumerate(ids):
        r = ranks[i]
        out[rid] = {"p_first": float((r == 1).mean()), "median_rank": float(np.median(r)),
                    "rank_lo": int(np.percentile(r, 2.5, method="lower")), "rank_hi": int(np.percentile(r, 97.5, method="higher")),
                    "resamples": int(r.size)}
    return out


def _aligned(run: RunPredictions, common: np.ndarray):
    """The run's (gt, pred, gt level) on the common images, the same image at the same index for every run."""
    keep = run.valid & np.isin(run.image_id, common)
    order = np.argsort(run.image_id[keep], kind="stable")
    return run.gt[keep][order], run.pred[keep][order], run.gt_level[keep][order]


def _common(images: np.ndarray, runs: dict[int, RunPredictions], ids) -> np.ndarray:
    common = images
    for rid in ids:
        common = np.intersect1d(common, runs[rid].answered(), assume_unique=True)
    return common


def comparison_ranking(runs: dict[int, RunPredictions], bounds: Bounds, floor: float = COVERAGE_FLOOR, *,
                       comparison: np.ndarray, origin: dict | None = None, sort: str = "pearson", min_common: int = MIN_COMMON,
                       n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    """{"floor", "comparison_size", "comparison_from", "common_size", "min_common", "ranked": {run: {...}},
    "unranked": {run: {..., "reason"}}} on the fixed `comparison` set (image ids)."""
    images = np.unique(np.asarray(comparison, dtype=np.int64))
    coverage = {rid: coverage_of(r, images) for rid, r in runs.items()}
    reasons: dict[int, str] = {rid: "coverage" for rid, c in coverage.items() if c is None or c < floor}
    candidates = sorted(rid for rid in runs if rid not in reasons)
    too_small = None  # the common set's size when it was below the minimum
    while True:
        common = _common(images, runs, candidates)
        if candidates and common.size < min_common:
            reasons.update({rid: "common_set" for rid in candidates})
            candidates, too_small = [], int(common.size)
        points = {rid: point_and_intervals(*_aligned(runs[rid], common), bounds, None) for rid in candidates}
        undefined = [rid for rid in candidates if points[rid][sort]["value"] is None]
        if not undefined:
            break
        reasons.update({rid: "undefined" for rid in undefined})
        candidates = [rid for rid in candidates if rid not in undefined]
    unranked = {rid: {"coverage": coverage[rid], "answered": int(np.isin(images, runs[rid].answered()).sum()),
                      "own_coverage": runs[rid].coverage, "reason": reasons[rid]} for rid in sorted(reasons)}
    idx = resample.draw(common.size, n_boot, seed) if candidates and common.size >= 2 and n_boot else None
    ranked, sort_samples = {}, {}
    for rid in candidates:
        boot = None
        if idx is not None:
            cells = resample.Cells(*_aligned(runs[rid], common))
            boot = resample.metric_resamples(cells, idx, predicted_levels(cells.pred, bounds), THRESHOLDS)
            sort_samples[rid] = boot[sort]
        metrics = {name: _with_interval(m["value"], None if boot is None else boot[name]) for name, m in points[rid].items()}
        ranked[rid] = {"metrics": metrics, "coverage": coverage[rid]}
    stability = rank_stability(sort_samples, sort) if sort_samples else {}
    for rid in ranked:
        ranked[rid]["rank_stability"] = stability.get(rid)
    return {"floor": floor, "comparison_size": int(images.size), "comparison_from": origin or {"kind": "stated", "run": None},
            "common_size": int(common.size) if candidates else (too_small or 0), "min_common": min_common,
            "resamples": n_boot if idx is not None else 0, "sort": sort, "ranked": ranked, "unranked": unranked}
