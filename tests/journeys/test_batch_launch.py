"""Browser journey: launch a batch run from /runs/new/ (default form + mode=batch), watch its provider
batch on the run page, retry a failed request in a follow-up batch. Debian's Chromium via Playwright."""
from __future__ import annotations

import re

import pytest

from inference import dispatching
from inference.batch import lifecycle
from inference.batch.models import BatchRequest, ProviderBatch
from inference.models import Run
from tests.conftest import make_user
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support.browser import ARTIFACTS, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def blank_consensus_value(page):
    # Before issue 14's fix the consensus-value select had no blank option; make sure it has one.
    page.evaluate("""() => { const s = document.querySelector('select[name=attribute_value]');
                             if (![...s.options].some(o => o.value === '')) s.add(new Option('—', ''), 0); s.value = ''; }""")


def test_launch_a_batch_run_from_the_page_and_retry_a_failure(browser, live_server, openai_server, images, eager_celery, monkeypatch):
    steps = []
    monkeypatch.setattr(dispatching, "start_batch", lambda run_id: steps.append(run_id))  # the test plays Celery beat
    make_user("boss", "admin")
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    log_in(page, live_server.url, "boss")

    page.goto(f"{live_server.url}/runs/new/")
    page.select_option("select[name=task]", "judge")
    page.wait_for_selector("#launch-form[data-kind='judge']")  # the form re-renders for the chosen kind
    page.wait_for_load_state("networkidle")
    page.select_option("select[name=strategy]", "zero_shot")
    page.fill("input[name=model_name]", "gpt-5.1")
    page.select_option("select[name=mode]", "batch")
    blank_consensus_value(page)
    page.click("button[value=estimate]")
    page.wait_for_selector(".estimate-modes, .errorlist", timeout=10_000)
    page.screenshot(path=str(ARTIFACTS / "batch-1-launch-form.png"), full_page=True)
    assert not page.query_selector(".errorlist"), page.inner_text("form")
    assert "batch ≈ $" in page.inner_text(".estimate-modes")
    page.screenshot(path=str(ARTIFACTS / "batch-1-launch-form.png"), full_page=True)
    blank_consensus_value(page)  # the estimate re-rendered the form
    page.click("button[value=launch]")
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    run = Run.objects.get()
    assert run.mode == "batch" and steps == [run.pk]

    openai_server.batch_outcomes = {f"run{run.pk}-item{run.image_ids[0]}-judge": "fail"}
    for _ in range(3):
        lifecycle.step(run.pk)
    page.reload()
    batch = ProviderBatch.objects.get(run=run)
    assert batch.provider_batch_id in page.inner_text(".batches")
    page.screenshot(path=str(ARTIFACTS / "batch-2-run-page.png"), full_page=True)
    page.click("text=Retry in a follow-up batch")  # eager Celery: the follow-up batch is submitted at once
    page.wait_for_selector("text=retrying 1 failed requests batch")
    openai_server.batch_outcomes = {}
    for _ in range(3):
        lifecycle.step(run.pk)
    page.reload()
    run.refresh_from_db()
    assert run.status == "finished" and run.results.count() == 5
    assert BatchRequest.objects.get(run=run, image_id=run.image_ids[0]).attempts == 2
    assert "finished" in page.inner_text("#run-progress")
    page.screenshot(path=str(ARTIFACTS / "batch-3-finished.png"), full_page=True)
