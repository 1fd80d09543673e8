"""Reference definitions that only the tests use: the scalar forms of rules the app computes vectorised
(majority vote, one pair's agreement and kappa) and reading back the level a generated rationale states."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from scoring.agreement import kappa_from_confusion
from scoring.engine import binarise

LEVEL_SENTENCE = re.compile(r"severity level ([1-4]) of 4")  # as scoring/sft/pairs.py `rationale` writes it


def _finite(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def majority_vote(values: Sequence[float]) -> int:
    """Human aggregation for agreement studies: binarised majority; an even split gives 0."""
    ones = sum(binarise(v) for v in values)
    return int(ones * 2 > len(values))


@dataclass
class PairStats:
    n: int
    agreement: float | None
    kappa: float | None
    weighted_kappa: float | None = None  # three-valued, linear weights

    def as_dict(self) -> dict:
        return {"n": self.n, "agreement": self.agreement, "kappa": self.kappa, "weighted_kappa": self.weighted_kappa}


def cohen_kappa(a: np.ndarray, b: np.ndarray, labels: Sequence, weights: str | None = None) -> float | None:
    """Cohen's kappa of two label vectors over `labels` (equals sklearn's); None where undefined."""
    if len(a) == 0:
        return None
    index = {v: i for i, v in enumerate(labels)}
    k = len(labels)
    codes = np.array([index[x] for x in np.asarray(a).tolist()]) * k + np.array([index[y] for y in np.asarray(b).tolist()])
    cm = np.bincount(codes, minlength=k * k).reshape(k, k)
    return _finite(kappa_from_confusion(cm, weights))


def pair_stats(a: np.ndarray, b: np.ndarray, a3: np.ndarray | None = None, b3: np.ndarray | None = None) -> PairStats:
    """Agreement of two binary label vectors over the items both labelled (NaN = no label)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    both = ~np.isnan(a) & ~np.isnan(b)
    x, y = a[both].astype(int), b[both].astype(int)
    n = int(both.sum())
    weighted = None
    if a3 is not None and b3 is not None:
        both3 = ~np.isnan(a3) & ~np.isnan(b3)
        weighted = cohen_kappa((a3[both3] * 2).astype(int), (b3[both3] * 2).astype(int), (0, 1, 2), "linear")
    return PairStats(n, float((x == y).mean()) if n else None, cohen_kappa(x, y, (0, 1)), weighted)


def stated_level(reasoning: str) -> int | None:
    """The severity level a rationale states, or None."""
    found = LEVEL_SENTENCE.findall(reasoning)
    return int(found[-1]) if found else None
