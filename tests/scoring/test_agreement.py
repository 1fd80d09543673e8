"""scoring.agreement against independent computations (plain loops, sklearn, krippendorff directly)."""
from __future__ import annotations


import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from scoring import agreement, disputes, engine
from tests.support import reference

KEYS = ["a1", "b2", "c2", "d3", "e4"]
LEVELS = [1, 2, 2, 3, 4]


def random_labels(annotators=4, images=40, seed=0, missing=0.15):
    rng = np.random.default_rng(seed)
    values = rng.choice([0.0, 0.5, 1.0], size=(annotators, images, len(KEYS)), p=[0.5, 0.2, 0.3])
    # Correlate raters a little so kappas are not ~0.
    values[1] = np.where(rng.random(values[1].shape) < 0.6, values[0], values[1])
    values[rng.random(values.shape) < missing] = np.nan
    return values


def kappa_by_hand(x, y):
    """Cohen's kappa from its definition: (po - pe) / (1 - pe)."""
    x, y = np.asarray(x), np.asarray(y)
    po = (x == y).mean()
    pe = sum((x == c).mean() * (y == c).mean() for c in (0, 1))
    return (po - pe) / (1 - pe)


def test_binarise_and_invalid_labels():
    assert np.array_equal(agreement.binarise_array(np.array([0, 0.5, 1, np.nan])), np.array([0, 0, 1, np.nan]), equal_nan=True)
    with pytest.raises(ValueError):
        agreement.binarise_array(np.array([0.7]))


def test_human_majority_matches_engine_majority_vote():
    values = random_labels(annotators=5, seed=1)
    is_human = [True, True, True, True, False]
    got = agreement.human_majority(values, is_human)
    for i in range(values.shape[1]):
        for j in range(values.shape[2]):
            labels = [v for v in values[:4, i, j] if not np.isnan(v)]
            want = np.nan if not labels else reference.majority_vote(labels)
            assert (np.isnan(got[i, j]) and np.isnan(want)) or got[i, j] == want
    # An even split gives 0.
    split = np.array([[[1.0]], [[0.0]]])
    assert agreement.human_majority(split, [True, True])[0, 0] == 0


def test_pair_stats_against_definition_and_sklearn():
    values = random_labels(seed=2)
    b = agreement.binarise_array(values)
    stats = reference.pair_stats(b[0].ravel(), b[1].ravel(), values[0].ravel(), values[1].ravel())
    both = ~np.isnan(b[0].ravel()) & ~np.isnan(b[1].ravel())
    x, y = b[0].ravel()[both], b[1].ravel()[both]
    assert stats.n == both.sum()
    assert stats.agreement == pytest.approx((x == y).mean())
    assert stats.kappa == pytest.approx(kappa_by_hand(x, y))
    both3 = ~np.isnan(values[0].ravel()) & ~np.isnan(values[1].ravel())
    x3, y3 = values[0].ravel()[both3], values[1].ravel()[both3]
    # Linear weights by hand: disagreement weight |i - j| / 2 over the ordered values 0, 0.5, 1.
    cats = [0.0, 0.5, 1.0]
    obs = np.array([[np.mean((x3 == a) & (y3 == c)) for c in cats] for a in cats])
    exp = np.outer([np.mean(x3 == a) for a in cats], [np.mean(y3 == c) for c in cats])
    w = np.array([[abs(i - j) / 2 for j in range(3)] for i in range(3)])
    assert stats.weighted_kappa == pytest.approx(1 - (w * obs).sum() / (w * exp).sum())


def test_kappa_undefined_is_none():
    s = reference.pair_stats(np.array([0.0, 0.0]), np.array([0.0, 0.0]))
    assert s.agreement == 1.0 and s.kappa is None
    assert reference.pair_stats(np.array([np.nan]), np.array([1.0])).n == 0


def test_report_pairs_and_majority():
    values = random_labels(annotators=4, seed=3, missing=0.0)
    data = agreement.LabelSet(values=values, names=["h1", "h2", "h3", "m1"], kinds=["human", "human", "human", "model"],
                              keys=KEYS, attr_levels=LEVELS)
    report = agreement.agreement_report(data)
    b = agreement.binarise_array(values)
    assert len(report["pairs"]) == 6
    pair = next(p for p in report["pairs"] if (p["a"], p["b"]) == ("h1", "m1"))
    both = ~np.isnan(b[0]) & ~np.isnan(b[3])
    assert pair["group"] == "human-model"
    assert pair["overall"]["kappa"] == pytest.approx(cohen_kappa_score(b[0][both], b[3][both]))
    assert pair["overall"]["weighted_kappa"] == pytest.approx(
        cohen_kappa_score((values[0][both] * 2).astype(int), (values[3][both] * 2).astype(int), labels=[0, 1, 2], weights="linear"))
    col = 2
    both_c = both[:, col]
    assert pair["attributes"][KEYS[col]]["agreement"] == pytest.approx((b[0][both_c, col] == b[3][both_c, col]).mean())
    lv2 = both[:, [1, 2]]
    assert pair["levels"]["2"]["n"] == int(lv2.sum())
    assert "human_pooled" not in report  # the order-dependent pooled kappa is gone

    # Model vs the human majority vote.
    majority = agreement.human_majority(values, [True, True, True, False])
    m = ~np.isnan(b[3]) & ~np.isnan(majority)
    vs = report["vs_majority"][0]
    assert vs["a"] == "m1" and vs["overall"]["n"] == int(m.sum())
    assert vs["overall"]["kappa"] == pytest.approx(cohen_kappa_score(b[3][m], majority[m]))
    assert report["kappa_matrix"]["names"][-1] == agreement.MAJORITY
    assert report["kappa_matrix"]["matrix"][3][4] == pytest.approx(vs["overall"]["kappa"])


def test_strict_consensus_by_loop():
    values = random_labels(annotators=3, seed=4)
    report = agreement.strict_consensus(values, np.array(LEVELS), KEYS)
    eligible = same = same3 = 0
    for i in range(values.shape[1]):
        for j in range(values.shape[2]):
            labels = [v for v in values[:, i, j] if not np.isnan(v)]
            if len(labels) < 2:
                continue
            eligible += 1
            same += len({engine.binarise(v) for v in labels}) == 1
            same3 += len(set(labels)) == 1
    assert report["overall"]["n"] == eligible
    assert report["overall"]["binary"] == pytest.approx(same / eligible)
    assert report["overall"]["three_valued"] == pytest.approx(same3 / eligible)


def test_krippendorff_alpha_equals_the_krippendorff_package():
    values = random_labels(annotators=4, images=30, seed=5, missing=0.2)
    got = agreement.krippendorff_alpha(values)
    data = values.reshape(4, -1)
    data = data[:, (~np.isnan(data)).sum(axis=0) >= 2]
    assert got["items"] == data.shape[1]
    binary = np.where(np.isnan(data), np.nan, (data == 1).astype(float))
    assert got["nominal_binary"] == pytest.approx(krippendorff.alpha(reliability_data=binary, level_of_measurement="nominal"), abs=1e-12)
    assert got["ordinal_three_valued"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 0.5, 1]), abs=1e-12)
    assert agreement.krippendorff_alpha(values[:1])["nominal_binary"] is None


def test_dispute_impact_by_brute_force():
    values = random_labels(annotators=3, images=25, seed=6)
    adjudications = np.full(values.shape[1:], np.nan)
    adjudications[0, 0] = 1.0
    adjudications[1, :] = 0.5
    impact = disputes.dispute_impact(values, adjudications, LEVELS, engine.PROVISIONAL)
    level_of = dict(zip(KEYS, LEVELS))
    for i in range(values.shape[1]):
        low, high = {}, {}
        for j, key in enumerate(KEYS):
            labels = {engine.binarise(v) for v in values[:, i, j] if not np.isnan(v)}
            if not np.isnan(adjudications[i, j]):
                low[key] = high[key] = engine.binarise(adjudications[i, j])
            elif len(labels) > 1:
                low[key], high[key] = 0, 1
                assert impact["disputed"][i, j]
            else:
                low[key] = high[key] = labels.pop() if labels else 0
        lo_level, lo_score = engine.severity(engine.level_counts(low, level_of))
        hi_level, hi_score = engine.severity(engine.level_counts(high, level_of))
        assert impact["score_lo"][i] == pytest.approx(lo_score)
        assert impact["score_hi"][i] == pytest.approx(hi_score)
        assert impact["level_changes"][i] == (lo_level != hi_level)
    assert not impact["disputed"][1].any()  # every attribute of image 1 is adjudicated


def test_pair_disagrees():
    values = np.full((3, 2, 2), np.nan)
    values[0, 0] = [1, 0]
    values[1, 0] = [0.5, 0]  # binarised 0 vs 1 on the first attribute
    values[0, 1] = [1, 1]
    values[2, 1] = [1, 1]
    assert disputes.pair_disagrees(values, 0, 1).tolist() == [True, False]
    assert disputes.pair_disagrees(values, 0, 2).tolist() == [False, False]
