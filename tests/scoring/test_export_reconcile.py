"""A running export writes a heartbeat; one whose worker went silent is marked failed by the beat reconciler."""
from __future__ import annotations

import datetime as dt
import time

import pytest
from django.utils import timezone

from core.models import AuditEvent
from scoring import cprt_bench, exports
from scoring.models import ExportJob
from scoring.tasks import reconcile_exports
from tests.support.exports import make_job


def _running(world, heartbeat_age_s: float) -> ExportJob:
    job = make_job(world)
    ExportJob.objects.filter(pk=job.pk).update(
        status=ExportJob.STATUS_RUNNING, started_at=timezone.now() - dt.timedelta(hours=1),
        heartbeat_at=timezone.now() - dt.timedelta(seconds=heartbeat_age_s),
    )
    return job


@pytest.mark.django_db
def test_a_silent_running_export_is_marked_failed_and_a_live_one_is_left_alone(world, settings):
    settings.CPRT_EXPORT_STALE_S = 300
    lost = _running(world, 301)
    alive = _running(world, 20)
    queued = make_job(world)
    assert reconcile_exports() == {"failed": [lost.pk]}
    lost.refresh_from_db()
    assert lost.status == ExportJob.STATUS_FAILED and "no heartbeat for more than 300 s" in lost.error
    assert ExportJob.objects.get(pk=alive.pk).status == ExportJob.STATUS_RUNNING
    assert ExportJob.objects.get(pk=queued.pk).status == ExportJob.STATUS_QUEUED  # waiting for a worker is not lost
    assert AuditEvent.objects.filter(action="export.worker_lost", target_id=str(lost.pk)).count() == 1
    # The lost job's message, delivered again later, does not run it.
    assert exports.run_export(lost.pk) == {"job_id": lost.pk, "status": ExportJob.STATUS_FAILED}
    assert reconcile_exports() == {"failed": []}


@pytest.mark.django_db
def test_the_reconciler_is_on_the_beat_schedule(world, settings, monkeypatch):
    """Beat runs the one reconciler of every job type (core.reconcile_jobs); it fails a lost export."""
    from core import broker
    from core.tasks import reconcile_jobs
    from cprt_site.celery import app

    entry = app.conf.beat_schedule["core.reconcile_jobs"]
    assert entry["task"] == "core.reconcile_jobs" and entry["options"]["queue"] == "default"
    monkeypatch.setattr(broker, "emptied_at", lambda timeout=1.0: None)
    settings.CPRT_EXPORT_STALE_S = 300
    lost = _running(world, 301)
    assert reconcile_jobs()["export"]["reconciled"] == {"failed": [lost.pk]}
    assert ExportJob.objects.get(pk=lost.pk).status == ExportJob.STATUS_FAILED


# The heartbeat thread has its own database connection: it must see the committed job row.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_heartbeat_beats_while_a_long_step_reports_no_progress(world, settings, monkeypatch, tmp_path):
    settings.CPRT_EXPORT_ROOT = tmp_path / "exports"
    settings.CPRT_EXPORT_HEARTBEAT_S = 0.05
    job = make_job(world, include_images=False)
    seen = []
    real_export = cprt_bench.export_dataset

    def slow_export(*args, **kwargs):
        first = ExportJob.objects.get(pk=job.pk).heartbeat_at
        time.sleep(0.6)  # a long zip or upload: no progress callback meanwhile
        seen.append((first, ExportJob.objects.get(pk=job.pk).heartbeat_at))
        return real_export(*args, **kwargs)

    monkeypatch.setattr(cprt_bench, "export_dataset", slow_export)
    assert exports.run_export(job.pk)["status"] == ExportJob.STATUS_FINISHED
    (first, later), = seen
    assert first is not None and later > first
