"""Weight-set sensitivity (issue 27): a run's metrics under each candidate weight set (with its own
boundaries) that reproduces the published rows equally well. Pure functions over numpy arrays.

Published CPRT-Bench scores and levels do not depend on the profile; the consensus scores of the other
images, and the level a prediction falls in, do. When the fit cannot tell weight sets apart, a figure
that moves between them is not determined by the data; the table shows by how much.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .engine import Bounds, severity_array
from .metrics import pair_counts_by_level, point_metrics

COLUMNS = ("pearson", "spearman", "mae", "bias", "level_acc", "pairwise_acc", "inter_acc", "intra_acc")


def candidate_rows(pred: np.ndarray, published: np.ndarray, published_level: np.ndarray, counts: np.ndarray,
                   candidates: Sequence[dict]) -> list[dict]:
    """pred, published (NaN where none), published_level (0 where none), counts (n, 4) per image;
    candidates: {"name", "weights", "lo"} -> one row of point metrics per candidate."""
    pred = np.asarray(pred, dtype=float)
    published = np.asarray(published, dtype=float)
    has_published = np.isfinite(published)
    rows = []
    for c in candidates:
        bounds = Bounds.from_inner(*c["lo"][:3])
        levels, scores = severity_array(np.asarray(counts, dtype=np.int64).reshape(-1, 4), bounds, c["weights"])
        gt = np.where(has_published, published, scores)
        lv = np.where(has_published, np.asarray(published_level), levels).astype(np.int64)
        row = {"name": c["name"], "weights": list(c["weights"]), "lo": [float(x) for x in c["lo"][:3]], "n": int(pred.size)}
        if pred.size >= 2:
            row.update(point_metrics(gt, pred, lv, bounds))
            pairs = pair_counts_by_level(gt, pred, lv)
            row.update({f"{k}_acc": pairs[p].accuracy for k, p in (("pairwise", "all"), ("inter", "inter"), ("intra", "intra"))})
        rows.append(row)
    for name in COLUMNS:  # the spread of each figure across the candidates
        values = [r.get(name) for r in rows if r.get(name) is not None and np.isfinite(r.get(name))]
        for r in rows:
            r[f"{name}_range"] = (max(values) - min(values)) if values else None
    return rows
