"""Face-anonymization pages: launch from the form, progress card, cancel/resume, variant page and bytes."""
from __future__ import annotations

import pytest

from annotations.faces import jobs
from annotations.faces.models import AnonymizationJob
from core.models import AuditEvent
from tests.support import faces as photos
from tests.support.dispatch import record_sends
from tests.conftest import with_submission_token


@pytest.fixture
def astro(db):
    return photos.store("2017_view_astro", photos.encoded(photos.astronaut()))


def test_launch_queues_a_job_and_dispatches_on_commit(astro, client_as, adjudicator, admin_user, monkeypatch, django_capture_on_commit_callbacks):
    sent = record_sends(monkeypatch)
    client = client_as(adjudicator)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/faces/", with_submission_token({"split": "test", "method": "fill", "threshold": "0.4", "margin": "0.1"}))
    job = AnonymizationJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/faces/jobs/{job.pk}/"
    assert (job.method, job.threshold, job.margin, job.image_ids, job.status) == ("fill", 0.4, 0.1, [astro.pk], "queued")
    assert sent == [("annotations.anonymize_faces", [job.pk])]
    page = client.get(f"/faces/jobs/{job.pk}/")
    assert b'hx-get="/faces/jobs/%d/progress/"' % job.pk in page.content and b"0 / 1 images" in page.content


@pytest.mark.parametrize(("data", "message"), [
    ({"split": "test", "method": "smudge", "threshold": "0.5", "margin": "0.2"}, b"method must be blur, pixelate or fill."),
    ({"split": "test", "method": "blur", "threshold": "abc", "margin": "0.2"}, b"threshold must be a number between 0.01 and 0.99."),
    ({"split": "test", "method": "blur", "threshold": "0.5", "margin": "3"}, b"margin must be between 0 and 1."),
    ({"split": "other", "method": "blur", "threshold": "0.5", "margin": "0.2"}, b"Choose a split that has images."),
])
def test_bad_launch_is_a_400_with_the_reason_and_changes_nothing(astro, client_as, adjudicator, admin_user, data, message):
    audit_before = AuditEvent.objects.count()
    response = client_as(admin_user).post("/faces/", with_submission_token(data))
    assert response.status_code == 400 and message in response.content
    assert not AnonymizationJob.objects.exists() and AuditEvent.objects.count() == audit_before


def test_job_page_lists_variants_with_residual_and_the_variant_page_shows_both_images(astro, client_as, adjudicator, admin_user):
    job = jobs.start_job(None, dispatch_task=False)
    jobs.run_job(job.pk, threads=1)
    variant = job.variants.get()
    client = client_as(adjudicator)
    page = client.get(f"/faces/jobs/{job.pk}/").content.decode()
    assert "2017_view_astro" in page and f"/faces/variants/{variant.pk}/" in page and "finished" in page
    detail = client.get(f"/faces/variants/{variant.pk}/").content.decode()
    assert f"/images/{astro.pk}/bytes" in detail and f"/faces/variants/{variant.pk}/bytes" in detail
    assert "residual pass: no face found" in detail and 'class="review-image"' in detail  # blurred until revealed
    raw = client.get(f"/faces/variants/{variant.pk}/bytes")
    assert raw.status_code == 200 and raw["Cache-Control"] == "private, no-store" and raw["Content-Type"] == "image/png"
    assert b"".join(raw.streaming_content) if raw.streaming else raw.content


def test_cancel_and_resume_from_the_progress_card(astro, client_as, adjudicator, admin_user, monkeypatch):
    record_sends(monkeypatch)
    job = jobs.start_job(None, dispatch_task=False)
    client = client_as(admin_user)
    card = client.post(f"/faces/jobs/{job.pk}/cancel/", HTTP_HX_REQUEST="true")
    assert card.status_code == 200 and b"cancelled" in card.content and b"Resume" in card.content
    card = client.post(f"/faces/jobs/{job.pk}/resume/", HTTP_HX_REQUEST="true")
    assert b"queued" in card.content
    assert AnonymizationJob.objects.get(pk=job.pk).status == "queued"
    assert list(AuditEvent.objects.order_by("id").values_list("action", flat=True))[-2:] == ["faces.cancel", "faces.resume"]
