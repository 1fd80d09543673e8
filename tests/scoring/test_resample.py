"""The vectorised bootstrap equals today's per-resample computation on the same indices."""
from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from scoring import count_sums, engine, metrics, resample, resample_pairs

BOUNDS = engine.PROVISIONAL


def data(n, seed, coarse=False, shuffle_levels=False, continuous=False):
    rng = np.random.default_rng(seed)
    counts = np.zeros((n, 4), dtype=int)
    levels = rng.integers(1, 5, n)
    for col, m in enumerate(engine.LEVEL_MAXIMA):
        counts[:, col] = rng.integers(0, m + 1, n)
        counts[levels > col + 1, col] = 0
        counts[levels == col + 1, col] = np.maximum(counts[levels == col + 1, col], 1)
    counts[:5] = [(0, 0, 1, 0), (0, 0, 0, 4), (0, 1, 0, 0), (0, 0, 5, 4), (1, 0, 0, 0)]  # shared boundary scores
    lv, gt = engine.severity_array(counts)
    lv = lv.astype(np.int64)
    if shuffle_levels:
        lv = rng.integers(1, 5, n)  # published levels that disagree with the scores
    pred = rng.choice([0.0, 0.5, 1.0], n) if coarse else np.round(np.clip(gt + rng.normal(0, 0.2, n), 0, 1), 2)
    if continuous:  # every score distinct but a few (the shared boundaries stay), as a model's probabilities
        gt = np.where(np.arange(n) < 5, gt, gt + rng.random(n) * 1e-3)
        pred = np.clip(gt + rng.normal(0, 0.2, n), 0, 1)
        pred[5:15] = pred[5]  # a few ties still
    return gt, pred, lv


def reference(gt, pred, lv, idx):
    return [metrics.pair_counts_by_level(gt[row], pred[row], lv[row]) for row in idx]


@pytest.mark.parametrize("coarse,shuffle,ratio,continuous", [(False, False, None, False), (True, False, None, False),
                                                             (False, True, None, False), (False, False, 0, False),
                                                             (False, True, 0, False), (False, False, None, True),
                                                             (False, True, None, True)])
def test_pair_counts_equal_per_resample_counts(monkeypatch, coarse, shuffle, ratio, continuous):
    if ratio is not None:
        monkeypatch.setattr(resample_pairs, "SWEEP_RATIO", ratio)  # the merge-sort fallback
    gt, pred, lv = data(300, 1, coarse, shuffle, continuous)
    assert continuous == (np.unique(pred).size > 200)
    assert_pair_counts_equal_reference(gt, pred, lv, merge_sort=True if continuous else None)


@pytest.mark.parametrize("shuffle", [False, True])
def test_merge_sort_with_transposed_running_sums_equals_per_resample_counts(monkeypatch, shuffle):
    monkeypatch.setattr(count_sums, "SCAN_ROWS", 0)  # every running sum of the sweep by blocks
    gt, pred, lv = data(300, 2, shuffle_levels=shuffle, continuous=True)
    assert_pair_counts_equal_reference(gt, pred, lv, merge_sort=True)


def assert_pair_counts_equal_reference(gt, pred, lv, merge_sort):
    idx = resample.draw(gt.size, 12, 7)
    cells = resample.Cells(gt, pred, lv)
    if merge_sort:  # many distinct values: the merge-sort path
        assert not cells.plan.sweep
    fast = cells.pairs_by_level(cells.from_indices(idx))
    for b, ref in enumerate(reference(gt, pred, lv, idx)):
        for k in ("all", "intra", "inter"):
            got = (fast[k].pairs[b], fast[k].concordant[b], fast[k].discordant[b], fast[k].pred_ties[b])
            assert got == metrics.astuple(ref[k]), (k, b)


def test_every_metric_equals_the_per_resample_reference():
    gt, pred, lv = data(400, 2)
    idx = resample.draw(gt.size, 40, 3)
    cells = resample.Cells(gt, pred, lv)
    fast = resample.metric_resamples(cells, idx, metrics.predicted_levels(cells.pred, BOUNDS))
    slow = metrics.basic_metrics(gt[idx], pred[idx], lv[idx], BOUNDS)
    for name in ("pearson", "spearman", "mae", "bias", "level_acc"):
        assert np.allclose(fast[name], slow[name], rtol=0, atol=1e-12, equal_nan=True), name
    refs = reference(gt, pred, lv, idx)
    for name, k in (("pairwise", "all"), ("inter", "inter"), ("intra", "intra")):
        assert np.allclose(fast[f"{name}_acc"], [r[k].accuracy for r in refs], atol=1e-15)
        assert np.allclose(fast[f"{name}_ties"], [r[k].pred_ties / r[k].pairs for r in refs], atol=1e-15)
        assert np.allclose(fast[f"{name}_acc_strict"], [r[k].concordant / r[k].pairs for r in refs], atol=1e-15)
    plv = metrics.predicted_levels(pred, BOUNDS)
    for t in (1, 2, 3):
        slow_counts = metrics.binary_counts(lv[idx], plv[idx], t)
        for key in ("tp", "fp", "fn", "tn"):
            assert np.array_equal(fast[f"binary_{t}"][key], slow_counts[key])


def test_spearman_of_resample_is_scipy_spearman():
    gt, pred, lv = data(120, 4, coarse=True)
    idx = resample.draw(gt.size, 5, 1)
    cells = resample.Cells(gt, pred, lv)
    fast = resample.metric_resamples(cells, idx, metrics.predicted_levels(cells.pred, BOUNDS))
    for b, row in enumerate(idx):
        assert fast["spearman"][b] == pytest.approx(stats.spearmanr(pred[row], gt[row]).statistic, abs=1e-12)


def test_undefined_resamples_are_counted():
    """A prediction constant except on one image: resamples without that image have no Pearson r."""
    gt = np.linspace(0, 1, 30)
    pred = np.full(30, 0.5)
    pred[0] = 0.9
    report = metrics.evaluate(gt, np.full(30, 4), pred, np.array(["ok"] * 30, dtype=object), BOUNDS, n_boot=200, seed=3)
    m = report["metrics"]["pearson"]
    assert 0 < m["defined"] < 200
    assert report["metrics"]["mae"]["defined"] == 200
    assert report["bootstrap"]["resamples"] == 200


def test_results_do_not_depend_on_the_chunk_of_resamples(monkeypatch):
    gt, pred, lv = data(250, 5)
    idx = resample.draw(gt.size, 23, 2)
    plv = metrics.predicted_levels(resample.Cells(gt, pred, lv).pred, BOUNDS)
    whole = resample.metric_resamples(resample.Cells(gt, pred, lv), idx, plv)
    monkeypatch.setattr(resample, "RESAMPLE_CHUNK", 4)  # 6 chunks, the last one short
    chunked = resample.metric_resamples(resample.Cells(gt, pred, lv), idx, plv)
    assert whole.keys() == chunked.keys()
    for key, value in whole.items():
        if isinstance(value, dict):
            for k in value:
                np.testing.assert_array_equal(value[k], chunked[key][k])
        else:
            assert value.shape == (23,)
            np.testing.assert_array_equal(value, chunked[key])


def test_column_sweep_and_merge_sort_agree_on_scores_with_three_decimals(monkeypatch):
    gt, _, lv = data(400, 6)
    pred = np.round(np.clip(gt + np.random.default_rng(6).normal(0, 0.2, gt.size), 0, 1), 3)
    idx = resample.draw(gt.size, 9, 4)
    monkeypatch.setattr(resample_pairs, "SWEEP_RATIO", 10**6)
    sweep = resample.Cells(gt, pred, lv)
    assert sweep.plan.sweep
    monkeypatch.setattr(resample_pairs, "SWEEP_RATIO", 0)
    merge = resample.Cells(gt, pred, lv)
    assert not merge.plan.sweep
    a, b = sweep.pairs_by_level(sweep.from_indices(idx)), merge.pairs_by_level(merge.from_indices(idx))
    for k in ("all", "intra", "inter"):
        for field in ("pairs", "concordant", "discordant", "pred_ties"):
            np.testing.assert_array_equal(getattr(a[k], field), getattr(b[k], field))


def test_many_small_random_cases_equal_the_per_resample_counts():
    """Few distinct values, ties everywhere, levels from the scores (with shared boundaries) or at random."""
    rng = np.random.default_rng(0)
    paths = {True: 0, False: 0}
    for trial in range(150):
        n = int(rng.integers(2, 40))
        gt = rng.choice(np.round(rng.random(int(rng.integers(1, 8))), 2), n)
        if trial % 3:
            lv = np.digitize(gt, [0.25, 0.5, 0.75]).astype(np.int64) + 1
            lv = np.where(rng.random(n) < 0.1, np.clip(lv + 1, 1, 4), lv)
        else:
            lv = rng.integers(1, 5, n)
        pred = rng.choice(np.round(rng.random(int(rng.integers(1, 6))), 1), n)
        idx = resample.draw(n, 5, trial)
        cells = resample.Cells(gt, pred, lv)
        paths[bool(cells.plan.sweep)] += 1
        fast = cells.pairs_by_level(cells.from_indices(idx))
        for b, ref in enumerate(reference(gt, pred, lv, idx)):
            for k in ("all", "intra", "inter"):
                got = (fast[k].pairs[b], fast[k].concordant[b], fast[k].discordant[b], fast[k].pred_ties[b])
                assert got == metrics.astuple(ref[k]), (trial, k, b)
    assert paths[True] > 30 and paths[False] > 30  # both the column sweep and the merge sort were checked


@pytest.mark.parametrize("continuous", [False, True])
def test_evaluate_with_continuous_scores_equals_the_per_resample_reference(continuous):
    """Every interval of evaluate() from the same indices computed one resample at a time (scipy's
    Kendall count per resample), with many distinct values (the merge-sort path) and few."""
    gt, pred, lv = data(500, 8, continuous=continuous)
    assert (np.unique(pred).size > 350) == continuous
    report = metrics.evaluate(gt, lv, pred, np.array(["ok"] * gt.size, dtype=object), BOUNDS, n_boot=30, seed=5)
    idx = resample.draw(gt.size, 30, 5)
    refs = reference(gt, pred, lv, idx)
    for name, k in (("pairwise_acc", "all"), ("inter_acc", "inter"), ("intra_acc", "intra")):
        lo, hi = np.percentile([r[k].accuracy for r in refs], [2.5, 97.5])
        got = report["metrics"][name]
        assert (got["lo"], got["hi"]) == pytest.approx((lo, hi), abs=1e-12), name
        assert got["value"] == pytest.approx(metrics.pair_counts_by_level(gt, pred, lv)[k].accuracy, abs=1e-15)


@pytest.mark.parametrize("shuffle", [False, True])
def test_exact_rank_sums_give_the_float_paths_spearman_bit_for_bit(monkeypatch, shuffle):
    """Spearman's sums taken exactly with cells as rows (merge-sort path, n**3 < 2**53) are the same floats
    as the float path's in its own order: ties, shared boundary scores and duplicated images included."""
    gt, pred, lv = data(3000, 9, shuffle_levels=shuffle, continuous=True)
    idx = resample.draw(gt.size, 14, 6)
    cells = resample.Cells(gt, pred, lv)
    assert not cells.plan.sweep
    plv = metrics.predicted_levels(cells.pred, BOUNDS)
    calls = []
    exact = resample._exact_rank_sums
    monkeypatch.setattr(resample, "_exact_rank_sums", lambda *a: calls.append(1) or exact(*a))
    fast = resample.metric_resamples(cells, idx, plv)
    assert calls
    monkeypatch.setattr(resample, "EXACT_RANK_SUMS", 0)  # every resample through the float path
    slow = resample.metric_resamples(cells, idx, plv)
    assert len(calls) == 1
    np.testing.assert_array_equal(fast["spearman"], slow["spearman"])
    assert np.isfinite(fast["spearman"]).all()


@pytest.mark.parametrize("images,gt_values,top", [(300, 7, 3), (300, 7, 2000), (80_000, 2, 3)])
def test_exact_rank_sums_equal_the_textbook_sums(images, gt_values, top):
    """Spearman's exact sums (sxx, syy from the tie sizes, sxy per gt value) equal sum S d**2 and
    sum M dp dg over centred average ranks, taken directly: with cubes past int32 (a group of 2,000
    copies) and with a gt value's sum past int32 (30,000 positions in each of two gt values)."""
    rng = np.random.default_rng(images + top)
    cells = images // 2
    gp_, gg_ = rng.permutation(cells) % (cells - 5), np.sort(rng.integers(0, gt_values, cells))
    M = rng.integers(0, 4, (3, cells)).astype(np.int32)
    M[:, 0] = top
    MT = np.ascontiguousarray(M.T)
    Sp = np.stack([np.bincount(gp_, weights=m, minlength=cells - 5) for m in M]).astype(np.int32)
    Sg = np.stack([np.bincount(gg_, weights=m, minlength=gt_values) for m in M]).astype(np.int32)
    sxx, syy, sxy = resample._exact_rank_sums(Sg, M, MT, resample.PredRanks(gp_, gg_))

    def centred(S):  # average 1-based rank of each group less the mean rank, per resample
        before = np.cumsum(S, axis=1) - S
        return before + (S + 1) / 2 - (S.sum(axis=1, keepdims=True) + 1) / 2

    dp, dg = centred(Sp.astype(float)), centred(Sg.astype(float))
    np.testing.assert_array_equal(sxx, (Sp * dp * dp).sum(axis=1))
    np.testing.assert_array_equal(syy, (Sg * dg * dg).sum(axis=1))
    want = [sum(int(M[b, c]) * round(2 * dp[b, gp_[c]]) * round(2 * dg[b, gg_[c]]) for c in range(cells)) / 4 for b in range(3)]
    np.testing.assert_array_equal(sxy, want)


def _poisoned_arrays(self, name, shape, dtype):
    """A fresh array for every request, filled with junk: nothing kept across chunks, nothing read unwritten."""
    out = np.empty(shape, dtype=dtype)
    out.reshape(-1).view(np.uint8)[:] = 0xA5
    return out


@pytest.mark.parametrize("kind", ["continuous", "coarse", "shuffled"])
def test_evaluate_with_scratch_arrays_equals_the_other_paths_bit_for_bit(monkeypatch, kind):
    """evaluate() as it runs (scratch arrays reused across chunks of different sizes, the merge sort and
    Spearman's exact sums with continuous scores) gives the very report of the other paths: fresh junk-filled
    arrays for every request, and for pair counts and Spearman the other algorithm (column sweep and float
    ranks where the run takes the merge sort, and the reverse). The chunk size stays: BLAS may round the
    Pearson, MAE and bias sums of another number of resamples differently in the last bit."""
    rng = np.random.default_rng(21)
    n = 3000
    lv = rng.integers(1, 5, n)
    gt = (4 - lv) / 3 + rng.random(n) * 1e-3  # each level a band of its own: the column sweep can take it
    pred = np.clip(gt + rng.normal(0, 0.2, n), 0, 1)
    pred[:150] = 1.0  # a boundary score many images share
    pred[150:160] = pred[160]  # and a few ties
    if kind == "coarse":
        pred = np.round(pred, 2)
    if kind == "shuffled":
        lv = rng.integers(1, 5, n)  # levels that disagree with the scores: the merge sort either way
    outcome = np.array(["ok"] * n, dtype=object)
    monkeypatch.setattr(resample, "RESAMPLE_CHUNK", 5)  # 5 chunks, the last one short
    report = metrics.evaluate(gt, lv, pred, outcome, BOUNDS, n_boot=23, seed=4)
    merge_sort = not resample.Cells(gt, pred, lv).plan.sweep
    assert merge_sort == (kind != "coarse")

    monkeypatch.setattr(count_sums.Workspace, "array", _poisoned_arrays)
    monkeypatch.setattr(resample_pairs, "SWEEP_RATIO", 10**9 if merge_sort else 0)
    if merge_sort:
        monkeypatch.setattr(resample, "EXACT_RANK_SUMS", 0)  # Spearman's float path
    assert (not resample.Cells(gt, pred, lv).plan.sweep) == (kind != "continuous")
    other = metrics.evaluate(gt, lv, pred, outcome, BOUNDS, n_boot=23, seed=4)
    assert json.dumps(report, sort_keys=True) == json.dumps(other, sort_keys=True)
    assert report["metrics"]["spearman"]["defined"] == 23 and report["metrics"]["intra_acc"]["defined"] == 23
