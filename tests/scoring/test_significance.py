"""Significance of intra-level ranking against an exact enumeration written here, independently."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from scoring import significance


def brute_s(x, y):
    return sum(np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]) for i in range(len(x)) for j in range(i + 1, len(x)))


def brute_p(gt, pred, level):
    """Enumerate every assignment of predictions within levels; P(S >= S_obs)."""
    groups = [np.flatnonzero(level == lv) for lv in np.unique(level)]
    s_obs = sum(brute_s(gt[g], pred[g]) for g in groups)
    per_level = [[brute_s(gt[g], np.array(perm)) for perm in itertools.permutations(pred[g])] for g in groups]
    total = hits = 0
    for combo in itertools.product(*per_level):
        total += 1
        hits += sum(combo) >= s_obs
    return hits / total


@pytest.mark.parametrize("seed", range(6))
def test_exact_p_value_equals_enumeration(seed):
    rng = np.random.default_rng(seed)
    n = 9
    gt = rng.choice([0.1, 0.2, 0.3, 0.6, 0.7, 0.9], n)
    pred = rng.choice([0.0, 0.5, 1.0, 0.25], n)
    level = np.where(gt > 0.5, 1, 3)
    result = significance.intra_level_test(gt, pred, level)
    assert result["method"].startswith("exact")
    assert result["p_value"] == pytest.approx(brute_p(gt, pred, level), abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_variance_formula_equals_the_exact_permutation_variance(seed):
    rng = np.random.default_rng(seed)
    x = rng.choice([1, 2, 3], 7).astype(float)
    y = rng.choice([0, 1, 1, 2], 7).astype(float)
    values = [brute_s(x, np.array(p)) for p in itertools.permutations(y)]
    assert significance.s_variance(x, y) == pytest.approx(np.var(values), rel=1e-12)


def test_normal_approximation_is_close_to_exact_on_a_moderate_case():
    rng = np.random.default_rng(11)
    gt = rng.random(9)
    pred = gt + rng.normal(0, 0.3, 9)
    level = np.ones(9, dtype=int)
    exact = significance.intra_level_test(gt, pred, level)
    s, sd = exact["statistic"], exact["sd"]
    approx = 0.5 * math.erfc(((s - 1) / sd) / math.sqrt(2))
    assert abs(approx - exact["p_value"]) < 0.02


def test_a_good_ranker_is_significant_and_noise_is_not():
    rng = np.random.default_rng(0)
    gt = rng.random(400)
    level = rng.integers(1, 5, 400)
    good = significance.intra_level_test(gt, gt + rng.normal(0, 0.1, 400), level)
    noise = significance.intra_level_test(gt, rng.random(400), level)
    assert "normal approximation" in good["method"]
    assert good["significant"] and good["p_value"] < 1e-6
    assert noise["p_value"] > 0.01


# -------------------------------------------------------------------------------------------------
# Score changes between two conditions (the counterfactual pages): bootstrap interval + Wilcoxon.


def brute_force_wilcoxon(changes) -> float:
    """Independent: every one of the 2^n sign assignments of the ranks of |change| (no ties, no zeros)."""
    from itertools import product

    values = np.asarray([c for c in changes if c != 0], dtype=float)
    ranks = np.argsort(np.argsort(np.abs(values))) + 1
    observed = ranks[values > 0].sum()
    totals = np.array([ranks[np.array(signs, dtype=bool)].sum() for signs in product((0, 1), repeat=len(values))])
    return min(1.0, 2 * min((totals <= observed).mean(), (totals >= observed).mean()))


def test_paired_change_p_value_equals_an_exact_enumeration_of_signs():
    rng = np.random.default_rng(11)
    for n in (3, 5, 8, 12):
        changes = np.round(rng.normal(-0.1, 0.2, n), 6)
        changes[np.abs(changes) < 1e-3] = 0.05  # no zero in these cases
        result = significance.paired_change(changes, resamples=0)
        assert result["p_value"] == pytest.approx(brute_force_wilcoxon(changes), rel=1e-9)
        assert result["changed"] == n and result["mean"] == pytest.approx(changes.mean())


def test_paired_change_leaves_unchanged_images_out_of_the_test_and_bootstraps_the_mean():
    changes = np.array([-0.4, -0.3, -0.5, -0.2, 0.0, 0.0, 0.1, -0.6])
    result = significance.paired_change(changes, resamples=300, seed=3)
    assert result["n"] == 8 and result["changed"] == 6
    assert result["p_value"] == pytest.approx(brute_force_wilcoxon(changes), rel=1e-9)
    from scoring import resample

    means = changes[resample.draw(8, 300, 3)].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    assert (result["lo"], result["hi"]) == (pytest.approx(lo), pytest.approx(hi)) and result["hi"] < 0
    assert significance.paired_change([0.0, 0.0])["p_value"] == 1.0  # nothing changed: no evidence of a change
    assert significance.paired_change([])["mean"] is None


# Inter-level ranking: a permutation test of Kendall's S between prediction and level (issue 27), against scipy.

def _s_statistic(level, pred):
    d_level = np.sign(-(level[:, None] - level[None, :]))
    d_pred = np.sign(pred[:, None] - pred[None, :])
    return np.triu(d_level * d_pred, 1).sum()


def test_inter_level_test_exact_matches_scipy_permutation_test():
    from scipy import stats as sps

    from scoring.significance import inter_level_test

    level = np.array([1, 1, 2, 3, 3, 4, 4])
    pred = np.array([0.9, 0.7, 0.8, 0.4, 0.5, 0.1, 0.45])
    got = inter_level_test(pred, level)
    ref = sps.permutation_test((pred,), lambda x: _s_statistic(level, x), permutation_type="pairings",
                               alternative="greater", n_resamples=np.inf)
    assert got["method"].startswith("exact permutation test")
    assert got["p_value"] == pytest.approx(ref.pvalue)
    assert got["statistic"] == _s_statistic(level, pred)


def test_inter_level_test_normal_approximation_is_close_to_a_monte_carlo_permutation_test():
    from scipy import stats as sps

    from scoring.significance import inter_level_test

    rng = np.random.default_rng(3)
    level = rng.integers(1, 5, size=60)
    pred = np.clip(0.2 * (4 - level) / 3 + rng.normal(0, 0.4, size=60), 0, 1)
    got = inter_level_test(pred, level)
    ref = sps.permutation_test((pred,), lambda x: _s_statistic(level, x), permutation_type="pairings",
                               alternative="greater", n_resamples=4000, random_state=1)
    assert "normal approximation" in got["method"]
    assert got["p_value"] == pytest.approx(ref.pvalue, abs=0.03)
