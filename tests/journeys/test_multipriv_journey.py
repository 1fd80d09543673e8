"""MultiPriv in Chromium: the admin looks at the imported persons, launches a re-identification run and a
profile-reconstruction run from /runs/new/ (the default form plus the kind, a model, and for pairs a sample
size and seed) against the fake OpenAI server with a real worker, and reads both on the MultiPriv pages."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from benchmarks.multipriv.importer import import_multipriv
from benchmarks.multipriv.demo import write_release
from inference.models import Run
from tests.conftest import make_user
from tests.journeys.test_admin import fake_openai  # noqa: F401 - the fixture
from tests.support.workers import celery_worker, purge_broker

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _launch(journey, page, task: str, fill: dict) -> Run:
    journey.visit(page, "/runs/new/", f"multipriv-run-new-{task}")
    page.select_option("select[name=task]", task)
    page.wait_for_selector(f"#launch-form[data-kind='{task}']")  # the form re-renders for the chosen kind
    page.wait_for_load_state("networkidle")
    page.fill("input[name=model_name]", "gpt-5.1")
    for name, value in fill.items():
        page.fill(f"input[name={name}]", value)
    before = set(Run.objects.values_list("pk", flat=True))
    with page.expect_navigation():
        page.click("button[name=action][value=launch]")
    assert "/runs/new/" not in page.url, page.inner_text("main")[:600]
    return Run.objects.exclude(pk__in=before).get()


def test_multipriv_journey(journey, fake_openai):  # noqa: F811
    with tempfile.TemporaryDirectory() as tmp:
        import_multipriv(write_release(Path(tmp)))
    make_user("root", "admin", superuser=True)
    page = journey.page_for("root")
    journey.visit(page, "/benchmarks/multipriv/persons/", "multipriv-persons")
    with page.expect_navigation():
        page.click("text=person_1")
    page.click("label:has-text('Show / blur B1')")  # the ID card, unblurred on request
    journey.shot(page, "multipriv-person")
    journey.check(page)
    purge_broker()
    with celery_worker(queues="default,api,gpu", concurrency=1):
        reid = _launch(journey, page, "multipriv-reid", {"opt-limit": "8", "opt-seed": "5"})
        page.wait_for_selector("#run-progress .badge.status-finished", timeout=90_000)
        journey.shot(page, "multipriv-reid-run-finished")
        profile = _launch(journey, page, "multipriv-profile", {})
        page.wait_for_selector("#run-progress .badge.status-finished", timeout=90_000)
        journey.shot(page, "multipriv-profile-run-finished")
    assert Run.objects.get(pk=reid.pk).done == 8 and Run.objects.get(pk=profile.pk).done == 4
    journey.visit(page, "/runs/", "multipriv-runs")
    with page.expect_navigation():
        page.click("nav >> text=Benchmarks")  # the top bar's hub of the benchmarks beside CPRT
    journey.shot(page, "benchmarks-hub")
    with page.expect_navigation():
        page.click("main >> a[href='/benchmarks/multipriv/']")
    journey.shot(page, "multipriv-leaderboard")
    assert "Re-identification" in page.inner_text("main") and "gpt-5.1" in page.inner_text("main")
    with page.expect_navigation():
        page.click(f"a[href='/benchmarks/multipriv/runs/{reid.pk}/']")
    journey.shot(page, "multipriv-reid-figures")
    journey.check(page)
    journey.visit(page, f"/benchmarks/multipriv/runs/{profile.pk}/", "multipriv-profile-figures")
    assert "By category" in page.inner_text("main")
