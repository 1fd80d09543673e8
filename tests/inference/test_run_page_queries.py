"""The run list and a run's page read page-sized rows (issue 37): the list never loads a run's frozen id
lists (two lists of 100,000 ids at lab scale), and a run's page reads its 50 answers and 20 failures from
the (run, outcome, item_id) index instead of sorting all its results."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from inference.models import Run, RunResult
from tests.support.factories import ImageFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client_as, admin_user):
    return client_as(admin_user)


def make_run(n_images: int = 0, outcomes=("ok",)) -> Run:
    images = ImageFactory.create_batch(n_images)
    ids = [i.pk for i in images]
    run = Run.objects.create(task="judge", provider="openai", model_name="gpt-5.1", strategy="zero_shot", prompt_version="judge-v1",
                             image_ids=ids, item_ids=ids, total=len(ids), done=len(ids))
    RunResult.objects.bulk_create([
        RunResult(run=run, item_id=image.pk, image=image, outcome=outcomes[k % len(outcomes)],
                  score=0.5 if outcomes[k % len(outcomes)] == "ok" else None)
        for k, image in enumerate(images)
    ])
    return run


def run_table_queries(queries) -> list[str]:
    return [q["sql"] for q in queries if re.search(r'FROM "inference_run"', q["sql"])]


@pytest.mark.parametrize("url", ["inference:run_list", "inference:run_list_rows"])
def test_run_list_never_loads_the_id_lists(admin_client, url):
    for _ in range(3):
        make_run(2)
    with CaptureQueriesContext(connection) as few:
        assert admin_client.get(reverse(url)).status_code == 200
    selects = run_table_queries(few.captured_queries)
    assert selects and not [s for s in selects if "image_ids" in s or "item_ids" in s], selects
    for _ in range(3):
        make_run(2)
    with CaptureQueriesContext(connection) as more:
        admin_client.get(reverse(url))
    assert len(more.captured_queries) == len(few.captured_queries)  # no query per run (a deferred field read late)


def result_page_queries(queries) -> list[str]:
    return [q["sql"] for q in queries if 'FROM "inference_runresult"' in q["sql"] and " LIMIT " in q["sql"]]


def test_run_page_reads_its_rows_in_item_order_without_sorting_all_results(admin_client):
    run = make_run(130, outcomes=("ok", "ok", "error"))
    with CaptureQueriesContext(connection) as ctx:
        body = admin_client.get(reverse("inference:run_detail", args=[run.pk]) + "?predictions=2").content.decode()
    pages = result_page_queries(ctx.captured_queries)
    assert len(pages) == 2, pages  # the failures' page and the answers' page
    for sql in pages:
        assert "vispr_id" not in sql.split("ORDER BY")[1]  # not ordered through a join
        if connection.vendor != "sqlite":  # PostgreSQL's planner may sort 130 rows in memory rather than walk the index
            continue
        with connection.cursor() as cursor:
            plan = " | ".join(str(row[-1]) for row in cursor.execute("EXPLAIN QUERY PLAN " + sql).fetchall())
        assert "SEARCH inference_runresult USING INDEX" in plan and "TEMP B-TREE" not in plan, plan  # read in index order
    oks = list(run.results.filter(outcome="ok").order_by("item_id").values_list("image__vispr_id", flat=True))
    shown = re.findall(r"2017_f\d{7}", body.split("Predictions")[-1])
    assert shown and shown[0] == oks[50]  # page 2 starts at the 51st answer in item order
    assert "Failures (43)" in body and "Predictions (87)" in body
