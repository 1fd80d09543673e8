"""Is a run's ranking better than chance? Pure functions over numpy arrays (spec section 4).

Intra-level ranking: a stratified permutation test. Under the null hypothesis the predictions carry
no information about the order of images within a ground-truth level, so every permutation of the
predictions among the images of one level is equally likely (levels permuted independently). The
statistic is Kendall's S summed over levels, S = concordant - discordant over intra-level pairs with
different ground truth; a larger S is better ranking. The one-sided p-value is P(S_perm >= S_obs):
- exact, by enumerating every permutation of each level and convolving the levels' distributions,
  when that is at most EXACT_LIMIT permutations in total;
- otherwise from the normal approximation with the exact permutation mean (0) and variance of S
  under ties in both variables (Kendall 1970: the same variance the exact enumeration gives, which
  the tests check), with a continuity correction of 1.

Inter-level ranking: a permutation test too (issue 27: a bootstrap share is not a test). Under the
null hypothesis the predictions are exchangeable across all images; the statistic is Kendall's S
between the prediction and the ground-truth level (level 1 the most severe), which counts exactly the
pairs of different levels (pairs of one level are tied in the level and carry no sign). One-sided
p = P(S_perm >= S_obs): exact by enumeration up to EXACT_LIMIT permutations, otherwise the normal
approximation with the exact permutation variance under ties (Kendall 1970) and a continuity
correction of 1.

Score changes between two conditions on the same images (the counterfactual pages): the mean change
with a 95% percentile bootstrap interval over images, and the Wilcoxon signed-rank test (two-sided,
scipy: exact for small samples without ties, else the normal approximation) of "the change is
symmetric about 0". Images whose score did not change carry no sign and are left out of the test
(Wilcoxon's own treatment); the count of those that remain is reported.
"""
from __future__ import annotations

import math
from collections import Counter
from itertools import permutations

import numpy as np

from . import resample
from .pairs import pair_counts  # O(n log n) counts for large levels

EXACT_LIMIT = 200_000
ALPHA = 0.05


def kendall_s(x: np.ndarray, y: np.ndarray) -> int:
    """concordant - discordant over all pairs (O(n^2), for the small exact cases)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    return int(np.triu(dx * dy, 1).sum())


def _tie_sizes(values) -> np.ndarray:
    """The sizes of the groups of equal values in order of first appearance, as floats: what
    Counter(values.tolist()).values() gives, from one sort (a Counter of 100,000 distinct continuous
    scores costs more than the rest of the test). NaN (each its own group in a Counter) goes to Counter."""
    v = np.asarray(values).ravel()
    if v.dtype.kind not in "iufb" or (v.dtype.kind == "f" and np.isnan(v).any()):
        return np.array(list(Counter(v.tolist()).values()), dtype=float)
    _, first, sizes = np.unique(v, return_index=True, return_counts=True)
    return sizes[np.argsort(first, kind="stable")].astype(float)


def s_variance(x: np.ndarray, y: np.ndarray) -> float:
    """Variance of Kendall's S over all permutations of y against x, ties in both (Kendall 1970)."""
    n = len(x)
    if n < 2:
        return 0.0
    t, u = _tie_sizes(x), _tie_sizes(y)
    v0 = n * (n - 1) * (2 * n + 5)
    vt = (t * (t - 1) * (2 * t + 5)).sum()
    vu = (u * (u - 1) * (2 * u + 5)).sum()
    v1 = (t * (t - 1)).sum() * (u * (u - 1)).sum() / (2 * n * (n - 1))
    v2 = (t * (t - 1) * (t - 2)).sum() * (u * (u - 1) * (u - 2)).sum() / (9 * n * (n - 1) * (n - 2)) if n > 2 else 0.0
    # Exactly 0 when either variable is constant; rounding can leave a tiny negative.
    return max(0.0, float((v0 - vt - vu) / 18 + v1 + v2))


def _exact_distribution(x: np.ndarray, y: np.ndarray) -> Counter:
    """S for every permutation of y (each permutation of positions counted once)."""
    return Counter(kendall_s(x, np.asarray(perm)) for perm in permutations(np.asarray(y, dtype=float).tolist()))


def _convolve(a: Counter, b: Counter) -> Counter:
    out: Counter = Counter()
    for sa, ca in a.items():
        for sb, cb in b.items():
            out[sa + sb] += ca * cb
    return out


def _permutations(sizes, limit: int = EXACT_LIMIT) -> int:
    """The product of the factorials of `sizes` where it is at most `limit`, else limit + 1: the exact-test
    check without the factorial of a level's thousands of images (a number of some 100,000 digits)."""
    total = 1
    for size in sizes:
        for k in range(2, int(size) + 1):
            total *= k
            if total > limit:
                return limit + 1
    return total


def intra_level_test(gt: np.ndarray, pred: np.ndarray, level: np.ndarray, intra_counts=None) -> dict:
    """Stratified permutation test of intra-level ranking (see the module doc). `intra_counts`: the
    run's intra-level PairCounts when already computed."""
    gt, pred, level = np.asarray(gt, dtype=float), np.asarray(pred, dtype=float), np.asarray(level)
    groups = [np.flatnonzero(level == lv) for lv in np.unique(level)]
    groups = [g for g in groups if g.size >= 2]

    s_obs = 0
    for g in ([] if intra_counts is not None else groups):
        if g.size <= 50:
            s_obs += kendall_s(gt[g], pred[g])
        else:
            c = pair_counts(gt[g], pred[g])
            s_obs += c.concordant - c.discordant
    if intra_counts is not None:
        s_obs = intra_counts.concordant - intra_counts.discordant
    total_perms = _permutations([g.size for g in groups])
    variance = sum(s_variance(gt[g], pred[g]) for g in groups)
    if not groups or variance <= 1e-9:
        return {"method": "none", "statistic": int(s_obs), "p_value": None, "significant": None,
                "note": "no intra-level pairs whose order the predictions could change"}
    if total_perms <= EXACT_LIMIT and all(g.size <= 9 for g in groups):
        dist: Counter = Counter({0: 1})
        for g in groups:
            dist = _convolve(dist, _exact_distribution(gt[g], pred[g]))
        p = sum(c for s, c in dist.items() if s >= s_obs) / sum(dist.values())
        method = f"exact permutation test ({total_perms:,} permutations within levels)"
    else:
        z = (s_obs - 1) / math.sqrt(variance) if s_obs > 0 else s_obs / math.sqrt(variance)
        p = 0.5 * math.erfc(z / math.sqrt(2))
        method = "permutation test within levels, normal approximation (exact permutation variance of Kendall's S)"
    return {"method": method, "statistic": int(s_obs), "sd": math.sqrt(variance), "p_value": float(p),
            "significant": bool(p < ALPHA)}


def inter_level_test(pred: np.ndarray, level: np.ndarray) -> dict:
    """Permutation test of inter-level ranking (see the module doc): Kendall's S between the prediction and
    the ground-truth level (level 1 most severe), over pairs of different levels; exact for small samples."""
    pred, severity = np.asarray(pred, dtype=float), -np.asarray(level, dtype=float)
    n = pred.size
    if n < 2 or np.unique(severity).size < 2:
        return {"method": "none", "statistic": None, "p_value": None, "significant": None,
                "note": "no inter-level pairs (one ground-truth level)"}
    if n <= 50:
        s_obs = kendall_s(severity, pred)
    else:
        c = pair_counts(severity, pred)
        s_obs = c.concordant - c.discordant
    variance = s_variance(severity, pred)
    if variance <= 1e-9:
        return {"method": "none", "statistic": int(s_obs), "p_value": None, "significant": None,
                "note": "the predictions are constant: no order to test"}
    if _permutations([n]) <= EXACT_LIMIT:
        dist = _exact_distribution(severity, pred)
        p = sum(c for s_, c in dist.items() if s_ >= s_obs) / sum(dist.values())
        method = f"exact permutation test ({math.factorial(n):,} permutations of the predictions)"
    else:
        z = (s_obs - 1) / math.sqrt(variance) if s_obs > 0 else s_obs / math.sqrt(variance)
        p = 0.5 * math.erfc(z / math.sqrt(2))
        method = "permutation test of Kendall's S (prediction vs level), normal approximation with the exact permutation variance"
    return {"method": method, "statistic": int(s_obs), "sd": math.sqrt(variance), "p_value": float(p), "significant": bool(p < ALPHA)}


def ranking_significance(gt, pred, level, boot: dict | None, intra_counts=None) -> dict:
    """Both tests for one run; `boot` is scoring.resample.metric_resamples' output (or None)."""
    return {
        "alpha": ALPHA,
        "intra": intra_level_test(gt, pred, level, intra_counts) if len(gt) >= 2 else {"method": "none", "p_value": None, "significant": None},
        "inter": inter_level_test(pred, level),
    }


CHANGE_RESAMPLES = 500
CHANGE_SEED = 20260323


def paired_change(changes, resamples: int = CHANGE_RESAMPLES, seed: int = CHANGE_SEED) -> dict:
    """Mean of per-image changes with its bootstrap interval, and the Wilcoxon signed-rank p-value."""
    values = np.asarray(changes, dtype=float)
    values = values[np.isfinite(values)]
    n = int(values.size)
    out = {"n": n, "mean": None, "lo": None, "hi": None, "p_value": None, "changed": int(np.count_nonzero(values)),
           "test": "Wilcoxon signed-rank, two-sided", "resamples": resamples}
    if not n:
        return out
    out["mean"] = float(values.mean())
    if resamples:
        idx = resample.draw(n, resamples, seed)
        means = np.concatenate([values[idx[k:k + 50]].mean(axis=1) for k in range(0, resamples, 50)])
        lo, hi = np.percentile(means, [2.5, 97.5])
        out["lo"], out["hi"] = float(lo), float(hi)
    nonzero = values[values != 0]
    from scipy import stats  # imported where used (start-up time)

    out["p_value"] = float(stats.wilcoxon(nonzero).pvalue) if nonzero.size else 1.0
    return out
