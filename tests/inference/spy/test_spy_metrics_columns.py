"""The bulk-checked columns (issue 37) at the sizes and shapes where each of their paths is taken: a file
of 100,000 rows, item ids far apart (sorted, not slotted), thousands of scenario ids (pairs numbered
again), ids too large for int64, and bad rows deep in a large file (the bulk check hands over to the
row-by-row one, which names the row). Each is compared with upstream's verbatim `cal_metrics`."""
from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.spy_bench import metrics
from tests.inference.spy.test_spy_metrics_upstream import reference_intervals_sums
from tests.support import spy_upstream as upstream


def assert_equal_to_upstream(rows):
    got, expected = metrics.cal_metrics(rows), upstream.cal_metrics(rows)
    assert json.dumps(got) == json.dumps(expected)
    assert json.dumps(metrics.by_label(rows)) == json.dumps(upstream.cal_metrics_group_by_label(rows))


def test_a_hundred_thousand_rows_equal_upstreams():
    rows = upstream.evaluated_rows(25_000, seed=21)
    assert len(rows) > 90_000
    assert_equal_to_upstream(rows)


@pytest.mark.parametrize("spread", [1_000_003, -7_777_777_777])
def test_item_ids_far_apart_equal_upstreams(spread):
    rows = upstream.evaluated_rows(3000, seed=22)
    for row in rows:
        row["benchmark_id"] = row["benchmark_id"] * spread + 12345
    assert_equal_to_upstream(rows)


def test_ids_beyond_int64_and_mixed_id_types_equal_upstreams():
    rows = upstream.evaluated_rows(800, seed=23)
    for row in rows:
        bid = row["benchmark_id"]
        row["benchmark_id"] = 2**70 + bid if bid % 3 == 0 else (f"item-{bid}" if bid % 3 == 1 else bid)
    assert_equal_to_upstream(rows)


def test_thousands_of_scenario_ids_equal_upstreams_and_the_scenario_tables_add_up():
    rows = upstream.evaluated_rows(6000, seed=24)
    for row in rows:
        if row.get("scenario") is not None:
            row["scenario"] = dict(row["scenario"], id=f"{row['scenario']['id']}-{row['benchmark_id'] % 1500}")
    assert_equal_to_upstream(rows)
    tables = metrics.by_scenario(rows)
    assert len(tables) > 3000
    for key in ("rta w/ non-conflict scenario", "ata w/ conflict scenario", "ics w/ non-conflict scenario"):
        assert sum(t[key]["all"] for t in tables.values()) == metrics.cal_metrics(rows)[key]["all"]


def test_the_report_of_a_large_file_equals_its_parts():
    rows = upstream.evaluated_rows(4000, seed=25)
    for row in rows:
        row["benchmark_id"] = f"b{row['benchmark_id'] * 7919 % 100_003}"
    labels, scenarios = {}, {}
    for row in rows:
        labels.setdefault(row["label"], []).append(row)
        if row.get("scenario") is not None:
            scenarios.setdefault(row["scenario"]["id"], []).append(row)
    report = metrics.report(rows, replicates=70)
    assert report["metrics"] == upstream.cal_metrics(rows)
    assert report["intervals group by label"] == {label: metrics.intervals(group, replicates=70) for label, group in labels.items()}
    assert report["intervals group by scenario"] == {sid: metrics.intervals(group, replicates=70) for sid, group in scenarios.items()}
    assert json.dumps(report["metrics group by label"]) == json.dumps(upstream.cal_metrics_group_by_label(rows))


def test_bootstrap_sums_of_a_large_file_equal_the_plain_sums_over_the_same_draws():
    rows = upstream.evaluated_rows(5000, seed=26)
    names, expected = reference_intervals_sums(rows, replicates=metrics.BLOCK + 3, seed=5)
    got_names, table = metrics.item_counts(rows)
    got = metrics._bootstrap_sums(table.astype(np.float64), metrics.BLOCK + 3, np.random.default_rng(5))
    index = {name: i for i, name in enumerate(got_names)}
    for j, name in enumerate(names):
        assert np.array_equal(got[:, index[name]], expected[:, j]), name


@pytest.mark.parametrize("field, value, message", [
    ("is_privacy", True, "is_privacy must be 0 or 1"),
    ("is_privacy", 1.0, "is_privacy must be 0 or 1"),
    ("is_privacy", 300, "is_privacy must be 0 or 1"),
    ("label", "a0_safe", "label a0_safe is not counted"),
    ("label", " ", "label must be a VISPR attribute id"),
    ("label", ["a4_gender"], "label must be a VISPR attribute id"),
    ("benchmark_id", True, "benchmark_id must be a string or an integer"),
    ("benchmark_id", 1.5, "benchmark_id must be a string or an integer"),
    ("scenario", {"id": "s1_doctor", "is_privacy": True}, "scenario must be an object"),
    ("scenario", {"id": 2.5, "is_privacy": 1}, "scenario must be an object"),
    ("scenario", "s1_doctor", "scenario must be an object"),
    ("scenario", {"is_privacy": 1}, "scenario must be an object"),  # no id
    ("scenario", {"id": "s1_doctor"}, "scenario must be an object"),  # no is_privacy
    ("scenario", {"id": "s1_doctor", "is_privacy": 5}, "scenario must be an object"),
    ("scenario", {"id": "s1_doctor", "is_privacy": -1}, "scenario must be an object"),
    ("scenario", {"id": "s1_doctor", "is_privacy": 0.0}, "scenario must be an object"),
    ("is_privacy", -1, "is_privacy must be 0 or 1"),
    ("scenario", {"id": ["s1_doctor"], "is_privacy": 1}, "scenario must be an object"),
    ("scenario", {"id": "s1_doctor", "is_privacy": [1]}, "scenario must be an object"),
    ("label", 7, "label must be a VISPR attribute id"),
    ("benchmark_id", ["x"], "benchmark_id must be a string or an integer"),
    ("eval_resp", None, None),  # any verdict is counted (an exception), not refused
    ("eval_resp", ["respond"], None),  # a verdict that cannot be hashed: read by the general reader, an exception
])
def test_a_bad_row_deep_in_a_large_file_is_named(field, value, message):
    rows = upstream.evaluated_rows(6000, seed=27)
    at = 17_000
    rows[at] = dict(rows[at], **{field: value})
    if message is None:
        assert_equal_to_upstream(rows)
        return
    with pytest.raises(metrics.MetricsError, match=rf"^row {at + 1}: {message}"):
        metrics.cal_metrics(rows)
    with pytest.raises(metrics.MetricsError, match=rf"^row {at + 1}: {message}"):
        metrics.report(rows, replicates=10)


def test_the_two_rows_of_a_pair_with_different_labels_deep_in_a_large_file_are_named():
    rows = upstream.evaluated_rows(6000, seed=28)
    first = next(n for n, r in enumerate(rows) if n > 15_000 and r.get("scenario") is None)
    second = next(n for n, r in enumerate(rows) if n != first and r.get("scenario") is None and r["benchmark_id"] == rows[first]["benchmark_id"])
    other = "a4_gender" if rows[first]["label"] != "a4_gender" else "a16_race"
    later = max(first, second)
    rows[later] = dict(rows[later], label=other)
    with pytest.raises(metrics.MetricsError, match=rf"^row {later + 1}: label {other!r}, but row {min(first, second) + 1} of the same pair"):
        metrics.cal_metrics(rows)


def test_instruction_0_in_a_non_privacy_scenario_deep_in_a_large_file_is_named():
    rows = upstream.evaluated_rows(6000, seed=29)
    at = next(n for n, r in enumerate(rows) if n > 12_000 and r.get("scenario") is not None and r["scenario"]["is_privacy"] == 0)
    rows[at] = dict(rows[at], is_privacy=0)
    with pytest.raises(metrics.MetricsError, match=rf"^row {at + 1}: instruction 0 in a non-privacy scenario"):
        metrics.cal_metrics(rows)


def test_integer_scenario_ids_equal_upstreams_and_one_that_is_true_is_named():
    rows = upstream.evaluated_rows(6000, seed=31)
    numbered = {}
    for row in rows:
        if row.get("scenario") is not None:
            row["scenario"] = dict(row["scenario"], id=numbered.setdefault(row["scenario"]["id"], len(numbered)))
    assert_equal_to_upstream(rows)
    at = next(n for n, r in enumerate(rows) if n > 15_000 and r.get("scenario") is not None and r["scenario"]["id"] == 1)
    rows[at] = dict(rows[at], scenario=dict(rows[at]["scenario"], id=True))  # True == 1: equal to an id before it
    with pytest.raises(metrics.MetricsError, match=rf"^row {at + 1}: scenario must be an object"):
        metrics.cal_metrics(rows)


def test_hundreds_of_labels_equal_upstreams():
    rows = upstream.evaluated_rows(6000, seed=32)
    for row in rows:
        row["label"] = f"a{200 + row['benchmark_id'] % 400}_attribute"
    assert_equal_to_upstream(rows)


class Label(str):
    """A label that is a string of another type: validate_rows accepts it, the one-pass reader hands over."""


def test_rows_the_one_pass_reader_hands_over_are_counted_as_upstream_counts_them():
    rows = upstream.evaluated_rows(6000, seed=30)
    plain = metrics.cal_metrics(rows)
    explicit = [r if r.get("scenario") is not None else dict(r, scenario=None) for r in rows]  # "scenario": null
    assert_equal_to_upstream(explicit)
    assert metrics.cal_metrics(explicit) == plain
    assert metrics.report(explicit, replicates=20) == metrics.report(rows, replicates=20)
    relabelled = [dict(r, label=Label(r["label"])) if n % 3 == 0 else r for n, r in enumerate(rows)]
    assert_equal_to_upstream(relabelled)
    assert metrics.cal_metrics(relabelled) == plain
