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
CHUNK = 100  # resamples per block: bounds the memory of one attribute's cumulative sums


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
    order = np.argsort(-scores, kind="mergesort")
    s, t = scores[order], truth[order].astype(float)
    ends = np.r_[np.flatnonzero(np.diff(s) != 0), s.size - 1]  # last position of each distinct score
    w = weights[:, order].astype(float)
    tp = np.cumsum(w * t, axis=1)[:, ends]
    fp = np.cumsum(w * (1 - t), axis=1)[:, ends]
    positives = tp[:, -1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / np.where(tp + fp > 0, tp + fp, 1), 0.0)
        recall = np.where(positives > 0, tp / np.where(positives > 0, positives, 1), np.nan)
    steps = np.diff(np.concatenate([np.zeros((recall.shape[0], 1)), recall], axis=1), axis=1)
    return np.sum(steps * precision, axis=1)


def cmap_interval(y: np.ndarray, p: np.ndarray, evaluated: list[int], resamples: int = RESAMPLES, seed: int = SEED) -> dict:
    """Percentile interval of cmAP over image resamples (the columns `evaluated` only)."""
    n = y.shape[0]
    out = {"lo": None, "hi": None, "resamples": resamples, "seed": seed, "defined": 0}
    if n == 0 or not evaluated or resamples <= 0:
        return out
    weights = multiplicities(draw(n, resamples, seed), n)
    sums, counts = np.zeros(resamples), np.zeros(resamples)
    for j in evaluated:
        truth = y[:, j]
        for start in range(0, resamples, CHUNK):
            block = weights[start : start + CHUNK]
            drawn_pos = block @ truth.astype(float)
            drawn_neg = block.sum(axis=1) - drawn_pos
            ap = weighted_ap(p[:, j], truth, block)
            ok = (drawn_pos > 0) & (drawn_neg > 0) & np.isfinite(ap)
            sums[start : start + CHUNK] += np.where(ok, ap, 0)
            counts[start : start + CHUNK] += ok
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
