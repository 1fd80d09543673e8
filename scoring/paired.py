"""Paired comparison of two judge runs on their common images (spec section 4): pure functions.

Both runs are evaluated on the same bootstrap resamples of their common images (one index draw, made a
chunk at a time for each run in turn: issue 37, never the (1,000 x images) array, 400 MB at 100,000), so
each resample gives one difference per metric (run A - run B). The interval is the percentile 95%
interval of the differences; the two-sided p-value is twice the smaller share of differences on
either side of 0 (capped at 1), from the resamples in which the difference was defined (counted).
"""
from __future__ import annotations

import numpy as np

from . import resample
from .engine import Bounds
from .metrics import ALL_METRICS, SEED, THRESHOLDS, _interval, _num, point_and_intervals, predicted_levels

N_BOOT = 1000


def paired_comparison(gt, gt_level, pred_a, pred_b, bounds: Bounds, *, n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    """Arrays over the common images (both runs valid). Metric values of both, differences with CI and p."""
    gt, gt_level = np.asarray(gt, dtype=float), np.asarray(gt_level, dtype=np.int64)
    pred_a, pred_b = np.asarray(pred_a, dtype=float), np.asarray(pred_b, dtype=float)
    n = gt.size
    a = point_and_intervals(gt, pred_a, gt_level, bounds, None)
    b = point_and_intervals(gt, pred_b, gt_level, bounds, None)
    rows = []
    boots = {}
    if n >= 2 and n_boot:
        idx = resample.LazyDraw(n, n_boot, seed)  # made a chunk at a time, once for each run: the same numbers
        for name, pred in (("a", pred_a), ("b", pred_b)):
            cells = resample.Cells(gt, pred, gt_level)
            boots[name] = resample.metric_resamples(cells, idx, predicted_levels(cells.pred, bounds), THRESHOLDS)
    for metric in ALL_METRICS:
        va, vb = a[metric]["value"], b[metric]["value"]
        diff = None if va is None or vb is None else va - vb
        row = {"metric": metric, "a": va, "b": vb, "difference": diff, "lo": None, "hi": None, "p_value": None, "defined": 0}
        if boots:
            d = np.asarray(boots["a"][metric], dtype=float) - np.asarray(boots["b"][metric], dtype=float)
            d = d[np.isfinite(d)]
            row["defined"] = int(d.size)
            if d.size:
                row["lo"], row["hi"] = _interval(d)
                row["p_value"] = _num(min(1.0, 2 * min((d <= 0).mean(), (d >= 0).mean())))
        rows.append(row)
    return {"n_common": int(n), "resamples": n_boot, "seed": seed, "rows": rows}
