"""The VPA figures (Orekondy et al., ICCV 2017): pure functions over plain arrays, no ORM.

- AP per attribute: scikit-learn's `average_precision_score` (step-wise, no interpolation) over the
  images with a prediction.
- cmAP: the mean of those APs over the attributes with at least one positive and one negative among
  those images [decision]; the others are left out and listed with the reason.
- Bootstrap interval of cmAP over images (percentile, 2.5 / 97.5): every resample is a weighting of
  the images (`scoring.resample`), and the AP of a weighting is computed for all resamples at once by
  `weighted_ap` (equal to scikit-learn's AP with those sample weights; tests check it). In a resample
  an attribute without a positive or a negative drawn is left out of that resample's mean.
"""
from __future__ import annotations

import numpy as np

from scoring.resample import draw, multiplicities

RESAMPLES, SEED = 1000, 20261128


def per_attribute(y: np.ndarray, p: np.ndarray, ids: list[str]) -> list[dict]:
    """One row per attribute: its AP (None when left out), positives, negatives and why it was left out."""
    from sklearn.metrics import average_precision_score  # heavy: imported when figures are asked for, not at start-up

    rows = []
    for j, aid in enumerate(ids):
        positives = int(y[:, j].sum())
        negatives = int(y.shape[0] - positives)
        row = {"attribute": aid, "ap": None, "positives": positives, "negatives": negatives, "left_out": ""}
        if positives == 0:
            row["left_out"] = "no positive among the evaluated images"
        elif negatives == 0:
            row["left_out"] = "no negative among the evaluated images"
        else:
            row["ap"] = float(average_precision_score(y[:, j], p[:, j]))
        rows.append(row)
    return rows


def cmap_of(rows: list[dict]) -> float | None:
    aps = [r["ap"] for r in rows if r["ap"] is not None]
    return float(np.mean(aps)) if aps else None


def weighted_ap(scores: np.ndarray, truth: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """AP of one attribute under each row of `weights` (R x n): scikit-learn's step-wise AP with
    sample_weight = that row. NaN where a row weighs no positive."""
    return _grouped_ap(scores, truth, np.ascontiguousarray(weights.T, dtype=float))[0]


def _grouped_ap(scores: np.ndarray, truth: np.ndarray, weights_t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(AP, weighted positives, weighted negatives) per column of `weights_t` (n x R). The images are
    merged into their distinct scores first (one sparse product gives every resample's positives and
    negatives per score), so the cumulative sums run over the distinct scores, not the images."""
    from scipy import sparse  # heavy: imported when figures are asked for, not at start-up

    n = scores.size
    distinct, group = np.unique(-scores, return_inverse=True)  # group 0: the highest score
    code = group.ravel() * 2 + truth.astype(np.intp)
    by_score = sparse.csr_matrix((np.ones(n), (code, np.arange(n))), shape=(2 * distinct.size, n))
    counts = np.asarray(by_score @ weights_t, dtype=float)  # (2 x distinct) x R
    positives_at = counts[1::2]
    tp = np.cumsum(positives_at, axis=0)  # distinct x R, from the top score down
    drawn = np.cumsum(positives_at + counts[0::2], axis=0)
    positives, negatives = tp[-1], drawn[-1] - tp[-1]
    # sum over thresholds of (recall step) x precision = (1/P) sum_g positives_g x tp_g / drawn_g
    precision = np.divide(tp, drawn, out=np.zeros_like(tp), where=drawn > 0)
    total = np.einsum("gr,gr->r", positives_at, precision)
    ap = np.divide(total, positives, out=np.full_like(total, np.nan), where=positives > 0)
    return ap, positives, negatives


def cmap_interval(y: np.ndarray, p: np.ndarray, evaluated: list[int], resamples: int = RESAMPLES, seed: int = SEED) -> dict:
    """Percentile interval of cmAP over image resamples (the columns `evaluated` only)."""
    n = y.shape[0]
    out = {"lo": None, "hi": None, "resamples": resamples, "seed": seed, "defined": 0}
    if n == 0 or not evaluated or resamples <= 0:
        return out
    weights_t = np.ascontiguousarray(multiplicities(draw(n, resamples, seed), n).T, dtype=float)  # n x resamples (floats: a faster product)
    sums, counts = np.zeros(resamples), np.zeros(resamples)
    for j in evaluated:
        ap, drawn_pos, drawn_neg = _grouped_ap(p[:, j], y[:, j], weights_t)
        ok = (drawn_pos > 0) & (drawn_neg > 0) & np.isfinite(ap)
        sums += np.where(ok, ap, 0)
        counts += ok
    defined = counts > 0
    if not defined.any():
        return out
    lo, hi = np.percentile(sums[defined] / counts[defined], [2.5, 97.5])
    return {**out, "lo": float(lo), "hi": float(hi), "defined": int(defined.sum())}


def figures(y: np.ndarray, p: np.ndarray, ids: list[str], resamples: int = RESAMPLES, seed: int = SEED) -> dict:
    """Per-attribute AP, cmAP with its interval, and the attributes left out, for truth `y` (n x K,
    0/1) and probabilities `p` (n x K) of the n images with a prediction."""
    rows = per_attribute(y, p, ids)
    evaluated = [j for j, r in enumerate(rows) if r["ap"] is not None]
    return {
        "cmap": cmap_of(rows),
        "cmap_interval": cmap_interval(y, p, evaluated, resamples, seed),
        "evaluated_attributes": len(evaluated),
        "left_out": [{"attribute": r["attribute"], "reason": r["left_out"]} for r in rows if r["left_out"]],
        "per_attribute": rows,
    }
