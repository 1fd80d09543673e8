"""The binary private/public view of any run with a per-image score: pure functions over numpy arrays.

Truth: an image is private when its ground-truth level is at or below the threshold (levels 1..T;
level 1 is the most severe), as in the judge runs' binary table (scoring.metrics.binary_counts).
What a run says is its caller's decision rule [decision, docs/scoring.md "Binary view"]
(scoring/services/binary_view.py): a VLM judge run is private when its predicted level (its score
under the profile's boundaries) is at or below the same threshold, exactly the judge page's binary
table, its ranking score for the AUC being the predicted severity score; a run whose score is
P(private) (the local-classifier benchmark's, benchmarks/classifiers/) is private from a cut on it,
its ranking score being P(private).
Precision, recall and F1 are those of the private class. Every metric has a 95% percentile bootstrap
interval (images resampled, one draw of indices per run shared by every metric) and the count of
resamples in which it was defined (AUC needs both classes in a resample).
"""
from __future__ import annotations

import numpy as np

from .metrics import _with_interval, binary_from_counts

N_BOOT = 500
SEED = 20260326
METRICS = ("precision_private", "recall_private", "f1_private", "balanced_accuracy", "auc", "accuracy")
LABELS = {"precision_private": "precision (private)", "recall_private": "recall (private)", "f1_private": "F1 (private)",
          "balanced_accuracy": "balanced accuracy", "auc": "AUC", "accuracy": "accuracy"}


def counts(truth: np.ndarray, guess: np.ndarray) -> dict[str, np.ndarray]:
    """tp/fp/fn/tn along the last axis, private the positive class."""
    truth, guess = np.asarray(truth, dtype=bool), np.asarray(guess, dtype=bool)
    return {"tp": (truth & guess).sum(axis=-1), "fp": (~truth & guess).sum(axis=-1),
            "fn": (truth & ~guess).sum(axis=-1), "tn": (~truth & ~guess).sum(axis=-1)}


def auc(truth: np.ndarray, score: np.ndarray) -> np.ndarray:
    """ROC AUC along the last axis (Mann-Whitney: tied scores count one half); NaN without both classes."""
    truth = np.asarray(truth, dtype=bool)
    from scipy import stats  # imported where used, not at start-up

    ranks = stats.rankdata(np.asarray(score, dtype=float), axis=-1)
    n_pos = truth.sum(axis=-1).astype(float)
    n_neg = truth.shape[-1] - n_pos
    with np.errstate(all="ignore"):
        value = ((ranks * truth).sum(axis=-1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return np.where((n_pos > 0) & (n_neg > 0), value, np.nan)


def _metrics(truth: np.ndarray, guess: np.ndarray, score: np.ndarray) -> dict[str, np.ndarray]:
    c = counts(truth, guess)
    out = binary_from_counts(c)
    if np.asarray(truth).shape[-1] == 0:
        out["accuracy"] = out["balanced_accuracy"] = np.nan
    out["auc"] = auc(truth, score)
    return out


def evaluate(truth: np.ndarray, guess: np.ndarray, score: np.ndarray, *, n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    """The binary view of one run on its valid images (JSON-ready; None where undefined)."""
    truth, guess = np.asarray(truth, dtype=bool), np.asarray(guess, dtype=bool)
    score = np.asarray(score, dtype=float)
    n = int(truth.size)
    point = _metrics(truth, guess, score)
    samples: dict = {}
    if n >= 2 and n_boot:
        idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
        samples = _metrics(truth[idx], guess[idx], score[idx])
    c = counts(truth, guess)
    return {
        "n": n,
        "support_private": int(truth.sum()), "support_public": int(n - truth.sum()),
        "confusion": {k: int(v) for k, v in c.items()},
        "metrics": {name: _with_interval(float(point[name]), samples.get(name)) for name in METRICS},
        "bootstrap": {"resamples": n_boot if n >= 2 else 0, "seed": seed, "method": "percentile, 95%"},
    }

