"""Severity-prediction metrics of one judge run against ground truth (spec section 4): pure functions.

Inputs are plain numpy arrays, one entry per image: the ground-truth score `gt` and level `gt_level`
(taken from the data, not recomputed), the run's prediction `pred` (NaN where there is none) and the
run's `outcome` per image ("ok", "unparseable", "refused", "error").

Decisions (documented in docs/scoring.md):
- Pairwise ranking accuracy is computed over *all* pairs with different ground-truth scores; a tie in
  predictions counts 0.5. Intra-level pairs share a ground-truth level, inter-level pairs do not;
  pairs across levels with equal ground-truth scores (the shared end point of two intervals) are in
  neither. The counts come from Kendall's tau-b (scipy, O(n log n) merge-sort counting) and the
  exact tie counts, so no O(n^2) loop runs: with n0 = n(n-1)/2 pairs, xt pairs tied in gt, yt tied
  in pred and jt tied in both, tau_b * sqrt((n0-xt)(n0-yt)) = concordant - discordant.
- Results that are not "ok" with a score are excluded and reported as count and rate.
- Bootstrap CIs: percentile intervals over images resampled with replacement (seeded), one draw of
  indices per run shared by every metric, computed for all resamples at once (scoring.resample);
  each interval reports how many resamples defined the metric (a resample where it is undefined,
  e.g. a constant prediction for Pearson, is left out of the percentile, and the count says so).
- Beside each pairwise accuracy: the share of pairs tied in the prediction and the accuracy with
  ties counted as wrong, so a coarse predictor cannot pass for a good ranker.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import asdict

import numpy as np

from . import resample, significance
from .engine import LEVELS, Bounds
from .pairs import PairCounts, astuple, pair_counts  # noqa: F401 - astuple: part of this module's interface

N_BOOT = 500
SEED = 20260321
OUTCOMES = ("ok", "unparseable", "refused", "error")
BASIC_METRICS = ("pearson", "spearman", "mae", "bias", "level_acc")
PAIRWISE_METRICS = ("pairwise_acc", "inter_acc", "intra_acc")
METRICS = BASIC_METRICS + PAIRWISE_METRICS
# Beside each pairwise accuracy: the share of pairs tied in the prediction, and the accuracy with ties as wrong.
TIE_METRICS = tuple(f"{k}_{suffix}" for k in ("pairwise", "inter", "intra") for suffix in ("ties", "acc_strict"))
ALL_METRICS = METRICS + TIE_METRICS
BINARY_METRICS = ("accuracy", "balanced_accuracy", "precision_private", "recall_private", "f1_private",
                  "precision_public", "recall_public", "f1_public")
THRESHOLDS = (1, 2, 3)


# ---------------------------------------------------------------------------------------------
# Levels of predicted scores


def predicted_levels(pred: np.ndarray, bounds: Bounds) -> np.ndarray:
    """engine.level_of_score for whole arrays: a value on a boundary belongs to the more severe level."""
    pred = np.asarray(pred, dtype=float)
    lo1, lo2, lo3 = bounds.lo[:3]
    above = (pred >= lo1).astype(np.int8) + (pred >= lo2) + (pred >= lo3)
    return (4 - above).astype(np.int8)


# ---------------------------------------------------------------------------------------------
# Pairwise ranking accuracy


def pair_counts_by_level(gt: np.ndarray, pred: np.ndarray, gt_level: np.ndarray) -> dict[str, PairCounts]:
    """{"all", "intra", "inter"} pair counts; intra sums the per-level counts, inter is the rest."""
    gt_level = np.asarray(gt_level)
    total = pair_counts(gt, pred)
    intra = PairCounts()
    for level in LEVELS:
        mask = gt_level == level
        if mask.sum() > 1:
            intra = intra + pair_counts(np.asarray(gt)[mask], np.asarray(pred)[mask])
    return {"all": total, "intra": intra, "inter": total - intra}


# ---------------------------------------------------------------------------------------------
# Point metrics, vectorised over a leading batch axis (bootstrap resamples)


def rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r along the last axis: the textbook formula, vectorised over bootstrap resamples.

    scipy.stats.pearsonr(axis=-1) gives the same numbers (tests check it) but is several times
    slower on (resamples, n) arrays; point values still come from scipy in `evaluate`.
    """
    with np.errstate(all="ignore"):
        xm = x - x.mean(axis=-1, keepdims=True)
        ym = y - y.mean(axis=-1, keepdims=True)
        r = (xm * ym).sum(axis=-1) / np.sqrt((xm * xm).sum(axis=-1) * (ym * ym).sum(axis=-1))
    return np.clip(r, -1.0, 1.0)


def basic_metrics(gt: np.ndarray, pred: np.ndarray, gt_level: np.ndarray, bounds: Bounds) -> dict[str, np.ndarray]:
    """Pearson, Spearman, MAE, bias, level accuracy along the last axis (for (B, n) resample arrays)."""
    gt = np.asarray(gt, dtype=float)
    pred = np.asarray(pred, dtype=float)
    err = pred - gt
    from scipy import stats  # imported where used: scipy costs seconds at start-up (bench/startup.py)

    return {
        "pearson": rowwise_pearson(pred, gt),
        "spearman": rowwise_pearson(stats.rankdata(pred, axis=-1), stats.rankdata(gt, axis=-1)),
        "mae": np.abs(err).mean(axis=-1),
        "bias": err.mean(axis=-1),
        "level_acc": (predicted_levels(pred, bounds) == np.asarray(gt_level)).mean(axis=-1),
    }


def point_metrics(gt: np.ndarray, pred: np.ndarray, gt_level: np.ndarray, bounds: Bounds) -> dict[str, float]:
    """The point estimates, with scipy's own correlation functions (NaN where undefined)."""
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: scipy warns and returns NaN
        pearson = stats.pearsonr(pred, gt).statistic if gt.size >= 2 else np.nan
        spearman = stats.spearmanr(pred, gt).statistic if gt.size >= 2 else np.nan
    err = np.asarray(pred, dtype=float) - np.asarray(gt, dtype=float)
    return {
        "pearson": float(pearson),
        "spearman": float(spearman),
        "mae": float(np.abs(err).mean()),
        "bias": float(err.mean()),
        "level_acc": float((predicted_levels(pred, bounds) == np.asarray(gt_level)).mean()),
    }


def binary_counts(gt_level: np.ndarray, pred_level: np.ndarray, threshold: int) -> dict[str, np.ndarray]:
    """tp/fp/fn/tn with "private" (level <= threshold) as the positive class, along the last axis."""
    truth = np.asarray(gt_level) <= threshold
    guess = np.asarray(pred_level) <= threshold
    return {
        "tp": (truth & guess).sum(axis=-1),
        "fp": (~truth & guess).sum(axis=-1),
        "fn": (truth & ~guess).sum(axis=-1),
        "tn": (~truth & ~guess).sum(axis=-1),
    }


def binary_from_counts(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The binary metrics from confusion counts (vectorised; zero_division gives 0 like sklearn's)."""
    tp, fp, fn, tn = (np.asarray(c[k], dtype=float) for k in ("tp", "fp", "fn", "tn"))

    def ratio(a, b):
        with np.errstate(all="ignore"):
            return np.where(b > 0, a / np.where(b > 0, b, 1), 0.0)

    out = {}
    for name, pos, fpos, fneg in (("private", tp, fp, fn), ("public", tn, fn, fp)):
        p, r = ratio(pos, pos + fpos), ratio(pos, pos + fneg)
        out[f"precision_{name}"], out[f"recall_{name}"] = p, r
        out[f"f1_{name}"] = ratio(2 * p * r, p + r)
    out["accuracy"] = ratio(tp + tn, tp + tn + fp + fn)
    has_pos, has_neg = (tp + fn) > 0, (tn + fp) > 0
    recall_pos, recall_neg = out["recall_private"], out["recall_public"]
    # sklearn averages the recall of the classes present in y_true.
    out["balanced_accuracy"] = np.where(
        has_pos & has_neg, (recall_pos + recall_neg) / 2, np.where(has_pos, recall_pos, recall_neg)
    )
    return out


def binary_metrics_point(gt_level: np.ndarray, pred_level: np.ndarray, threshold: int) -> dict[str, float]:
    """The binary view of the whole sample from its confusion counts (equals sklearn's; tests check it)."""
    counts = binary_counts(gt_level, pred_level, threshold)
    out = {k: float(v) for k, v in binary_from_counts(counts).items()}
    if not np.asarray(gt_level).size:
        out["accuracy"] = out["balanced_accuracy"] = float("nan")
    out["support_private"] = int(counts["tp"] + counts["fn"])
    out["support_public"] = int(counts["tn"] + counts["fp"])
    return out


def binary_metrics_sklearn(gt_level: np.ndarray, pred_level: np.ndarray, threshold: int) -> dict[str, float]:
    """The binary view computed with sklearn (the point estimates the page shows)."""
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, precision_recall_fscore_support

    truth = (np.asarray(gt_level) <= threshold).astype(int)
    guess = (np.asarray(pred_level) <= threshold).astype(int)
    precision, recall, f1, support = precision_recall_fscore_support(truth, guess, labels=[1, 0], zero_division=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one class only: sklearn warns, the value is still defined
        balanced = balanced_accuracy_score(truth, guess) if truth.size else float("nan")
    return {
        "accuracy": float(accuracy_score(truth, guess)) if truth.size else float("nan"),
        "balanced_accuracy": float(balanced),
        "precision_private": float(precision[0]), "recall_private": float(recall[0]), "f1_private": float(f1[0]),
        "precision_public": float(precision[1]), "recall_public": float(recall[1]), "f1_public": float(f1[1]),
        "support_private": int(support[0]), "support_public": int(support[1]),
    }


# ---------------------------------------------------------------------------------------------
# Bootstrap


def _interval(samples: np.ndarray) -> tuple[float | None, float | None]:
    samples = np.asarray(samples, dtype=float)
    samples = samples[np.isfinite(samples)]
    if samples.size == 0:
        return None, None
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return float(lo), float(hi)


def _num(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def bootstrap_indices(n: int, resamples: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


# ---------------------------------------------------------------------------------------------
# Everything for one run


def evaluate(
    gt: np.ndarray,
    gt_level: np.ndarray,
    pred: np.ndarray,
    outcome: np.ndarray,
    bounds: Bounds,
    *,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> dict:
    """All metrics of one judge run as JSON-ready data (None where a value is undefined).

    Entries are images that have ground truth and a result. A prediction counts when its outcome is
    "ok" and it has a score; everything else is excluded and counted. Bootstrap indices are drawn
    once and every metric's interval comes from those same resamples (scoring.resample); each
    interval carries `defined`, the number of resamples in which the metric was defined.
    """
    gt = np.asarray(gt, dtype=float)
    gt_level = np.asarray(gt_level, dtype=np.int64)
    pred = np.asarray(pred, dtype=float)
    outcome = np.asarray(outcome, dtype=object)
    if not (gt.shape == gt_level.shape == pred.shape == outcome.shape) or gt.ndim != 1:
        raise ValueError("gt, gt_level, pred and outcome must be 1-D arrays of one length")
    valid = (outcome == "ok") & np.isfinite(pred)
    n_results = int(gt.size)
    excluded = {o: int(((outcome == o) & ~valid).sum()) for o in OUTCOMES}
    excluded["ok_without_score"] = excluded.pop("ok")
    excluded_count = n_results - int(valid.sum())

    def rate(k):
        return k / n_results if n_results else None

    g, p, lv = gt[valid], pred[valid], gt_level[valid]
    n = int(g.size)
    report: dict = {
        "n_results": n_results,
        "n_valid": n,
        "coverage": n / n_results if n_results else None,
        "excluded": excluded,
        "excluded_count": excluded_count,
        "excluded_rate": rate(excluded_count),
        "refusal_rate": rate(excluded["refused"]),
        "bootstrap": {"resamples": n_boot, "seed": seed, "method": "percentile, 95%",
                      "indices": "drawn once per run, shared by every metric"},
    }
    boot = None
    plv = predicted_levels(p, bounds)
    if n >= 2 and n_boot:
        cells = resample.Cells(g, p, lv)
        boot = resample.metric_resamples(cells, resample.LazyDraw(n, n_boot, seed),
                                         predicted_levels(cells.pred, bounds), THRESHOLDS)
    pairs = pair_counts_by_level(g, p, lv) if n >= 2 else {k: PairCounts() for k in ("all", "intra", "inter")}
    report["metrics"] = point_and_intervals(g, p, lv, bounds, boot, pairs)
    report["pairs"] = {k: asdict(v) for k, v in pairs.items()}
    report["significance"] = significance.ranking_significance(g, p, lv, boot, pairs["intra"])
    report["confusion"] = {
        "labels": list(LEVELS),
        "matrix": level_confusion(lv, plv).tolist(),
        "rows": "ground-truth level",
        "columns": "predicted level",
    }
    per_level = []
    for level in LEVELS:
        m = lv == level
        k = int(m.sum())
        per_level.append({
            "level": level,
            "n": k,
            "mae": _num(np.abs(p[m] - g[m]).mean()) if k else None,
            "bias": _num((p[m] - g[m]).mean()) if k else None,
            "level_acc": _num((plv[m] == level).mean()) if k else None,
            "mean_gt": _num(g[m].mean()) if k else None,
            "mean_pred": _num(p[m].mean()) if k else None,
        })
    report["per_level"] = per_level

    binary = {}
    for threshold in THRESHOLDS:
        point = binary_metrics_point(lv, plv, threshold) if n else {}
        entry = {"threshold": threshold, "private_levels": list(range(1, threshold + 1))}
        samples = binary_from_counts(boot[f"binary_{threshold}"]) if boot is not None else {}
        for name in BINARY_METRICS:
            entry[name] = _with_interval(point[name] if point else None, samples.get(name))
        entry["support_private"] = point.get("support_private", 0)
        entry["support_public"] = point.get("support_public", 0)
        binary[str(threshold)] = entry
    report["binary"] = binary
    return report


def level_confusion(gt_level: np.ndarray, pred_level: np.ndarray) -> np.ndarray:
    """4x4 counts, rows the ground-truth level, columns the predicted level; values outside LEVELS
    (consecutive integers) are not counted. The same as sklearn's confusion_matrix(labels=LEVELS)
    (tested), counted directly: sklearn's input checks cost more than the whole count."""
    gt_level, pred_level = np.asarray(gt_level), np.asarray(pred_level)
    lo, k = LEVELS[0], len(LEVELS)
    known = np.isin(gt_level, LEVELS) & np.isin(pred_level, LEVELS)
    return np.bincount((gt_level[known] - lo) * k + (pred_level[known] - lo), minlength=k * k).reshape(k, k)


def _with_interval(value, samples) -> dict:
    lo, hi = _interval(samples) if samples is not None else (None, None)
    defined = int(np.isfinite(np.asarray(samples, dtype=float)).sum()) if samples is not None else 0
    return {"value": None if value is None else _num(value), "lo": lo, "hi": hi, "defined": defined}


def point_and_intervals(g, p, lv, bounds: Bounds, boot: dict | None, pairs: dict | None = None) -> dict[str, dict]:
    """Point estimates (scipy / exact counts) with the shared-bootstrap intervals of every metric."""
    n = g.size
    point: dict = {name: None for name in ALL_METRICS}
    if n >= 2:
        point.update(point_metrics(g, p, lv, bounds))
        pairs = pairs or pair_counts_by_level(g, p, lv)
        for name, k in (("pairwise", "all"), ("inter", "inter"), ("intra", "intra")):
            c = pairs[k]
            point[f"{name}_acc"] = c.accuracy
            point[f"{name}_acc_strict"] = c.concordant / c.pairs if c.pairs else None
            point[f"{name}_ties"] = c.pred_ties / c.pairs if c.pairs else None
    return {name: _with_interval(point[name], None if boot is None else boot[name]) for name in ALL_METRICS}


def histogram(values: np.ndarray, bins: int = 20, lo: float = 0.0, hi: float = 1.0) -> tuple[list[int], list[float]]:
    """Counts and edges over [lo, hi] (numpy's histogram), as plain lists."""
    counts, edges = np.histogram(np.asarray(values, dtype=float), bins=bins, range=(lo, hi))
    return counts.tolist(), edges.tolist()


def prediction_row(points: dict, i: int, pred_level) -> dict:
    """Image i of a run's aligned points (scoring.queries.align): its prediction beside its ground truth."""
    pred = points["pred"][i]
    ok = points["outcome"][i] == "ok" and pred == pred
    return {"image_id": int(points["image_id"][i]), "gt": float(points["gt"][i]), "gt_level": int(points["gt_level"][i]),
            "pred": float(pred) if ok else None, "pred_level": int(pred_level) if ok else None,
            "error": float(pred - points["gt"][i]) if ok else None, "outcome": points["outcome"][i]}
