"""Like-for-like ranking of judge runs (spec section 4): pure functions over numpy arrays.

Runs are ranked against each other only on the images that every ranked run answered (the common
set), so a run cannot rise by refusing hard images. A run whose coverage (valid predictions / results
with ground truth) is below the floor is listed but not ranked, and does not shrink the common set.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .engine import Bounds
from .metrics import point_and_intervals

COVERAGE_FLOOR = 0.95


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


def common_set_ranking(runs: dict[int, RunPredictions], bounds: Bounds, floor: float = COVERAGE_FLOOR) -> dict:
    """{"floor", "common_size", "ranked": {run: metrics on the common set}, "unranked": {run: coverage}}."""
    ranked_ids = [rid for rid, r in runs.items() if r.coverage is not None and r.coverage >= floor]
    unranked = {rid: runs[rid].coverage for rid in runs if rid not in ranked_ids}
    common = None
    for rid in ranked_ids:
        answered = runs[rid].image_id[runs[rid].valid]
        common = answered if common is None else np.intersect1d(common, answered, assume_unique=True)
    common = np.array([], dtype=np.int64) if common is None else common
    ranked = {}
    for rid in ranked_ids:
        r = runs[rid]
        keep = r.valid & np.isin(r.image_id, common, assume_unique=True)
        ranked[rid] = point_and_intervals(r.gt[keep], r.pred[keep], r.gt_level[keep], bounds, None)
    return {"floor": floor, "common_size": int(common.size), "ranked": ranked, "unranked": unranked}
