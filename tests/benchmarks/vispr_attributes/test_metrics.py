"""The figures' arithmetic: AP per attribute is scikit-learn's; the bootstrap's vectorised AP of a
weighting equals scikit-learn's AP with those sample weights; cmAP leaves out (and lists) the
attributes without a positive or a negative; the interval is seeded."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from benchmarks.vispr_attributes import metrics
from benchmarks.vispr_attributes.kind import parse_answer


@pytest.mark.parametrize("trial", range(40))
def test_weighted_ap_equals_sklearn_with_sample_weights(trial):
    rng = np.random.default_rng(trial)
    n = int(rng.integers(2, 60))
    scores = np.round(rng.random(n), 1)  # ties, as models answer
    truth = rng.random(n) < 0.35
    weights = rng.integers(0, 4, size=(6, n))
    weights[0] = 1  # the unweighted AP
    got = metrics.weighted_ap(scores, truth, weights)
    for row, w in enumerate(weights):
        if (w * truth).sum() == 0:
            assert np.isnan(got[row])
        elif (w * ~truth).sum() > 0:
            assert got[row] == pytest.approx(average_precision_score(truth, scores, sample_weight=w), abs=1e-12)


def test_cmap_leaves_out_attributes_without_a_positive_or_a_negative_and_lists_them():
    y = np.array([[1, 0, 1, 1], [0, 0, 1, 0], [1, 0, 1, 0]], dtype=bool)
    p = np.array([[0.9, 0.1, 0.5, 0.2], [0.4, 0.3, 0.5, 0.8], [0.3, 0.2, 0.5, 0.1]])
    out = metrics.figures(y, p, ["a", "b", "c", "d"], resamples=200, seed=1)
    aps = [average_precision_score(y[:, j], p[:, j]) for j in (0, 3)]
    assert [r["ap"] for r in out["per_attribute"]] == [pytest.approx(aps[0]), None, None, pytest.approx(aps[1])]
    assert out["cmap"] == pytest.approx(np.mean(aps))
    assert out["left_out"] == [{"attribute": "b", "reason": "no positive among the evaluated images"},
                               {"attribute": "c", "reason": "no negative among the evaluated images"}]
    assert [r["positives"] for r in out["per_attribute"]] == [2, 0, 3, 1] and out["evaluated_attributes"] == 2


def test_the_interval_is_seeded_and_brackets_resampled_cmaps():
    rng = np.random.default_rng(7)
    y = rng.random((80, 5)) < 0.3
    p = np.clip(y * 0.4 + rng.random((80, 5)) * 0.6, 0, 1)
    first = metrics.figures(y, p, list("abcde"), resamples=300, seed=5)
    again = metrics.figures(y, p, list("abcde"), resamples=300, seed=5)
    other = metrics.figures(y, p, list("abcde"), resamples=300, seed=6)
    interval = first["cmap_interval"]
    assert interval == again["cmap_interval"] and interval != other["cmap_interval"]
    assert interval["lo"] < first["cmap"] < interval["hi"] and interval["defined"] == 300


def test_no_answered_image_gives_no_figure():
    out = metrics.figures(np.zeros((0, 2), dtype=bool), np.zeros((0, 2)), ["a", "b"])
    assert out["cmap"] is None and out["cmap_interval"]["lo"] is None and len(out["left_out"]) == 2


@pytest.mark.parametrize("parsed, message", [
    ([0.1], "must be one JSON object"),
    ("a0_safe", "must be one JSON object"),
    ({"a0_safe": 0.1, "x" * 100: 0.2}, "unexpected attribute id(s): " + "x" * 64),
    ({"a0_safe": -0.01}, "a0_safe: the probability must be a number in [0, 1]"),
    ({"a0_safe": float("nan")}, "a0_safe: the probability must be a number in [0, 1]"),
    ({"a0_safe": None}, "a0_safe: the probability must be a number in [0, 1]"),
    ({"a0_safe": False}, "a0_safe: the probability must be a number in [0, 1]"),
])
def test_parse_answer_refuses_what_is_not_an_object_of_known_ids_and_probabilities(parsed, message):
    with pytest.raises(ValueError) as caught:
        parse_answer(parsed, ["a0_safe", "a4_gender"])
    assert message in str(caught.value)


def test_parse_answer_counts_left_out_attributes_as_omitted():
    assert parse_answer({"a4_gender": 1, "a0_safe": 0.25}, ["a0_safe", "a4_gender", "a9_face"]) == (
        {"a4_gender": 1.0, "a0_safe": 0.25}, ["a9_face"])
    assert parse_answer({}, ["a0_safe"]) == ({}, ["a0_safe"])
