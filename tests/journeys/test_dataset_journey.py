"""Journey: an admin opens Datasets from the top bar, builds a version from the cprt-paper preset with
the form's defaults, follows the build's progress card to the end, reads the version's counts, makes
a labeling batch from it, and launches an export scoped to it from the export form.

Debian's Chromium through Playwright against live_server (the `journey` fixture: console errors, CSP
violations and a wrapping top bar fail the test); screenshots in test-artifacts/journeys/.
"""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from annotations.datasets import build
from annotations.datasets.models import DatasetBuild, DatasetVersion
from annotations.models import Batch
from core import dispatch
from scoring.models import ExportJob
from tests.conftest import make_user
from tests.support.vispr_world import PAPER_TEST, make_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def worker_thread(monkeypatch):
    """The build task runs on a thread, as a worker would (so the page sees it queued, then finished);
    other tasks (the export) are recorded, not sent."""
    threads, sent = [], []

    def run(job_id):
        try:
            build.run_build(job_id)
        finally:
            connection.close()

    def send_now(task_name, args=(), kwargs=None, queue=dispatch.DEFAULT_QUEUE):
        sent.append((task_name, list(args)))
        if task_name == build.TASK:
            thread = threading.Thread(target=run, args=tuple(args))
            thread.start()
            threads.append(thread)

    monkeypatch.setattr(dispatch, "send_now", send_now)
    monkeypatch.setattr(dispatch, "_send", lambda name, args, kwargs, queue, rid: send_now(name, args, kwargs, queue))
    yield sent
    for thread in threads:
        thread.join(timeout=60)


def test_build_the_paper_dataset_then_batch_and_export_it(journey, worker_thread):
    make_world(with_file=True)
    make_user("data-admin", "admin", superuser=True)
    page = journey.page_for("data-admin")

    # 1. Datasets, from the top bar; the form's defaults: the cprt-paper preset, the recipe's splits, seed 0, a free name.
    page.click("nav >> text=Datasets")
    page.wait_for_selector("#build-form")
    assert page.locator("select[name=source]").input_value() == "cprt-paper"
    assert page.locator("input[name=name]").input_value() == "cprt-paper"
    journey.shot(page, "dataset-1-form")
    page.click("#build-form button[type=submit]")
    page.wait_for_url(f"{journey.base}/datasets/builds/*/")
    page.wait_for_selector("#dataset-build-progress .badge.status-finished", timeout=60_000)
    page.wait_for_selector("#built-version")
    journey.shot(page, "dataset-2-build-finished")
    journey.check(page)
    job = DatasetBuild.objects.get()
    assert job.status == "finished" and "9 / 9 images read" in page.inner_text("#dataset-build-progress")

    # 2. The version: its counts, rules, overlaps, seed and checksums.
    page.click("#built-version")
    page.wait_for_selector("#member-count")
    assert page.inner_text("#member-count") == "7"
    rules = page.inner_text("#rules")
    assert "severe" in rules and "level2-no-face" in rules
    assert "severe & level2-no-face\t1" in page.inner_text("#overlaps")
    assert "stored labels test2017" in page.inner_text("#checksums")
    journey.shot(page, "dataset-3-version")
    journey.check(page)

    # 3. A labeling batch of the version, with the form's default name.
    page.click("#batch-form button[type=submit]")
    page.wait_for_selector("text=Batch dataset cprt-paper created with the cprt-paper images")
    batch = Batch.objects.get(name="dataset cprt-paper")
    assert set(batch.images.values_list("vispr_id", flat=True)) == set().union(*PAPER_TEST.values())
    journey.shot(page, "dataset-4-batch")

    # 4. An export scoped to the version, from the export form (the version preselected by the link).
    page.click("#export-scoped")
    page.wait_for_selector("select[name=dataset_version]")
    assert page.locator("select[name=dataset_version]").input_value() == "cprt-paper"
    journey.shot(page, "dataset-5-export-form")
    page.click("form.card >> text=Start the export")
    page.wait_for_url(f"{journey.base}/scoring/exports/*/")
    assert page.inner_text("#export-dataset-version") == "cprt-paper"
    journey.shot(page, "dataset-6-export")
    export = ExportJob.objects.get()
    assert export.dataset_version == DatasetVersion.objects.get(name="cprt-paper")
    assert ("scoring.run_export", [export.pk]) in worker_thread
