"""The disagreement queue is stored as rows: a page reads one page of them, filters and order match a
plain sort of the whole queue, and the review page's previous/next come from the same order."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from scoring.models import DisputedImage, ImageScore, ScoringProfile
from tests.support.permission_cases.scoring import label_everything, make_images

N = 120  # more than two pages of 50


@pytest.fixture
def staff(client_as, adjudicator):
    return client_as(adjudicator)


@pytest.fixture
def queue_world(model_annotators):
    images = make_images(N, prefix="2017_86")
    gpt, gem = model_annotators
    # gpt says 1 on a varying set of attributes, gem always 0: every image disputed, with many impacts and ties.
    label_everything(images, gpt, lambda i, k: 1.0 if (sum(map(ord, k)) + i) % (2 + i % 5) == 0 else 0.0)
    label_everything(images, gem, lambda i, k: 0.0)
    return images, (gpt, gem)


def _all_rows(client, **params):
    response = client.get(reverse("scoring:disagreements"), {"format": "json", **params})
    assert response.status_code == 200
    return response.json()["tables"]["disagreements"]["rows"]


def test_a_page_reads_one_page_of_rows(staff, queue_world):
    everything = _all_rows(staff)  # computes and stores the queue
    assert len(everything) == N
    assert DisputedImage.objects.count() == N
    with CaptureQueriesContext(connection) as ctx:
        page = staff.get(reverse("scoring:disagreements"), {"page": "2"})
    assert page.status_code == 200
    table = DisputedImage._meta.db_table
    reads = [q["sql"] for q in ctx.captured_queries if table in q["sql"] and q["sql"].lstrip().upper().startswith("SELECT")]
    assert reads and all("COUNT(" in sql.upper() or re.search(r"LIMIT\s+50", sql, re.I) for sql in reads), reads
    body = page.content.decode()
    expected = [r["image"] for r in everything[50:100]]
    assert all(vispr_id in body for vispr_id in expected)
    assert not any(r["image"] in body for r in everything[:50] + everything[100:])


@pytest.mark.parametrize("params", [{}, {"sort": "level"}, {"sort": "disputed"}, {"sort": "id"}, {"attribute": "age"},
                                    {"level": "2"}, {"attribute": "gov_ids", "sort": "disputed"}])
def test_filters_and_order_equal_a_plain_sort_of_the_whole_queue(staff, queue_world, params):
    images, (gpt, gem) = queue_world
    everything = _all_rows(staff)
    levels = dict(ImageScore.objects.filter(profile=ScoringProfile.active()).values_list("image_id", "level"))
    want = [r for r in everything
            if (not params.get("attribute") or params["attribute"] in r["disputed"])
            and (not params.get("level") or levels.get(r["image_id"]) == int(params["level"]))]
    keys = {
        "impact": lambda r: (-r["impact"], r["image_id"]),
        "level": lambda r: (not r["level_changes"], -r["impact"], r["image_id"]),
        "disputed": lambda r: (-r["n_disputed"], -r["impact"], r["image_id"]),
        "id": lambda r: r["image_id"],
    }
    want.sort(key=keys[params.get("sort", "impact")])
    got = _all_rows(staff, **params, pair=f"{gpt.pk}-{gem.pk}")
    assert [r["image_id"] for r in got] == [r["image_id"] for r in want]
    assert want or params.get("level")  # the filters select something


def test_review_neighbours_follow_the_impact_order(staff, queue_world):
    ids = [r["image_id"] for r in _all_rows(staff)]
    for position in (0, 57, N - 1):
        body = staff.get(reverse("scoring:review", args=[ids[position]])).content.decode()
        assert f"disputed image {position + 1} of {N}" in body
        if position:
            assert reverse("scoring:review", args=[ids[position - 1]]) + '" rel="prev"' in body
        if position < N - 1:
            assert reverse("scoring:review", args=[ids[position + 1]]) + '" rel="next"' in body
