"""Pair counts for pairwise ranking accuracy: concordant, discordant and prediction-tied pairs among
pairs with different ground truth, in O(n log n) (Kendall's tau-b and exact tie counts; see
scoring/metrics.py). A small base module that `metrics` and `significance` both use.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PairCounts:
    """Pairs with different ground-truth scores, split by how the prediction orders them."""

    pairs: int = 0
    concordant: int = 0
    discordant: int = 0
    pred_ties: int = 0

    @property
    def accuracy(self) -> float | None:
        if self.pairs == 0:
            return None
        return (self.concordant + 0.5 * self.pred_ties) / self.pairs

    def __add__(self, other: "PairCounts") -> "PairCounts":
        return PairCounts(*(a + b for a, b in zip(astuple(self), astuple(other))))

    def __sub__(self, other: "PairCounts") -> "PairCounts":
        return PairCounts(*(a - b for a, b in zip(astuple(self), astuple(other))))


def astuple(c: PairCounts) -> tuple[int, int, int, int]:
    return (c.pairs, c.concordant, c.discordant, c.pred_ties)


def _tied_pairs(sorted_values: np.ndarray) -> int:
    """Number of pairs with equal values, for an already sorted 1-D array."""
    if sorted_values.size < 2:
        return 0
    starts = np.flatnonzero(np.concatenate(([True], sorted_values[1:] != sorted_values[:-1], [True])))
    k = np.diff(starts).astype(np.int64)
    return int((k * (k - 1) // 2).sum())


def _joint_tied_pairs(x: np.ndarray, y: np.ndarray) -> int:
    order = np.lexsort((y, x))
    xs, ys = x[order], y[order]
    if xs.size < 2:
        return 0
    boundary = (xs[1:] != xs[:-1]) | (ys[1:] != ys[:-1])
    starts = np.flatnonzero(np.concatenate(([True], boundary, [True])))
    k = np.diff(starts).astype(np.int64)
    return int((k * (k - 1) // 2).sum())


def pair_counts(gt: np.ndarray, pred: np.ndarray) -> PairCounts:
    """Concordant / discordant / prediction-tied pairs among pairs with different gt, in O(n log n)."""
    gt = np.asarray(gt, dtype=float)
    pred = np.asarray(pred, dtype=float)
    n = gt.size
    if n < 2:
        return PairCounts()
    n0 = n * (n - 1) // 2
    xt = _tied_pairs(np.sort(gt))
    yt = _tied_pairs(np.sort(pred))
    jt = _joint_tied_pairs(gt, pred)
    pairs = n0 - xt
    if pairs == 0:
        return PairCounts()
    pred_ties = yt - jt
    untied = pairs - pred_ties  # concordant + discordant
    if untied == 0:
        return PairCounts(pairs, 0, 0, pred_ties)
    if n == 2:  # scipy's p-value (computed alongside tau) divides by n - 2
        concordant = int(np.sign(gt[1] - gt[0]) == np.sign(pred[1] - pred[0]))
        return PairCounts(1, concordant, 1 - concordant, 0)
    from scipy import stats  # imported where used (start-up time)

    tau = stats.kendalltau(gt, pred, variant="b", method="asymptotic").statistic
    c_minus_d = int(round(float(tau) * math.sqrt(n0 - xt) * math.sqrt(n0 - yt)))
    concordant = (untied + c_minus_d) // 2
    return PairCounts(pairs, concordant, untied - concordant, pred_ties)
