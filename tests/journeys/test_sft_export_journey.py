"""Journey: an admin submits the fine-tuning (SFT) export form from the exports page with its defaults,
a real worker builds the job, the page follows its progress, and the admin downloads the zip.

Debian's Chromium through Playwright (sync API) against live_server; screenshots in test-artifacts/.
The `browser` fixture (tests/journeys/conftest.py) skips without /usr/bin/chromium unless CPRT_REQUIRE_BROWSER=1.
"""
from __future__ import annotations

import zipfile

import pytest

from scoring.models import ExportJob, ScoringProfile
from scoring.services.scores import recompute_scores
from tests.conftest import make_user
from tests.support.browser import ARTIFACTS, log_in
from tests.support.workers import celery_worker, purge_broker

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_submit_the_sft_form_with_defaults_and_download_the_pairs(browser, live_server, make_image, set_labels, model_annotators,
                                                                 settings, monkeypatch, tmp_path):
    root = tmp_path / "exports"
    monkeypatch.setenv("CPRT_EXPORT_ROOT", str(root))  # the worker process reads it from its environment
    settings.CPRT_EXPORT_ROOT = root
    settings.CPRT_PROTECTED_ROOTS = {**settings.CPRT_PROTECTED_ROOTS, "exports": root}
    profile = ScoringProfile.objects.create(name="journey", lo1=0.75, lo2=0.5, lo3=0.25, source="test", weights=[330, 30, 5, 1])
    profile.consensus_annotators.set(model_annotators)
    profile.activate()  # the form's default profile
    for number, (vispr_id, split, present) in enumerate([("2017_1", "train", {"biometrics": 1}), ("2017_2", "train", {"age": 1}),
                                                         ("2017_3", "test", {"documents": 1})]):
        image = make_image(vispr_id, split=split, color=(50 * number, 20, 20))
        for annotator in model_annotators:
            set_labels(image, annotator, present)
    recompute_scores(profile)
    make_user("sft-admin", "admin")
    purge_broker()

    page = browser.new_page(accept_downloads=True)
    log_in(page, live_server.url, "sft-admin")
    page.goto(f"{live_server.url}/scoring/exports/")
    form = page.locator("form#sft-export")
    assert form.locator("input[name=sft-format][value=hf]").is_checked()
    assert form.locator("select[name=sft-split]").input_value() == "train"
    page.screenshot(path=str(ARTIFACTS / "sft-export-form.png"), full_page=True)
    with celery_worker(queues="default", concurrency=1):
        form.get_by_role("button", name="Start the fine-tuning export").click()
        page.wait_for_url(f"{live_server.url}/scoring/exports/*/")
        download_link = page.get_by_role("link", name="Download cprt-sft-hf-")
        download_link.wait_for(timeout=120_000)  # htmx polls the progress card until the worker is done
    job = ExportJob.objects.get()
    assert job.kind == "sft" and job.status == "finished", job.error
    assert page.locator("#sft-summary").inner_text().count("train") >= 1
    page.screenshot(path=str(ARTIFACTS / "sft-export-finished.png"), full_page=True)
    with page.expect_download() as info:
        download_link.click()
    saved = tmp_path / info.value.suggested_filename
    info.value.save_as(saved)
    assert saved.name == f"cprt-sft-hf-{job.pk}.zip"
    with zipfile.ZipFile(saved) as archive:
        names = sorted(n.split("/", 1)[1] for n in archive.namelist())
    assert names == ["README.md", "data/train.parquet", "evaluation/test.parquet"]
