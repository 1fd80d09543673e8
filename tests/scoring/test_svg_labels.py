"""Heatmap labels: shortened names stay told apart (names of one model often differ only at the end)."""
from __future__ import annotations

from scoring import svg


def test_names_that_share_a_long_start_stay_distinct():
    names = ["model:openai/gpt-5.1@demo-v1", "model:openai/gpt-5.1@demo-v1-annotate", "human:demo-reviewer"]
    short = svg.distinct_short(names)
    assert len(set(short)) == 3 and all(len(s) <= 22 for s in short)
    assert short[2] == "human:demo-reviewer"  # short names are kept whole


def test_names_cut_at_the_end_when_that_is_enough():
    assert svg.distinct_short(["a" * 30, "b" * 30]) == ["a" * 21 + "…", "b" * 21 + "…"]


def test_names_equal_at_both_ends_are_numbered():
    names = ["a" * 25 + "1" + "b" * 15, "a" * 25 + "2" + "b" * 15]
    short = svg.distinct_short(names)
    assert len(set(short)) == 2 and short[0].startswith("1. ")


def test_the_heatmap_prints_the_distinct_labels():
    names = ["model:openai/gpt-5.1@demo-v1", "model:openai/gpt-5.1@demo-v1-annotate"]
    chart = svg.heatmap(names, names, [[1.0, 0.5], [0.5, 1.0]], title="kappa")
    for label in svg.distinct_short(names):
        assert f">{label}<title>" in chart
