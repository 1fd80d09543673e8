"""Like-for-like ranking of judge runs on a fixed comparison set (spec section 4, issue 27): pure
functions over numpy arrays.

- The **comparison set** is stated: the ground-truth images of a dataset version and/or split when the
  page names one; otherwise [decision] the largest of the runs' own image sets (the ground-truth images
  each run was given) that at least `min_runs` runs cover at the floor (fewer runs only when no set has
  that many), ties going to the set more runs cover.
- A run's **coverage** is its valid predictions on the comparison set / the size of that set, so a run
  over a 10-image sample covers 10 of 500 images, not 100%. Runs below the floor are listed with their
  coverage and are not ranked; they do not shrink the common set.
- The ranked runs are measured on the **common set**: the comparison images every ranked run answered.
  Every metric carries a bootstrap 95% interval from resamples of the common images shared by all
  ranked runs, and the same resamples give each run's **rank distribution** (P(rank 1), median rank and
  its 95% range) under the metric the table is sorted by.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import resample
from .engine import Bounds
from .metrics import N_BOOT, SEED, THRESHOLDS, point_and_intervals, predicted_levels

COVERAGE_FLOOR = 0.95
MIN_RUNS = 2
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


def default_comparison_set(runs: dict[int, RunPredictions], floor: float, min_runs: int = MIN_RUNS) -> tuple[np.ndarray, int | None]:
    """(images, the run whose image set it is): the largest run image set covered at the floor by the most runs."""
    best: tuple | None = None
    for rid in sorted(runs):
        images = np.unique(runs[rid].image_id)
        if not images.size:
            continue
        covering = sum(1 for r in runs.values() if (coverage_of(r, images) or 0) >= floor)
        key = (covering >= min(min_runs, len(runs)), images.size, covering)
        if best is None or key > best[0]:
            best = (key, images, rid)
    return (np.array([], dtype=np.int64), None) if best is None else (best[1], best[2])


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


def comparison_ranking(runs: dict[int, RunPredictions], bounds: Bounds, floor: float = COVERAGE_FLOOR, *,
                       comparison: np.ndarray | None = None, sort: str = "pearson", min_runs: int = MIN_RUNS,
                       n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    """{"floor", "comparison_size", "comparison_from", "common_size", "ranked": {run: {...}}, "unranked": {run: {...}}}."""
    if comparison is None:
        images, from_run = default_comparison_set(runs, floor, min_runs)
        origin = {"kind": "default", "run": from_run}
    else:
        images, origin = np.unique(np.asarray(comparison, dtype=np.int64)), {"kind": "stated", "run": None}
    coverage = {rid: coverage_of(r, images) for rid, r in runs.items()}
    ranked_ids = sorted(rid for rid, c in coverage.items() if c is not None and c >= floor)
    unranked = {rid: {"coverage": coverage[rid], "answered": int(np.isin(images, runs[rid].answered()).sum()),
                      "own_coverage": runs[rid].coverage} for rid in runs if rid not in ranked_ids}
    common = images
    for rid in ranked_ids:
        common = np.intersect1d(common, runs[rid].answered(), assume_unique=True)
    idx = resample.draw(common.size, n_boot, seed) if common.size >= 2 and n_boot else None
    ranked, sort_samples = {}, {}
    for rid in ranked_ids:
        r = runs[rid]
        keep = r.valid & np.isin(r.image_id, common)
        order = np.argsort(r.image_id[keep], kind="stable")  # the same image at the same index for every run
        g, p, lv = r.gt[keep][order], r.pred[keep][order], r.gt_level[keep][order]
        boot = None
        if idx is not None:
            cells = resample.Cells(g, p, lv)
            boot = resample.metric_resamples(cells, idx, predicted_levels(cells.pred, bounds), THRESHOLDS)
            sort_samples[rid] = boot[sort]
        ranked[rid] = {"metrics": point_and_intervals(g, p, lv, bounds, boot), "coverage": coverage[rid]}
    stability = rank_stability(sort_samples, sort) if sort_samples else {}
    for rid in ranked:
        ranked[rid]["rank_stability"] = stability.get(rid)
    return {"floor": floor, "comparison_size": int(images.size), "comparison_from": origin, "common_size": int(common.size),
            "resamples": n_boot if idx is not None else 0, "sort": sort, "ranked": ranked, "unranked": unranked}
