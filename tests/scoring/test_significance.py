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
