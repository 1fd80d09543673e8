"""The shortcuts evaluate() takes with continuous scores (issue 37) give what they replace, bit for bit:
cells from one lexsort equal np.unique's rows and inverse; tie sizes from one sort equal a Counter's, in
its order; and evaluate() on continuous scores at 20,000 images equals the same call with both
replaced by the originals."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from scoring import engine, metrics, resample, significance


def keys(n, seed, *, distinct=True, zeros=False, nan=False):
    rng = np.random.default_rng(seed)
    gt = rng.integers(0, 6, n) * 0.2
    pred = rng.random(n) if distinct else rng.integers(0, 7, n) / 6
    level = rng.integers(1, 5, n).astype(float)
    if zeros:
        pred[rng.random(n) < 0.2] = -0.0
        gt[rng.random(n) < 0.2] = -0.0
    if nan:
        gt[3] = np.nan
    return np.stack([gt, pred, level], axis=1)


@pytest.mark.parametrize("n, seed, options", [
    (1, 0, {}), (2, 1, {"distinct": False}), (50, 2, {}), (5000, 3, {}), (5000, 4, {"distinct": False}),
    (3000, 5, {"zeros": True}), (300, 6, {"nan": True}), (40_000, 7, {}),
])
def test_distinct_rows_equal_numpys_unique_rows(n, seed, options):
    k = keys(n, seed, **options)
    uniq, of = np.unique(k, axis=0, return_inverse=True)
    got_uniq, got_of = resample.distinct_rows(k)
    assert got_uniq.tobytes() == uniq.tobytes() and got_uniq.shape == uniq.shape
    assert np.array_equal(got_of, of.ravel())


@pytest.mark.parametrize("values", [
    np.array([0.5, 0.25, 0.5, 1.0, 0.25, 0.5]), np.array([3, 1, 3, 2, 1]), np.array([-0.0, 0.0, 1.0, -0.0]),
    np.array([np.nan, 1.0, np.nan, 1.0]), np.random.default_rng(8).random(20_000),
    np.round(np.random.default_rng(9).random(20_000), 2), np.array([], dtype=float),
])
def test_tie_sizes_equal_a_counters_in_its_order(values):
    expected = np.array(list(Counter(values.tolist()).values()), dtype=float)
    got = significance._tie_sizes(values)
    assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()


def test_evaluate_on_continuous_scores_equals_the_originals(monkeypatch):
    rng = np.random.default_rng(10)
    n = 20_000
    lv = rng.integers(1, 5, n)
    gt = (4 - lv) / 3 + rng.random(n) * 1e-3
    pred = np.clip(gt + rng.normal(0, 0.2, n), 0, 1)
    pred[:200] = 1.0  # a boundary score many images share
    outcome = np.array(["ok"] * n, dtype=object)
    fast = metrics.evaluate(gt, lv, pred, outcome, engine.PROVISIONAL, n_boot=60)
    monkeypatch.setattr(resample, "distinct_rows", lambda k: np.unique(k, axis=0, return_inverse=True))
    monkeypatch.setattr(significance, "_tie_sizes", lambda v: np.array(list(Counter(np.asarray(v).tolist()).values()), dtype=float))
    assert json.dumps(fast, sort_keys=True) == json.dumps(metrics.evaluate(gt, lv, pred, outcome, engine.PROVISIONAL, n_boot=60), sort_keys=True)


@pytest.mark.parametrize("n, distinct", [(1, True), (500, False), (30_000, True)])
def test_cell_counts_one_resample_at_a_time_equal_the_multiplicities(n, distinct):
    k = keys(n, 11, distinct=distinct)
    cells = resample.Cells(k[:, 0], k[:, 1], k[:, 2].astype(np.int64))
    idx = resample.draw(n, 70, 12)
    got = cells.from_indices(idx)
    assert got.dtype == np.int32
    assert np.array_equal(got, resample.multiplicities(idx, cells.size, of=cells.of))
