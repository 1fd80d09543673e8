"""An export job is built by one worker at a time: each delivery of run_export claims it with a
lease first, and a second delivery while a live worker builds it does nothing."""
from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.db import connection
from django.utils import timezone

from scoring import cprt_bench, exports
from scoring.models import ExportJob
from scoring.tasks import reconcile_exports, run_export
from tests.support.exports import make_job


# Two deliveries in two threads, each with its own database connection: the job row must be committed.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_deliveries_of_one_export_build_it_once(world, settings, monkeypatch, tmp_path):
    settings.CPRT_EXPORT_ROOT = tmp_path / "exports"
    job = make_job(world, include_images=False)
    building, release = threading.Event(), threading.Event()
    builds = []
    real_export = cprt_bench.export_dataset

    def slow_export(*args, **kwargs):
        builds.append(threading.get_ident())
        building.set()
        release.wait(timeout=30)  # the first worker is still building when the second delivery comes
        return real_export(*args, **kwargs)

    monkeypatch.setattr(cprt_bench, "export_dataset", slow_export)
    results = {}

    def deliver(name):
        try:
            results[name] = run_export.run(job.pk)
        finally:
            connection.close()

    first = threading.Thread(target=deliver, args=("first",))
    first.start()
    assert building.wait(timeout=30)
    second = threading.Thread(target=deliver, args=("second",))
    second.start()
    second.join(timeout=30)
    release.set()
    first.join(timeout=60)
    assert len(builds) == 1, f"{len(builds)} builds of one export"
    assert results["second"]["skipped"] == "another worker is building this export"
    assert results["first"]["status"] == ExportJob.STATUS_FINISHED
    job.refresh_from_db()
    assert job.status == ExportJob.STATUS_FINISHED and job.downloadable
    assert (settings.CPRT_EXPORT_ROOT / job.zip_path).is_file()  # the second delivery deleted nothing
    assert job.lease_owner == "" and job.lease_expires_at is None


@pytest.mark.django_db
def test_a_delivery_after_the_lease_expired_takes_the_job_over(world, settings, tmp_path):
    settings.CPRT_EXPORT_ROOT = tmp_path / "exports"
    job = make_job(world, include_images=False)
    ExportJob.objects.filter(pk=job.pk).update(
        status=ExportJob.STATUS_RUNNING, lease_owner="a-dead-worker", lease_expires_at=timezone.now() - dt.timedelta(seconds=1),
        heartbeat_at=timezone.now() - dt.timedelta(seconds=400),
    )
    assert exports.run_export(job.pk)["status"] == ExportJob.STATUS_FINISHED


@pytest.mark.django_db
def test_the_reconciler_fails_an_expired_lease_not_a_live_or_queued_one(world, settings):
    settings.CPRT_EXPORT_STALE_S = 300
    now = timezone.now()
    lost, live, queued = make_job(world), make_job(world), make_job(world)
    ExportJob.objects.filter(pk=lost.pk).update(status="running", lease_owner="w1", lease_expires_at=now - dt.timedelta(seconds=1), heartbeat_at=now)
    ExportJob.objects.filter(pk=live.pk).update(status="running", lease_owner="w2", lease_expires_at=now + dt.timedelta(seconds=200),
                                                heartbeat_at=now - dt.timedelta(hours=1))
    assert reconcile_exports() == {"failed": [lost.pk]}
    assert ExportJob.objects.get(pk=live.pk).status == "running"
    assert ExportJob.objects.get(pk=queued.pk).status == "queued"
    # The live worker's delivery, repeated, does nothing.
    assert exports.run_export(live.pk)["skipped"] == "another worker is building this export"
