"""Journey: an admin opens Imports from the Images page, starts the import of a VISPR release folder that is
on the server (under CPRT_IMPORT_ROOT) with the form's defaults, a real worker runs it, and the page
follows the job to its end; then the VISPR mapping page shows the release's descriptions.

Debian's Chromium through Playwright (sync API) against live_server; screenshots in test-artifacts/journeys/.
"""
from __future__ import annotations

import pytest

from annotations.models import Image, Label
from scoring.models import ImportJob
from tests.conftest import make_user
from tests.support.vispr_release import write_release
from tests.support.workers import celery_worker, purge_broker

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SPLITS = {"test2017": {"2017_10000001": ["a4_gender", "a9_face_complete"], "2017_10000002": ["a0_safe"]},
          "val2017": {"2017_20000001": ["a73_landmark"]}, "train2017": {"2017_30000001": ["a31_passport"]}}


def test_start_a_vispr_import_from_the_page_and_see_it_finish(journey, settings, monkeypatch, tmp_path):
    root = tmp_path / "imports"
    write_release(root / "vispr-2017", SPLITS)
    monkeypatch.setenv("CPRT_IMPORT_ROOT", str(root))  # the worker reads it from its environment
    settings.CPRT_IMPORT_ROOT = root
    make_user("import-admin", "admin")
    purge_broker()

    page = journey.log_in("import-admin")
    journey.visit(page, "/")
    with page.expect_navigation():
        page.locator("main").get_by_role("link", name="Import data").click()
    assert "vispr-2017" in page.inner_text("main")  # the folder found under the import root
    # A path outside the import folder is refused on the page, nothing queued.
    page.fill("input[name=path]", "../elsewhere")
    with journey.expect_status(400), page.expect_navigation():
        page.get_by_role("button", name="Start the import").click()
    assert "outside the import folder" in page.inner_text("main")
    assert not ImportJob.objects.exists()
    journey.shot(page, "import-refused")

    page.fill("input[name=path]", "vispr-2017")
    with celery_worker(queues="default", concurrency=1):
        page.get_by_role("button", name="Start the import").click()
        page.wait_for_url(f"{journey.base}/scoring/imports/*/")
        page.locator("#import-progress .import-result").wait_for(timeout=120_000)  # htmx polls the card until the job is over
    job = ImportJob.objects.get()
    assert job.status == "finished", job.error
    card = page.inner_text("#import-progress")
    assert "finished" in card and "Images added: 3" in card and "test2017 → test" in card and "train2017" in card
    journey.shot(page, "import-finished")
    assert Image.objects.count() == 3 and Label.objects.filter(annotator__name="vispr").count() == 3 * 21

    with page.expect_navigation():
        page.locator("nav").get_by_role("link", name="Images").click()
    journey.shot(page, "import-images")
    with page.expect_navigation():
        page.get_by_role("link", name="VISPR labels → CPRT attributes").click()
    text = page.inner_text("main")
    assert "Full face" in text and "none: no label" in text
    journey.shot(page, "vispr-mapping")
    journey.check(page)
