"""The CPRT severity score and consensus engine against the spec's properties (section 3)."""
from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from scoring import engine
from tests.support import reference
from scoring.engine import Bounds

ALL_COUNTS = list(itertools.product(range(4), range(11), range(6), range(5)))


def test_there_are_1320_count_vectors():
    assert len(ALL_COUNTS) == 1320


@pytest.mark.parametrize("name,expected", [("tight", [1319, 329, 29, 4]), ("exponential-87", [2051638, 76129, 439, 4])])
def test_weights_dominate_every_less_severe_combination(name, expected):
    weights = engine.WEIGHT_SETS[name]
    lmax = [engine.level_max(level, weights) for level in (1, 2, 3, 4)]
    assert lmax == expected
    for level in (1, 2, 3):
        assert weights[level - 1] > lmax[level]
    assert engine.check_weights(weights) == weights


@pytest.mark.parametrize("bounds", [engine.PROVISIONAL, Bounds((0.8745, 0.6, 0.3, 0.0))])
def test_dominance_across_levels(bounds):
    """Every image of level l scores at least every image of a less severe level.

    The intervals share their end points (hi(l) = lo(l-1)), so exactly one pair ties: one attribute of
    level l and nothing else (score lo(l)) against every attribute of levels l+1..4 (score hi(l+1)).
    Every other pair is strictly ordered, and the level itself always tells them apart.
    """
    scored = [(c, *engine.severity(c, bounds)) for c in ALL_COUNTS if any(c)]
    for level in (1, 2, 3):
        here = [(c, s) for c, lv, s in scored if lv == level]
        below = [(c, s) for c, lv, s in scored if lv > level]
        worst_c, worst = min(here, key=lambda x: x[1])
        best_c, best = max(below, key=lambda x: x[1])
        assert worst >= best
        single = tuple(1 if i == level - 1 else 0 for i in range(4))
        full_below = tuple(0 if i < level else engine.LEVEL_MAXIMA[i] for i in range(4))
        ties = [(c, d) for c, s in here for d, t in below if s <= t]
        assert ties == [(single, full_below)]


def test_more_severe_attribute_beats_any_combination_of_less_severe():
    for c in ALL_COUNTS:
        for d in ALL_COUNTS:
            lc, ld = engine.determined_level(c), engine.determined_level(d)
            if lc is not None and ld is not None and lc < ld:
                assert engine.lexicographic(c) > engine.lexicographic(d)


def test_strict_monotonicity_within_a_level():
    bounds = engine.PROVISIONAL
    for c in ALL_COUNTS:
        level, score = engine.severity(c, bounds)
        if engine.determined_level(c) is None:
            continue
        for i in range(level - 1, 4):
            bumped = list(c)
            bumped[i] += 1
            if bumped[i] > engine.LEVEL_MAXIMA[i]:
                continue
            level2, score2 = engine.severity(bumped, bounds)
            assert level2 == level
            assert score2 > score, (c, bumped)


def test_each_interval_is_covered_end_to_end():
    bounds = engine.PROVISIONAL
    for level in (1, 2, 3, 4):
        scores = [engine.severity(c, bounds)[1] for c in ALL_COUNTS if engine.determined_level(c) == level]
        assert min(scores) == pytest.approx(bounds.lo[level - 1], abs=1e-12)
        assert max(scores) == pytest.approx(bounds.hi[level - 1], abs=1e-12)
        assert all(bounds.lo[level - 1] <= s <= bounds.hi[level - 1] for s in scores)


def test_determinism_and_vectorised_path_agree_exactly():
    bounds = Bounds((0.8745, 0.55, 0.2, 0.0))
    counts = np.array(ALL_COUNTS)
    levels, scores = engine.severity_array(counts, bounds)
    again_levels, again_scores = engine.severity_array(counts, bounds)
    assert (levels == again_levels).all() and (scores == again_scores).all()
    for row, lv, sc in zip(ALL_COUNTS, levels, scores):
        assert engine.severity(row, bounds) == (lv, sc)


def test_empty_image_is_level_4_score_0():
    assert engine.severity((0, 0, 0, 0)) == (4, 0.0)
    levels, scores = engine.severity_array(np.zeros((1, 4), dtype=int))
    assert (levels[0], scores[0]) == (4, 0.0)


def test_published_anchor_two_level1_attributes():
    """Appendix A.6: tight weights reproduce only the first example; exponential base 87 both."""
    bounds = Bounds((0.8745, 0.6, 0.3, 0.0))
    level, score = engine.severity((2, 0, 0, 0), bounds, engine.TIGHT)
    assert level == 1
    assert round(score, 3) == 0.947
    assert round(engine.severity((1, 10, 0, 0), bounds, engine.TIGHT)[1], 4) == 0.9436
    assert round(engine.severity((2, 0, 0, 0))[1], 5) == 0.94703
    assert round(engine.severity((1, 10, 0, 0))[1], 5) == 0.87001


def test_counts_outside_maxima_are_refused():
    with pytest.raises(ValueError):
        engine.severity((4, 0, 0, 0))
    with pytest.raises(ValueError):
        engine.severity((0, -1, 0, 0))
    with pytest.raises(ValueError):
        engine.severity_array(np.array([[0, 11, 0, 0]]))


def test_bounds_must_partition_the_unit_interval():
    for bad in [(0.5, 0.75, 0.25, 0.0), (1.0, 0.5, 0.25, 0.0), (0.75, 0.5, 0.25, 0.1), (0.75, 0.5, 0.5, 0.0)]:
        with pytest.raises(ValueError):
            Bounds(bad)


def test_level_of_score_puts_boundaries_in_the_more_severe_level():
    b = engine.PROVISIONAL
    assert engine.level_of_score(0.8305, b) == 1
    assert engine.level_of_score(0.8304, b) == 2
    assert engine.level_of_score(0.25, b) == 3
    assert engine.level_of_score(0.0, b) == 4
    assert engine.level_of_score(1.0, b) == 1


KEYS = ["a", "b", "c"]


def test_binarise_and_consensus_require_all_annotators():
    assert [engine.binarise(v) for v in (0, 0.5, 1)] == [0, 0, 1]
    with pytest.raises(ValueError):
        engine.binarise(0.7)
    labels = {"gpt": {"a": 1, "b": 1, "c": 0.5}, "gem": {"a": 1, "b": 0.5, "c": 1}}
    assert engine.consensus(labels, ["gpt", "gem"], KEYS) == {"a": 1, "b": 0, "c": 0}
    assert engine.consensus(labels, ["gpt"], KEYS) == {"a": 1, "b": 1, "c": 0}


def test_incomplete_consensus_set_gives_no_consensus():
    labels = {"gpt": {"a": 1, "b": 1, "c": 1}, "gem": {"a": 1, "b": 1}}
    assert engine.consensus(labels, ["gpt", "gem"], KEYS) is None


def test_adjudication_overrides_consensus():
    labels = {"gpt": {"a": 1, "b": 0, "c": 0}, "gem": {"a": 0, "b": 0, "c": 0}}
    assert engine.consensus(labels, ["gpt", "gem"], KEYS, adjudications={"a": 1, "b": 0.5}) == {"a": 1, "b": 0, "c": 0}


def test_majority_vote_even_split_is_zero():
    assert reference.majority_vote([1, 0]) == 0
    assert reference.majority_vote([1, 1, 0]) == 1
    assert reference.majority_vote([0.5, 1, 1]) == 1
    assert reference.majority_vote([0.5, 0.5, 1]) == 0


def test_consensus_array_matches_per_image_path():
    rng = random.Random(7)
    n_images, n_attr = 300, 22
    keys = [f"k{i}" for i in range(n_attr)]
    values = np.array([[[rng.choice([0, 0.5, 1]) for _ in keys] for _ in range(n_images)] for _ in range(2)], dtype=float)
    values[1, 5, 3] = np.nan  # image 5 incomplete
    adj = np.full((n_images, n_attr), np.nan)
    adj[10, 0] = 1.0
    binary, complete = engine.consensus_array(values, adj)
    for i in range(n_images):
        labels = {
            ann: {k: values[ann, i, j] for j, k in enumerate(keys) if not np.isnan(values[ann, i, j])} for ann in (0, 1)
        }
        adjudications = {keys[j]: adj[i, j] for j in range(n_attr) if not np.isnan(adj[i, j])}
        expected = engine.consensus(labels, [0, 1], keys, adjudications)
        if expected is None:
            assert not complete[i]
        else:
            assert complete[i]
            assert [expected[k] for k in keys] == list(binary[i])


def test_fit_recovers_known_boundaries_with_tiny_residual():
    truth = Bounds((0.8745, 0.61, 0.33, 0.0))
    counts = np.array(ALL_COUNTS[1:])  # skip the empty vector
    levels, scores = engine.severity_array(counts, truth)
    fit = engine.fit_bounds(counts, np.round(scores, 6), levels)
    assert fit.problems == []
    assert fit.bounds.lo == pytest.approx(truth.lo, abs=1e-5)
    assert fit.max_residual < 1e-5
    assert fit.reproduces
    assert fit.level_mismatches == []


def test_fit_reports_level_mismatches_and_bad_formula():
    counts = np.array([(1, 0, 0, 0), (2, 0, 0, 0), (0, 1, 0, 0), (0, 3, 0, 0), (0, 0, 1, 0), (0, 0, 2, 0), (0, 0, 0, 1), (0, 0, 0, 2)])
    scores = np.array([0.80, 0.99, 0.40, 0.70, 0.30, 0.31, 0.0, 0.2])
    published_levels = np.array([1, 1, 2, 2, 3, 3, 4, 3])
    fit = engine.fit_bounds(counts, scores, published_levels)
    assert fit.level_mismatches == [7]
    assert not fit.reproduces


def test_consensus_array_abstaining_annotator_neither_votes_nor_is_waited_for():
    # Two annotators, one image, three attributes; annotator 1 (a dataset annotator) never labels attribute 2.
    values = np.array([[[1.0, 1.0, 1.0]], [[1.0, 0.0, np.nan]]])
    abstain = np.array([[False, False, False], [False, False, True]])
    binary, complete = engine.consensus_array(values, None, abstain)
    assert complete.tolist() == [True] and binary.tolist() == [[1, 0, 1]]
    assert engine.consensus_array(values)[1].tolist() == [False]  # without abstention: a missing label, no consensus
    # Alone, the abstaining annotator covers nothing there: no consensus unless adjudicated.
    alone = engine.consensus_array(values[1:], None, abstain[1:])
    assert alone[1].tolist() == [False]
    adjudicated = engine.consensus_array(values[1:], np.array([[np.nan, np.nan, 0.0]]), abstain[1:])
    assert adjudicated[1].tolist() == [True] and adjudicated[0].tolist() == [[1, 0, 0]]
