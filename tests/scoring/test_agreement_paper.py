"""Agreement as the paper measured it: strict consensus, Fleiss' kappa, no dependence on annotator order."""
from __future__ import annotations

import numpy as np
import pytest

from scoring import agreement

KEYS = ["a1", "b2", "c2", "d3", "e4"]
LEVELS = [1, 2, 2, 3, 4]


def labels(annotators, images, seed, missing=0.0):
    rng = np.random.default_rng(seed)
    values = rng.choice([0.0, 0.5, 1.0], size=(annotators, images, len(KEYS)), p=[0.5, 0.2, 0.3])
    values[1] = np.where(rng.random(values[1].shape) < 0.6, values[0], values[1])
    values[rng.random(values.shape) < missing] = np.nan
    return values


def textbook_fleiss(ratings: list[list[int]]) -> float:
    """Fleiss (1971), written out item by item: ratings[i] = the labels item i received."""
    categories = (0, 1)
    P, totals, n_all = [], {c: 0 for c in categories}, 0
    for item in ratings:
        n = len(item)
        counts = {c: item.count(c) for c in categories}
        P.append(sum(k * (k - 1) for k in counts.values()) / (n * (n - 1)))
        for c in categories:
            totals[c] += counts[c]
        n_all += n
    p_bar = sum(P) / len(P)
    p_e = sum((totals[c] / n_all) ** 2 for c in categories)
    return (p_bar - p_e) / (1 - p_e)


@pytest.mark.parametrize("missing", [0.0, 0.3])
def test_fleiss_kappa_and_strict_rate_equal_an_item_by_item_computation(missing):
    humans = labels(3, 60, seed=1, missing=missing)
    got = agreement.human_human(humans, np.array(LEVELS), KEYS)
    ratings, strict = [], []
    for i in range(humans.shape[1]):
        for j in range(humans.shape[2]):
            item = [int(v == 1) for v in humans[:, i, j] if not np.isnan(v)]
            if len(item) >= 2:
                ratings.append(item)
                strict.append(len(set(item)) == 1)
    assert got["overall"]["n"] == len(ratings)
    assert got["overall"]["strict"] == pytest.approx(sum(strict) / len(strict), abs=1e-15)
    assert got["overall"]["fleiss_kappa"] == pytest.approx(textbook_fleiss(ratings), abs=1e-12)
    ratings2 = []  # level 2: the two level-2 columns only
    for i in range(humans.shape[1]):
        for j in (1, 2):
            item = [int(v == 1) for v in humans[:, i, j] if not np.isnan(v)]
            if len(item) >= 2:
                ratings2.append(item)
    assert ratings2 and got["levels"]["2"]["fleiss_kappa"] == pytest.approx(textbook_fleiss(ratings2), abs=1e-12)


def _figures(report, rename):
    """Every figure of the report keyed by (renamed back) annotator names, independent of order."""
    back = {v: k for k, v in rename.items()}
    name = lambda n: back.get(n, n)  # noqa: E731
    pairs = {frozenset((name(p["a"]), name(p["b"]))): p["overall"] for p in report["pairs"]}
    pair_detail = {frozenset((name(p["a"]), name(p["b"]))): (p["attributes"], p["levels"]) for p in report["pairs"]}
    majority = {name(r["a"]): (r["overall"], r["attributes"], r["levels"]) for r in report["vs_majority"]}
    names = [name(n) for n in report["kappa_matrix"]["names"]]
    matrix = {(names[i], names[j]): v for i, row in enumerate(report["kappa_matrix"]["matrix"]) for j, v in enumerate(row)}
    return (pairs, pair_detail, majority, report["human_human"], report["strict_consensus"], report["krippendorff"],
            report["human_study"], matrix)


def test_renaming_and_reordering_annotators_changes_no_figure():
    values = labels(5, 50, seed=7, missing=0.25)
    names = ["alice", "bob", "carol", "gpt", "gemini"]
    kinds = ["human", "human", "human", "model", "model"]
    base = agreement.agreement_report(agreement.LabelSet(values, names, kinds, KEYS, LEVELS))
    rename = {"alice": "zed", "bob": "aaron", "carol": "mike", "gpt": "b-model", "gemini": "a-model"}
    for order in ([4, 3, 2, 1, 0], [1, 0, 3, 2, 4], [2, 4, 0, 3, 1]):
        data = agreement.LabelSet(values[order], [rename[names[i]] for i in order], [kinds[i] for i in order], KEYS, LEVELS)
        assert _figures(agreement.agreement_report(data), rename) == _figures(base, {})


def test_majority_needs_two_humans_and_human_study_counts_images():
    values = np.full((3, 3, len(KEYS)), np.nan)
    values[0, 0] = 1.0  # image 0: one human only
    values[0, 1], values[1, 1] = 1.0, 0.0  # image 1: two humans, split
    values[0, 2], values[1, 2] = 1.0, 1.0  # image 2: two humans, agree
    values[2] = 1.0  # a model labelled everything
    majority = agreement.human_majority(values, [True, True, False])
    assert np.isnan(majority[0]).all()
    assert (majority[1] == 0).all() and (majority[2] == 1).all()
    report = agreement.agreement_report(agreement.LabelSet(values, ["h1", "h2", "m"], ["human", "human", "model"], KEYS, LEVELS))
    assert report["human_study"]["images"] == 2
    vs = report["vs_majority"][0]
    assert vs["overall"]["n"] == 2 * len(KEYS)  # image 0 has no majority


def test_alpha_per_annotator_kind_leaves_ground_truth_out():
    values = labels(4, 40, seed=3)
    kinds = ["human", "human", "model", "ground_truth"]
    report = agreement.agreement_report(agreement.LabelSet(values, ["h1", "h2", "m1", "gt"], kinds, KEYS, LEVELS))
    by_kind = {row["annotators_kind"].split(" (")[0]: row for row in report["krippendorff"]}
    assert by_kind["humans only"]["annotators"] == 2
    assert by_kind["models only"]["annotators"] == 1 and by_kind["models only"]["nominal_binary"] is None
    assert by_kind["humans and models"]["annotators"] == 3
    assert by_kind["humans only"]["nominal_binary"] == pytest.approx(agreement.krippendorff_alpha(values[:2])["nominal_binary"])


def test_no_images_gives_empty_figures_not_an_error():
    values = np.full((3, 0, len(KEYS)), np.nan)
    report = agreement.agreement_report(agreement.LabelSet(values, ["h1", "h2", "m"], ["human", "human", "model"], KEYS, LEVELS))
    assert report["human_study"]["images"] == 0 and report["pairs"] == []
    assert all(row["nominal_binary"] is None and row["images"] == 0 for row in report["krippendorff"])
