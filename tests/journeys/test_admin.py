"""The admin's journey in Chromium, against the fake OpenAI-compatible server (tests/fakes) and a real Celery
worker (tests/support/workers.py): launch a judge run and an annotate run from /runs/new/ with the default form plus
what a person fills, watch them finish, cancel and resume a run, open its metrics, export and download the
dataset, cancel a queued export and resume it until a worker builds it, and make an API token."""
from __future__ import annotations


import pytest

from inference.models import Run
from scoring.models import ExportJob
from tests.conftest import make_user
from tests.fakes.fixtures import FAKE_KEY
from tests.fakes.openai_server import FakeOpenAIServer
from tests.support.workers import celery_worker, purge_broker, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def fake_openai(monkeypatch, settings):
    with FakeOpenAIServer(delay=0.05, record=False) as server:
        env = {"OPENAI_API_KEY": FAKE_KEY, "OPENAI_BASE_URL": server.url + "/v1", "OPENAI_MAX_RPM": "0", "CPRT_RUN_HEARTBEAT_S": "0.5"}
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = FAKE_KEY, server.url + "/v1"
        yield server


def _launch(journey, page, task: str, name: str, concurrency: str = "") -> Run:
    """/runs/new/ as it loads, plus what a person fills: the task, a model name, a strategy for a judge run."""
    journey.visit(page, "/runs/new/", f"admin-run-new-{task}")
    page.select_option("select[name=task]", task)
    page.wait_for_selector(f"#launch-form[data-kind='{task}']")  # the form re-renders for the chosen kind
    page.wait_for_load_state("networkidle")
    page.fill("input[name=model_name]", "gpt-5.1")
    if task == "judge":
        page.select_option("select[name=strategy]", index=1)
    if concurrency:
        page.fill("input[name=concurrency]", concurrency)
    before = set(Run.objects.values_list("pk", flat=True))
    with page.expect_navigation():
        page.click("button[name=action][value=launch]")
    assert "/runs/new/" not in page.url, page.inner_text("main")[:600]
    run = Run.objects.exclude(pk__in=before).get()
    journey.shot(page, name)
    journey.check(page)
    return run


def _wait_status(page, status: str, timeout: float = 90):
    page.wait_for_selector(f"#run-progress .badge.status-{status}", timeout=timeout * 1000)


def test_admin_journey(journey, fake_openai, make_image, model_annotators, set_labels):
    from scoring.models import ScoringProfile
    from scoring.services.scores import recompute_scores

    images = [make_image(f"2017_0000200{i}", color=(30 * i, 120, 60)) for i in range(6)]
    for image in images:  # a consensus to score the runs against and to export
        for annotator in model_annotators:
            set_labels(image, annotator, {"age": 1.0, "gov_ids": 1.0 if image.pk % 2 else 0.0})
    profile = ScoringProfile.active()
    profile.consensus_annotators.set(model_annotators)
    recompute_scores(profile)
    make_user("root", "admin", superuser=True)
    page = journey.page_for("root")
    purge_broker()
    with celery_worker(queues="default,api,gpu", concurrency=1):

        # A judge run from the default form: the page follows its progress until it has finished.
        judge = _launch(journey, page, "judge", "admin-judge-run-launched")
        _wait_status(page, "finished")
        page.wait_for_selector("#run-predictions tbody a")  # the predictions table refreshed with the progress
        journey.shot(page, "admin-judge-run-finished")
        assert Run.objects.get(pk=judge.pk).outcome_counts == {"ok": 6}

        # Its metrics page, and back.
        with page.expect_navigation():
            page.click("text=Metrics of this run")
        journey.shot(page, "admin-judge-run-metrics")
        journey.check(page)
        with page.expect_navigation():
            page.click(".run-links >> text=Run page")
        assert page.url.rstrip("/").endswith(f"/runs/{judge.pk}")

        # An annotate run: the run page shows each image's labels.
        annotate = _launch(journey, page, "annotate", "admin-annotate-run-launched")
        _wait_status(page, "finished")
        page.wait_for_selector("#run-predictions tbody a")
        assert "yes:" in page.inner_text("#run-predictions")
        journey.shot(page, "admin-annotate-run-finished")
        journey.visit(page, f"/scoring/runs/{annotate.pk}/", "admin-annotate-run-metrics")

        # Cancel a slow run from its page, then resume it until it finishes.
        fake_openai.delay = 1.5
        # One request at a time, so that the cancel stops it with images left (a run cancelled after its
        # last item offers no Resume).
        slow = _launch(journey, page, "judge", "admin-slow-run-launched", concurrency="1")
        page.click("#run-progress button:has-text('Cancel')")
        _wait_status(page, "cancelled", timeout=30)
        journey.shot(page, "admin-run-cancelled")
        fake_openai.delay = 0.05
        wait_for(lambda: not Run.objects.get(pk=slow.pk).is_active, timeout=30, what="the cancelled run to stop")
        assert Run.objects.get(pk=slow.pk).done_count < Run.objects.get(pk=slow.pk).total
        page.reload()
        page.click("#run-progress button:has-text('Resume')")
        _wait_status(page, "finished")
        journey.shot(page, "admin-run-resumed-finished")
        assert Run.objects.get(pk=slow.pk).done_count == 6

        # The runs list, then an export (zip, the form's defaults) downloaded from its page.
        journey.visit(page, "/runs/", "admin-runs")
        journey.visit(page, "/scoring/exports/", "admin-exports")
        with page.expect_navigation():
            page.click("text=Start the export")
        page.wait_for_selector("#export-progress a.button", timeout=90_000)
        journey.shot(page, "admin-export-finished")
        with page.expect_download() as download:
            page.click("#export-progress a.button")
        assert download.value.suggested_filename.endswith(".zip")
        assert ExportJob.objects.get().status == "finished"
        journey.check(page)

    # An API token from the Django admin, then the API answers with it.
    journey.visit(page, "/admin/authtoken/tokenproxy/add/", "admin-token-add")
    page.select_option("select[name=user]", label="root")
    with page.expect_navigation():
        page.click("input[name=_save]")
    from rest_framework.authtoken.models import Token

    key = Token.objects.get(user__username="root").key
    response = page.request.get(journey.base + "/api/runs/", headers={"Authorization": f"Token {key}"})
    assert response.status == 200 and response.json()["count"] == 3
    journey.shot(page, "admin-token-made")

    # Cancel an export while no worker runs (it waits, queued), then resume it: a worker builds it.
    journey.visit(page, "/scoring/exports/", "admin-exports-again")
    with page.expect_navigation():
        page.click("text=Start the export")
    page.click("#export-progress button:has-text('Cancel')")
    page.wait_for_selector("#export-progress .badge.status-cancelled")
    journey.shot(page, "admin-export-cancelled")
    export = ExportJob.objects.latest("pk")
    assert export.status == "cancelled" and not export.downloadable
    page.click("#export-progress button:has-text('Resume')")
    page.wait_for_selector("#export-progress .badge.status-queued")
    with celery_worker(queues="default", concurrency=1):
        page.wait_for_selector("#export-progress a.button", timeout=90_000)
    journey.shot(page, "admin-export-resumed-finished")
    assert ExportJob.objects.get(pk=export.pk).status == "finished"
    journey.check(page)
