"""Issue 26's journey in Chromium: a local classifier registered on the command line (as an admin does on
the server) is listed under Runs > Classifiers; the admin launches a binary run from /runs/new/ (kind
"binary", provider onnx, the classifier's name), a real Celery worker runs it with onnxruntime, and the
run's metrics page shows the binary private/public view, which lists it beside the judge runs."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from inference.models import Run
from tests.conftest import make_user
from tests.support.classifiers import tiny_classifier
from tests.support.workers import celery_worker, purge_broker

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

COLOURS_LEVELS = [((250, 10, 10), 1), ((240, 30, 20), 2), ((200, 60, 60), 4), ((10, 10, 250), 4), ((30, 40, 230), 2), ((60, 60, 200), 4)]


def test_a_binary_run_launched_from_the_page_and_its_metrics(journey, make_image, tmp_path, monkeypatch):
    monkeypatch.setenv("CPRT_RUN_HEARTBEAT_S", "0.5")
    for k, (colour, level) in enumerate(COLOURS_LEVELS):
        image = make_image(f"2017_2626{k:04d}", color=colour)
        image.published_level, image.published_score = level, {1: 0.9, 2: 0.6, 4: 0.05}[level]
        image.save()
    call_command("register_classifier", "tiny-s2p", str(tiny_classifier(tmp_path / "tiny.onnx")), "--classes", "private,public",
                 stdout=StringIO())
    make_user("clf-admin", "admin")
    page = journey.page_for("clf-admin")

    # Runs (top bar) > Benchmarks > Local classifiers > registered classifiers lists it.
    with page.expect_navigation():
        page.click(".nav >> text=Runs")
    with page.expect_navigation():
        page.click("main >> text=Benchmarks")
    with page.expect_navigation():
        page.click("text=Local classifiers (private/public)")
    with page.expect_navigation():
        page.click("text=registered classifiers")
    assert "tiny-s2p" in page.inner_text("#classifiers")
    journey.shot(page, "classifier-list")
    journey.check(page)

    purge_broker()
    with celery_worker(queues="default", concurrency=1):
        # The launch form opened with its kind and provider in the address (a change of either re-renders it over htmx).
        journey.visit(page, "/runs/new/?task=binary&provider=onnx", "classifier-run-new")
        page.wait_for_selector("#launch-form[data-kind='binary']")
        assert page.input_value("input[name=model_name]") == "tiny-s2p"  # the provider's suggested model: the registered one
        with page.expect_navigation():
            page.click("button[name=action][value=estimate]")
        assert "6 images" in page.inner_text("#estimate"), page.locator(".errorlist").all_inner_texts()
        journey.shot(page, "classifier-run-estimate")
        before = set(Run.objects.values_list("pk", flat=True))
        with page.expect_navigation():
            page.click("button[name=action][value=launch]")
        assert "/runs/new/" not in page.url, page.inner_text("main")[:600]
        run = Run.objects.exclude(pk__in=before).get()
        assert (run.task, run.provider, run.model_name) == ("binary", "onnx", "tiny-s2p")
        page.wait_for_selector("#run-progress .badge.status-finished", timeout=120_000)
        journey.shot(page, "classifier-run-finished")
        assert Run.objects.get(pk=run.pk).outcome_counts == {"ok": 6}
        journey.check(page)

    with page.expect_navigation():
        page.click("text=Metrics of this run")
    assert f"/benchmarks/local-classifiers/runs/{run.pk}/" in page.url
    table = page.inner_text("#table-binary")
    assert "AUC" in table and "balanced accuracy" in table and "recall (private)" in table
    journey.shot(page, "classifier-run-metrics")
    page.select_option("select[name=threshold]", "1") if page.locator("select[name=threshold]").count() else page.fill(
        "input[name=threshold]", "1")
    with page.expect_navigation():
        page.click("#binary-run-filters button[type=submit]")
    assert "levels 1–1 private" in page.inner_text("#table-binary")
    journey.check(page)

    with page.expect_navigation():
        page.click("text=every classifier run beside the judge runs")
    assert "/benchmarks/local-classifiers/?threshold=1" in page.url and "onnx/tiny-s2p" in page.inner_text("#table-classifiers")
    journey.shot(page, "classifier-binary-view")
    journey.check(page)
    purge_broker()
