"""The admin's largest tables (labels: 8.36M rows at 100,000 images) are never counted whole (issue 37):
every COUNT is bounded by a LIMIT, and the pages still number and show the rows."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotations.models import Label
from core.paging import CappedCountPaginator
from tests.support.factories import ImageFactory

pytestmark = pytest.mark.django_db


def unbounded_counts(queries, table: str) -> list[str]:
    """The COUNT queries over `table` that are not bounded by a LIMIT."""
    sql = [q["sql"] for q in queries]
    return [s for s in sql if re.search(r"COUNT\(\*\)", s, re.IGNORECASE) and f'"{table}"' in s and " LIMIT " not in s.upper()]


@pytest.fixture
def labels(set_labels, model_annotators):
    images = ImageFactory.create_batch(3)
    for image in images:
        set_labels(image, model_annotators[0], default=1.0)
    return Label.objects.count()


@pytest.mark.parametrize("query", ["", "?annotator__id__exact={annotator}"])
def test_label_changelist_counts_no_whole_table(client, admin_user, labels, model_annotators, query):
    client.force_login(admin_user)
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(reverse("admin:annotations_label_changelist") + query.format(annotator=model_annotators[0].pk))
    assert response.status_code == 200
    assert unbounded_counts(ctx.captured_queries, "annotations_label") == []
    assert f"{labels} labels".encode() in response.content  # under the cap the count is exact


def test_image_changelist_counts_no_whole_table(client, admin_user):
    ImageFactory.create_batch(3)
    client.force_login(admin_user)
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(reverse("admin:annotations_image_changelist"))
    assert response.status_code == 200 and b"3 images" in response.content
    assert unbounded_counts(ctx.captured_queries, "annotations_image") == []


def test_capped_paginator_is_exact_under_the_cap_and_stops_paging_at_it(labels):
    qs = Label.objects.order_by("pk")
    exact = CappedCountPaginator(qs, 5)
    exact.cap = labels
    assert exact.count == labels and exact.num_pages == -(-labels // 5)
    capped = CappedCountPaginator(qs, 5)
    capped.cap = 10
    assert capped.count == 11  # "more than the cap" (no estimate on SQLite)
    assert capped.num_pages == 2
    assert [lab.pk for lab in capped.page(2).object_list] == list(qs.values_list("pk", flat=True)[5:10])
    with CaptureQueriesContext(connection) as ctx:
        CappedCountPaginator(qs, 5).count
    assert unbounded_counts(ctx.captured_queries, "annotations_label") == []
