"""The metrics equal upstream's `cal_metrics` and `cal_metrics_group_by_label` (verbatim in
tests/support/spy_upstream.py) bit for bit on random evaluated files, and the bootstrap intervals
(drawn in blocks, summed by a product of draw counts and item counts) equal the plain
per-resample sums over the same draws."""
from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.spy_bench import metrics
from tests.support import spy_upstream as upstream


@pytest.mark.parametrize("n_items, seed", [(1, 0), (2, 1), (3, 2), (7, 3), (40, 4), (300, 5), (2000, 6)])
def test_cal_metrics_and_by_label_equal_upstreams(n_items, seed):
    rows = upstream.evaluated_rows(n_items, seed=seed)
    got, expected = metrics.cal_metrics(rows), upstream.cal_metrics(rows)
    assert got == expected and json.dumps(got) == json.dumps(expected)  # same keys, order, ints and floats
    assert json.dumps(metrics.by_label(rows)) == json.dumps(upstream.cal_metrics_group_by_label(rows))


def test_another_verdict_key_and_string_ids_equal_upstreams():
    rows = upstream.evaluated_rows(200, seed=9, k="judge")
    for row in rows:
        row["benchmark_id"] = f"item-{row['benchmark_id']}"
    assert json.dumps(metrics.cal_metrics(rows, "judge")) == json.dumps(upstream.cal_metrics(rows, "judge"))


def reference_intervals_sums(rows, replicates, seed):
    """Before issue 37: each item's counts, then every resample's drawn rows summed at once."""
    per_item: dict = {}
    for row in rows:
        per_item.setdefault(row["benchmark_id"], []).append(row)
    item_counts = [metrics.counts(r) for r in per_item.values()]
    names = sorted({name for c in item_counts for name in c})
    table = np.array([[c.get(name, 0) for name in names] for c in item_counts], dtype=np.int64)
    draws = np.random.default_rng(seed).integers(0, len(item_counts), size=(replicates, len(item_counts)))
    return names, table[draws].sum(axis=1)


def test_bootstrap_sums_equal_the_plain_sums_over_the_same_draws():
    rows = upstream.evaluated_rows(150, seed=3)
    names, expected = reference_intervals_sums(rows, replicates=metrics.BLOCK * 2 + 5, seed=11)
    got_names, table = metrics.item_counts(rows)
    got = metrics._bootstrap_sums(table.astype(np.float64), metrics.BLOCK * 2 + 5, np.random.default_rng(11))
    index = {name: i for i, name in enumerate(got_names)}
    for j, name in enumerate(names):
        assert np.array_equal(got[:, index[name]], expected[:, j]), name


def test_a_repeated_pair_member_is_refused_at_its_row():
    rows = upstream.evaluated_rows(30, seed=2)
    plain = next(r for r in rows if r.get("scenario") is None and r["eval_resp"] in ("respond", "reject"))
    rows.insert(10, dict(plain))
    first = rows.index(plain)
    second = first + 1 + rows[first + 1:].index(plain)
    with pytest.raises(metrics.MetricsError, match=rf"^row {second + 1}: a second row for benchmark_id {plain['benchmark_id']} "):
        metrics.cal_metrics(rows)


def test_the_report_equals_its_parts_computed_one_by_one():
    """report() checks once and reads each group once; the same JSON as each part on its own."""
    rows = upstream.evaluated_rows(120, seed=8)
    labels, scenarios = {}, {}
    for row in rows:
        labels.setdefault(row["label"], []).append(row)
        if row.get("scenario") is not None:
            scenarios.setdefault(row["scenario"]["id"], []).append(row)
    expected = {
        "metrics": metrics.cal_metrics(rows), "metrics group by label": metrics.by_label(rows),
        "metrics group by scenario": metrics.by_scenario(rows), "intervals": metrics.intervals(rows, replicates=100),
        "intervals group by label": {label: metrics.intervals(group, replicates=100) for label, group in labels.items()},
        "intervals group by scenario": {sid: metrics.intervals(group, replicates=100) for sid, group in scenarios.items()},
    }
    assert json.dumps(metrics.report(rows, replicates=100)) == json.dumps(expected)
