"""Anonymization jobs: claimed once, progress and totals, cancel, resume, lost workers, bad input."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotations.faces import jobs, variants
from annotations.faces.models import AnonymizationJob, FaceVariant
from core.models import AuditEvent
from tests.support import faces as photos
from tests.support.dispatch import record_sends


@pytest.fixture
def two_photos(db):
    return (photos.store("2017_job_astro", photos.encoded(photos.astronaut())),
            photos.store("2017_job_coffee", photos.encoded(photos.coffee())))


def test_job_makes_every_variant_and_counts(two_photos, admin_user, django_capture_on_commit_callbacks, monkeypatch):
    sent = record_sends(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        job = jobs.start_job(admin_user, split="test", method="pixelate")
    assert sent == [("annotations.anonymize_faces", [job.pk])] and job.status == "queued" and job.total == 2
    result = jobs.run_job(job.pk, threads=2)
    job.refresh_from_db()
    assert result == {"job_id": job.pk, "status": "finished", "claimed": True}
    assert (job.done, job.faces, job.images_without_face, job.residual_faces) == (2, 1, 1, 0)
    assert FaceVariant.objects.filter(job=job, method="pixelate").count() == 2
    assert list(AuditEvent.objects.filter(target_type="AnonymizationJob").values_list("action", flat=True).order_by("id")) == [
        "faces.launch", "faces.finished"]


def test_a_redelivered_message_does_nothing(two_photos, monkeypatch):
    job = jobs.start_job(None, dispatch_task=False)
    assert jobs.run_job(job.pk)["claimed"]
    calls = []
    monkeypatch.setattr(variants, "compute", lambda *a, **k: calls.append(a))
    assert jobs.run_job(job.pk) == {"job_id": job.pk, "status": "finished", "claimed": False}
    assert calls == [] and FaceVariant.objects.count() == 2


def test_only_one_execution_claims_a_job(two_photos):
    job = jobs.start_job(None, dispatch_task=False)
    first, second = jobs.claim(job.pk), jobs.claim(job.pk)
    assert first and second is None
    job.refresh_from_db()
    assert job.status == "running" and job.lease_owner == first.owner and job.lease_expires_at > timezone.now()


def test_cancel_stops_between_images_and_resume_finishes_without_repeats(two_photos, settings, monkeypatch):
    settings.CPRT_FACES_HEARTBEAT_S = 0
    job = jobs.start_job(None, dispatch_task=False)
    real_store = variants.store

    def store_then_cancel(*args, **kwargs):
        out = real_store(*args, **kwargs)
        jobs.cancel_job(None, AnonymizationJob.objects.get(pk=job.pk))
        return out

    monkeypatch.setattr(variants, "store", store_then_cancel)
    assert jobs.run_job(job.pk, threads=1)["status"] == "cancelled"
    job.refresh_from_db()
    assert job.status == "cancelled" and job.done == 1 and FaceVariant.objects.count() == 1
    first = FaceVariant.objects.get()
    monkeypatch.setattr(variants, "store", real_store)
    assert jobs.can_resume(job) and jobs.resume_job(None, job)
    assert jobs.run_job(job.pk, threads=1)["status"] == "finished"
    job.refresh_from_db()
    assert job.done == 2 and FaceVariant.objects.count() == 2 and FaceVariant.objects.filter(pk=first.pk).exists()
    assert "faces.resume" in AuditEvent.objects.values_list("action", flat=True)


def test_cancelling_a_queued_job_means_it_never_runs(two_photos):
    job = jobs.start_job(None, dispatch_task=False)
    assert jobs.cancel_job(None, job)
    assert jobs.run_job(job.pk)["claimed"] is False
    assert AnonymizationJob.objects.get(pk=job.pk).status == "cancelled" and not FaceVariant.objects.exists()
    assert not jobs.cancel_job(None, AnonymizationJob.objects.get(pk=job.pk))


def test_a_silent_worker_is_reconciled_and_the_old_execution_stops(two_photos, settings, monkeypatch, django_capture_on_commit_callbacks):
    sent = record_sends(monkeypatch)
    job = jobs.start_job(None, dispatch_task=False)
    old = jobs.claim(job.pk)
    assert jobs.heartbeat(old) == "running" and jobs.reconcile() == []  # a live lease: left alone
    # The worker stopped renewing its lease (CPRT_FACES_STALE_S after its last heartbeat).
    AnonymizationJob.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs.reconcile() == [job.pk]
    assert sent == [("annotations.anonymize_faces", [job.pk])]
    assert jobs.reconcile() == []  # queued now: nothing more to do
    assert jobs.heartbeat(old) is None  # the lost execution no longer holds it
    assert jobs.run_job(job.pk)["status"] == "finished"
    assert FaceVariant.objects.count() == 2


def test_an_unreadable_image_is_reported_and_the_rest_is_done(two_photos, make_image):
    broken = make_image("2017_job_missing")
    broken.file.storage.delete(broken.file.name)
    job = jobs.start_job(None, dispatch_task=False)
    assert jobs.run_job(job.pk)["status"] == "finished"
    job.refresh_from_db()
    assert job.done == 3 and job.faces == 1 and len(job.failures) == 1
    assert job.failures[0][0] == broken.pk and "is missing" in job.failures[0][1]
    assert jobs.can_resume(job)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"split": "nope"}, "split must be one of"),
    ({"method": "smudge"}, "method must be one of"),
    ({"threshold": 2.0}, "threshold must be a number between"),
    ({"split": "other"}, "No images with a stored file to anonymize in split other"),
])
def test_bad_launch_is_refused_and_changes_nothing(two_photos, kwargs, message):
    audit_before = AuditEvent.objects.count()
    with pytest.raises(variants.VariantError, match=message):
        jobs.start_job(None, dispatch_task=False, **kwargs)
    assert not AnonymizationJob.objects.exists() and AuditEvent.objects.count() == audit_before


def test_command_prints_the_counts(two_photos, capsys):
    call_command("anonymize_faces", "--split", "test", "--method", "fill", "--threshold", "0.5")
    out = capsys.readouterr().out
    assert "images processed: 2 of 2" in out and "faces found: 1" in out and "images with no face: 1" in out
    assert "(residual): 0" in out
    assert FaceVariant.objects.filter(method="fill").count() == 2


@pytest.mark.parametrize(("args", "message"), [
    (["--method", "smudge"], "method must be one of"),
    (["--threshold", "abc"], "must be numbers"),
    (["--threshold", "0"], "threshold must be a number between"),
    (["--split", "nope"], "split must be one of"),
])
def test_command_refuses_bad_arguments_and_changes_nothing(two_photos, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("anonymize_faces", *args)
    assert not AnonymizationJob.objects.exists() and not FaceVariant.objects.exists()


def test_a_failed_job_stores_its_error_scrubbed_of_secrets(two_photos, settings, monkeypatch):
    settings.HF_TOKEN = "hf_faces_SECRET_token_0123456789"

    def broken_store(*args, **kwargs):
        raise RuntimeError(f"storage refused the write (token {settings.HF_TOKEN})")

    monkeypatch.setattr(variants, "store", broken_store)
    job = jobs.start_job(None, dispatch_task=False)
    assert jobs.run_job(job.pk, threads=1)["status"] == "failed"
    job.refresh_from_db()
    assert job.status == "failed" and "storage refused the write" in job.error
    assert settings.HF_TOKEN not in job.error and "[redacted]" in job.error
    assert job.lease_owner == "" and job.lease_expires_at is None and jobs.can_resume(job)
