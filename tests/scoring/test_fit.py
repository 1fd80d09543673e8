"""Joint fit of weights and boundaries (scoring.fit) and the named weight sets (spec section 3)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from scoring import engine, fit

ALL_COUNTS = np.array(list(itertools.product(range(4), range(11), range(6), range(5))))
TRUE_BOUNDS = engine.Bounds((0.8305, 0.55, 0.27, 0.0))


def published(weights, decimals, n=2500, seed=3):
    rng = np.random.default_rng(seed)
    counts = ALL_COUNTS[rng.integers(0, len(ALL_COUNTS), n)]
    levels, scores = engine.severity_array(counts, TRUE_BOUNDS, weights)
    return counts, (scores if decimals is None else np.round(scores, decimals)), levels


@pytest.mark.parametrize("weight_set", ["exponential-87", "tight"])
@pytest.mark.parametrize("decimals,close", [(None, 1e-9), (4, 2e-4), (3, 1e-3)])
def test_fit_recovers_weights_and_boundaries(weight_set, decimals, close):
    weights = engine.WEIGHT_SETS[weight_set]
    counts, scores, levels = published(weights, decimals)
    result = fit.fit_profile(counts, scores, levels)
    assert result.decimals == (decimals if decimals is not None else None) or decimals is None
    assert result.weights == weights and result.weight_set == weight_set
    assert result.reproduces, result.report()
    assert result.max_residual <= fit.tolerance(decimals)
    assert np.allclose(result.bounds.lo, TRUE_BOUNDS.lo, atol=close)
    assert weight_set in [c.name for c in result.candidates]
    assert result.level_mismatches == []


def test_tolerance_comes_from_printed_precision():
    assert fit.printed_decimals(np.array([0.947, 0.87, 0.5])) == 3
    assert fit.printed_decimals(np.array([0.9470, 0.1234])) == 4
    assert fit.printed_decimals(np.array([0.1 + 0.2])) is None
    assert fit.tolerance(3) == pytest.approx(0.0005 + fit.FLOAT_SLACK)


def test_three_decimal_file_is_activated_where_the_old_absolute_threshold_refused_it():
    counts, scores, levels = published(engine.EXPONENTIAL_87, 3)
    result = fit.fit_profile(counts, scores, levels)
    assert result.reproduces and result.max_residual > 1e-4  # the old rule (< 1e-4) never activated this


def test_rows_that_cannot_tell_weights_apart_give_a_candidate_set():
    """The A.6 rows and a few others (3 decimals) fit every base from 82 to 89 (spec: about 81 to 92 for the
    two A.6 rows alone)."""
    counts = np.array([c for c, _ in engine.A6_EXAMPLES] + [(0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1), (0, 0, 0, 4), (0, 0, 5, 4), (0, 10, 5, 4)])
    levels, scores = engine.severity_array(counts, engine.PROVISIONAL, engine.EXPONENTIAL_87)
    scores = np.round(scores, 3)
    assert list(scores[:2]) == [0.947, 0.870]
    result = fit.fit_profile(counts, scores, levels)
    names = [c.name for c in result.candidates]
    assert result.reproduces and result.indistinguishable
    assert names[0] == "exponential-87"  # the best fit, the default first on ties
    assert {f"exponential-{b}" for b in range(82, 90)} <= set(names)
    assert "tight" not in names and "exponential-60" not in names and "exponential-120" not in names
    assert result.report()["candidate_names"] == names


def test_tight_weights_cannot_reproduce_both_a6_examples():
    counts = np.array([c for c, _ in engine.A6_EXAMPLES] + [(0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)])
    scores = np.array([0.947, 0.870, 0.5, 0.25, 0.0])
    result = fit.fit_profile(counts, scores, weight_sets={"tight": engine.TIGHT})
    assert not result.reproduces and result.max_residual > 0.01


def test_level_mismatches_are_listed():
    counts, scores, levels = published(engine.TIGHT, None, n=50)
    levels = levels.copy()
    levels[7] = 1 if levels[7] != 1 else 2
    assert fit.fit_profile(counts, scores, levels).level_mismatches == [7]


def test_a6_examples_under_the_default_profile():
    check = engine.a6_check(engine.PROVISIONAL, engine.WEIGHTS)
    assert [round(c["score"], 5) for c in check] == [0.94703, 0.87001]
    assert all(c["matches_printed"] for c in check)
    tight = engine.a6_check(engine.Bounds((0.8745, 0.5, 0.25, 0)), engine.TIGHT)
    assert round(tight[0]["score"], 3) == 0.947 and round(tight[1]["score"], 4) == 0.9436


@pytest.mark.parametrize("weights,ok", [((330, 30, 5, 1), True), ((658503, 7569, 87, 1), True), ((329, 30, 5, 1), False),
                                        ((330, 30, 5, 2), False), ((330, 30, 4, 1), False), ((330.5, 30, 5, 1), False)])
def test_check_weights_enforces_dominance(weights, ok):
    if ok:
        assert engine.check_weights(weights) == tuple(int(w) for w in weights)
    else:
        with pytest.raises(ValueError):
            engine.check_weights(weights)
