"""Face anonymization in Debian's Chromium (Playwright): an admin submits the anonymization form with its
defaults, follows the htmx progress card to the end, compares a variant with its original (blurred until
revealed), launches a judge run on the anonymized images from the run form, exports with faces removed
from the export form, and opens the three-way comparison page. Screenshots go to test-artifacts/.

The `browser` fixture is tests/journeys/conftest.py's.
"""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from annotations.faces import jobs
from annotations.faces.models import AnonymizationJob, FaceVariant
from annotations.models import Image
from core import dispatch
from inference.models import Run
from scoring.models import ExportJob
from tests.conftest import make_user
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.support import faces as photos
from tests.support.browser import ARTIFACTS, log_in
from tests.support.permission_cases.scoring import add_results, make_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def worker_thread(monkeypatch):
    """The anonymization task, sent by name, runs on a thread, as a worker would, so the page sees it queued,
    then progress. Other tasks are sent as usual (eagerly here)."""
    threads = []
    send = dispatch.send_now

    def run(job_id):
        try:
            jobs.run_job(job_id, threads=1)
        finally:
            connection.close()

    def send_now(task_name, args=(), kwargs=None, queue=dispatch.DEFAULT_QUEUE):
        if task_name != jobs.TASK:
            return send(task_name, args, kwargs, queue)
        thread = threading.Thread(target=run, args=tuple(args))
        thread.start()
        threads.append(thread)

    monkeypatch.setattr(dispatch, "send_now", send_now)
    yield
    for thread in threads:
        thread.join(timeout=60)


def shot(page, name):
    page.screenshot(path=str(ARTIFACTS / f"faces-{name}.png"), full_page=True)


def test_anonymize_judge_export_and_compare(browser, live_server, openai_server, eager_celery, worker_thread, settings, tmp_path):
    settings.CPRT_FACES_HEARTBEAT_S = 0.2
    settings.CPRT_EXPORT_ROOT = tmp_path / "exports"
    astro = photos.store("2017_journey_astro", photos.encoded(photos.astronaut()))
    photos.store("2017_journey_coffee", photos.encoded(photos.coffee()))
    make_user("boss", "admin", superuser=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    base = live_server.url
    log_in(page, base, "boss")

    # 1. The anonymization form, submitted with its defaults (every split, blur, 0.5, 0.2).
    page.click("nav >> text=Faces")
    page.wait_for_selector("#anonymize-form")
    shot(page, "1-form")
    page.click("#anonymize-form button[type=submit]")
    page.wait_for_url(f"{base}/faces/jobs/*/")
    page.wait_for_selector("#faces-progress .badge.status-finished", timeout=60_000)
    page.wait_for_selector("text=compare")  # the page reloaded itself when the job ended
    job = AnonymizationJob.objects.get()
    assert (job.method, job.threshold, job.margin, job.status) == ("blur", 0.5, 0.2, "finished")
    assert page.inner_text("#faces-progress").count("2 / 2 images") == 1
    shot(page, "2-job-finished")

    # 2. The variant beside its original, both blurred until revealed.
    page.click("text=compare >> nth=0")
    page.wait_for_selector("img[alt^='anonymized']")
    assert "residual pass: no face found" in page.inner_text("main") or "residual pass: no face found" in page.content()
    page.click("label[for=unblur-variant]")
    page.click("label[for=unblur-original]")
    shot(page, "3-variant-revealed")

    # 3. A judge run on the anonymized images, from the launch form.
    # The Faces page's way in: the launch form with the kind and provider chosen in its address (choosing them
    # on the page re-renders the form over htmx; test_launch_every_kind drives that swap).
    page.goto(f"{base}/runs/new/?task=judge&provider=openai")
    page.wait_for_selector("#launch-form[data-kind='judge']")
    page.fill("input[name=model_name]", "gpt-5.1")
    page.select_option("select[name=strategy]", "zero_shot")
    page.select_option("select[name=face_variant]", "blur:0.5:0.2")
    shot(page, "4-run-form")
    page.click("button[value=launch]")
    page.wait_for_selector("text=on anonymized images: blur")
    assert "/runs/new/" not in page.url, page.inner_text("form")
    pixel = Run.objects.get(face_variant__method="blur")
    assert pixel.face_variant == {"method": "blur", "threshold": 0.5, "margin": 0.2}
    shot(page, "5-run-on-variants")

    # 4. An export with faces removed, from the export form.
    page.goto(f"{base}/scoring/exports/")
    page.check("input[name=include_images]")
    page.select_option("select[name=face_variant]", "blur:0.5:0.2")
    page.click("text=Start the export")
    page.wait_for_url(f"{base}/scoring/exports/*/")
    export = ExportJob.objects.get()
    assert export.face_variant == pixel.face_variant
    shot(page, "6-export")

    # 5. The three-way comparison: original and prompt-level runs of the same model and strategy.
    pixel.refresh_from_db()
    assert pixel.status == Run.STATUS_FINISHED
    scores = dict(pixel.results.values_list("image_id", "score"))
    images = list(FaceVariant.objects.values_list("image", flat=True))
    rows = [Image.objects.get(pk=i) for i in images]
    original = make_run(model="gpt-5.1", strategy="zero_shot")
    add_results(original, [(img, "ok", min(1.0, scores[img.pk] + 0.2)) for img in rows])
    original.save()
    prompt = make_run(model="gpt-5.1", strategy="zero_shot", cf=True)
    add_results(prompt, [(img, "ok", 0.05) for img in rows])
    prompt.save()
    page.click("nav >> text=Counterfactual")
    page.click("main >> text=Three-way comparison")
    page.click(f"a[href='?original={original.pk}&prompt={prompt.pk}&pixel={pixel.pk}']")
    page.wait_for_selector("#three-way-overall")
    text = page.inner_text("#three-way-overall")
    for label in (f"original (#{original.pk})", f"prompt-level (#{prompt.pk})", f"pixel-level (#{pixel.pk})"):
        assert label in text
    page.click(f"label[for=show-p-{astro.pk}]")
    shot(page, "7-three-way")
