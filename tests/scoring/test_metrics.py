"""scoring.metrics against independent computations: brute-force pairs, scipy/numpy/sklearn directly."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import balanced_accuracy_score, confusion_matrix, precision_recall_fscore_support

from scoring import engine, metrics
from scoring.engine import Bounds

BOUNDS = engine.PROVISIONAL


def brute_pairs(gt, pred, level=None):
    """The O(n^2) definition, pair by pair: {'all', 'intra', 'inter'} -> (pairs, concordant, discordant, ties)."""
    out = {k: [0, 0, 0, 0] for k in ("all", "intra", "inter")}
    for i, j in itertools.combinations(range(len(gt)), 2):
        if gt[i] == gt[j]:
            continue
        groups = ["all"]
        if level is not None:
            groups.append("intra" if level[i] == level[j] else "inter")
        s = np.sign(gt[i] - gt[j]) * np.sign(pred[i] - pred[j])
        for g in groups:
            out[g][0] += 1
            out[g][1 if s > 0 else 2 if s < 0 else 3] += 1
    return {k: tuple(v) for k, v in out.items()}


def synthetic(n, seed=0, noise=0.2, rounding=2):
    rng = np.random.default_rng(seed)
    counts = np.stack([rng.binomial(3, 0.2, n), rng.binomial(10, 0.1, n), rng.binomial(5, 0.3, n), rng.binomial(4, 0.4, n)], axis=1)
    level, gt = engine.severity_array(counts)
    pred = np.clip(np.round(gt + rng.normal(-0.1, noise, n), rounding), 0, 1)
    return gt, level.astype(int), pred


@pytest.mark.parametrize("seed", range(8))
def test_pair_counts_equal_brute_force(seed):
    gt, level, pred = synthetic(60 + seed * 7, seed=seed, rounding=1 if seed % 2 else 2)  # coarse rounding: many ties
    fast = metrics.pair_counts_by_level(gt, pred, level)
    slow = brute_pairs(gt, pred, level)
    for k in ("all", "intra", "inter"):
        assert metrics.astuple(fast[k]) == slow[k], k


def test_pair_counts_edge_cases():
    assert metrics.pair_counts([], []).pairs == 0
    assert metrics.pair_counts([0.5], [0.1]).accuracy is None
    assert metrics.pair_counts([0.1, 0.1, 0.1], [0.1, 0.2, 0.3]).pairs == 0  # no pair with different gt
    assert metrics.pair_counts([0.1, 0.9], [0.2, 0.8]).accuracy == 1.0
    assert metrics.pair_counts([0.1, 0.9], [0.8, 0.2]).accuracy == 0.0
    tied = metrics.pair_counts([0.1, 0.5, 0.9], [0.3, 0.3, 0.3])
    assert (tied.pairs, tied.pred_ties, tied.accuracy) == (3, 3, 0.5)  # a tie in predictions counts 0.5


def test_pair_counts_large_against_vectorised_brute_force():
    gt, level, pred = synthetic(1500, seed=11)
    i, j = np.triu_indices(gt.size, k=1)
    differ = gt[i] != gt[j]
    s = np.sign(gt[i] - gt[j]) * np.sign(pred[i] - pred[j])
    same_level = level[i] == level[j]
    fast = metrics.pair_counts_by_level(gt, pred, level)
    for name, mask in (("all", differ), ("intra", differ & same_level), ("inter", differ & ~same_level)):
        want = (int(mask.sum()), int((s[mask] > 0).sum()), int((s[mask] < 0).sum()), int((s[mask] == 0).sum()))
        assert metrics.astuple(fast[name]) == want


def test_predicted_levels_match_engine_and_boundaries_go_up():
    bounds = Bounds((0.8745, 0.6, 0.3, 0.0))
    values = np.array([0.0, 0.1, 0.3, 0.2999, 0.6, 0.7, 0.8745, 0.8744, 1.0])
    got = metrics.predicted_levels(values, bounds)
    assert got.tolist() == [engine.level_of_score(v, bounds) for v in values]
    assert got.tolist() == [4, 4, 3, 4, 2, 2, 1, 2, 1]


def test_basic_metrics_against_scipy_and_numpy():
    gt, level, pred = synthetic(400, seed=3)
    point = metrics.point_metrics(gt, pred, level, BOUNDS)
    assert point["pearson"] == pytest.approx(np.corrcoef(pred, gt)[0, 1])
    assert point["spearman"] == pytest.approx(stats.spearmanr(pred, gt).statistic)
    assert point["mae"] == pytest.approx(np.mean([abs(p - g) for p, g in zip(pred, gt)]))
    assert point["bias"] == pytest.approx(np.mean(pred) - np.mean(gt))
    assert point["level_acc"] == pytest.approx(np.mean([engine.level_of_score(p, BOUNDS) == lv for p, lv in zip(pred, level)]))
    # The vectorised bootstrap path gives the same values on the original sample.
    vec = metrics.basic_metrics(gt[None, :], pred[None, :], level[None, :], BOUNDS)
    for name in metrics.BASIC_METRICS:
        assert vec[name][0] == pytest.approx(point[name]), name


def test_rowwise_pearson_matches_scipy_per_row():
    rng = np.random.default_rng(5)
    x, y = rng.random((6, 50)), rng.random((6, 50))
    got = metrics.rowwise_pearson(x, y)
    for row in range(6):
        assert got[row] == pytest.approx(stats.pearsonr(x[row], y[row]).statistic)


def test_binary_metrics_against_sklearn_and_counts():
    gt, level, pred = synthetic(300, seed=4)
    plv = metrics.predicted_levels(pred, BOUNDS)
    for threshold in (1, 2, 3):
        sk = metrics.binary_metrics_sklearn(level, plv, threshold)
        truth, guess = (level <= threshold).astype(int), (plv <= threshold).astype(int)
        p, r, f, _ = precision_recall_fscore_support(truth, guess, labels=[1, 0], zero_division=0)
        assert (sk["precision_private"], sk["recall_private"], sk["f1_private"]) == pytest.approx((p[0], r[0], f[0]))
        assert sk["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(truth, guess))
        vec = metrics.binary_from_counts(metrics.binary_counts(level, plv, threshold))
        for name in metrics.BINARY_METRICS:
            assert float(vec[name]) == pytest.approx(sk[name]), (threshold, name)


def test_evaluate_excludes_failures_and_reports_them():
    gt, level, pred = synthetic(200, seed=6)
    outcome = np.array(["ok"] * 200, dtype=object)
    outcome[:10] = "refused"
    outcome[10:15] = "unparseable"
    outcome[15:17] = "error"
    pred = pred.copy()
    pred[:17] = np.nan
    pred[17] = np.nan  # "ok" without a score is excluded too
    report = metrics.evaluate(gt, level, pred, outcome, BOUNDS, n_boot=50)
    assert report["n_results"] == 200 and report["n_valid"] == 182
    assert report["excluded"] == {"unparseable": 5, "refused": 10, "error": 2, "ok_without_score": 1}
    assert report["excluded_rate"] == pytest.approx(18 / 200)
    assert report["refusal_rate"] == pytest.approx(10 / 200)
    keep = slice(18, None)
    assert report["metrics"]["mae"]["value"] == pytest.approx(np.abs(pred[keep] - gt[keep]).mean())
    assert report["confusion"]["matrix"] == confusion_matrix(level[keep], metrics.predicted_levels(pred[keep], BOUNDS), labels=[1, 2, 3, 4]).tolist()
    slow = brute_pairs(gt[keep], pred[keep], level[keep])
    assert report["metrics"]["inter_acc"]["value"] == pytest.approx((slow["inter"][1] + 0.5 * slow["inter"][3]) / slow["inter"][0])
    assert report["metrics"]["intra_acc"]["value"] == pytest.approx((slow["intra"][1] + 0.5 * slow["intra"][3]) / slow["intra"][0])
    per_level = {row["level"]: row for row in report["per_level"]}
    m = level[keep] == 1
    assert per_level[1]["n"] == int(m.sum())
    assert per_level[1]["bias"] == pytest.approx((pred[keep][m] - gt[keep][m]).mean())


def test_bootstrap_intervals_are_seeded_and_bracket_the_estimate():
    gt, level, pred = synthetic(300, seed=8)
    outcome = np.array(["ok"] * 300, dtype=object)
    a = metrics.evaluate(gt, level, pred, outcome, BOUNDS, n_boot=200, seed=1)
    b = metrics.evaluate(gt, level, pred, outcome, BOUNDS, n_boot=200, seed=1)
    c = metrics.evaluate(gt, level, pred, outcome, BOUNDS, n_boot=200, seed=2)
    assert a["metrics"] == b["metrics"]
    assert a["metrics"]["pearson"]["lo"] != c["metrics"]["pearson"]["lo"]
    for name in metrics.METRICS:
        m = a["metrics"][name]
        assert m["lo"] <= m["value"] <= m["hi"], name
    # Independent percentile bootstrap of the MAE with the same indices.
    idx = metrics.bootstrap_indices(300, 200, 1)
    maes = np.abs(pred[idx] - gt[idx]).mean(axis=1)
    assert a["metrics"]["mae"]["lo"] == pytest.approx(np.percentile(maes, 2.5))
    assert a["metrics"]["mae"]["hi"] == pytest.approx(np.percentile(maes, 97.5))


def test_evaluate_with_too_little_data_gives_none_not_errors():
    report = metrics.evaluate(np.array([0.5]), np.array([2]), np.array([np.nan]), np.array(["refused"], dtype=object), BOUNDS)
    assert report["n_valid"] == 0 and report["refusal_rate"] == 1.0
    assert all(v["value"] is None for v in report["metrics"].values())
    constant = metrics.evaluate(np.array([0.2, 0.6, 0.9]), np.array([4, 2, 1]), np.array([0.5, 0.5, 0.5]),
                                np.array(["ok"] * 3, dtype=object), BOUNDS, n_boot=20)
    assert constant["metrics"]["pearson"]["value"] is None  # undefined for a constant prediction
    assert constant["metrics"]["pairwise_acc"]["value"] == 0.5


def test_evaluate_rejects_mismatched_arrays():
    with pytest.raises(ValueError):
        metrics.evaluate(np.zeros(3), np.ones(2), np.zeros(3), np.array(["ok"] * 3, dtype=object), BOUNDS)


def test_level_confusion_is_sklearns_confusion_matrix():
    rng = np.random.default_rng(8)
    gt_level, pred_level = rng.integers(0, 6, 500), rng.integers(1, 5, 500)  # 0 and 5 are not levels
    expected = confusion_matrix(gt_level, pred_level, labels=[1, 2, 3, 4])
    assert metrics.level_confusion(gt_level, pred_level).tolist() == expected.tolist()
    assert metrics.level_confusion(np.array([], dtype=int), np.array([], dtype=int)).tolist() == [[0] * 4] * 4
