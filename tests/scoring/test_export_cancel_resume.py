"""Cancel and resume of an export from its page: a queued export is cancelled at once, a running one
stops at its worker's next heartbeat and delivers nothing; a failed, cancelled or worker-lost export is
queued again and built exactly once. Admins only."""
from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from core.models import AuditEvent
from scoring import cprt_bench, exports
from scoring.models import ExportJob
from scoring.tasks import reconcile_exports
from tests.support.dispatch import record_sends
from tests.support.exports import make_job

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def builds(monkeypatch):
    """Counts the builds of an export (each call of cprt_bench.export_dataset)."""
    calls = []
    real = cprt_bench.export_dataset

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(cprt_bench, "export_dataset", counted)
    return calls


def url(name: str, job: ExportJob) -> str:
    return reverse(f"scoring:{name}", kwargs={"job_id": job.pk})


def actions(job: ExportJob) -> list[str]:
    return list(AuditEvent.objects.filter(target_type="ExportJob", target_id=str(job.pk)).order_by("id").values_list("action", flat=True))


def lose_worker(job: ExportJob) -> None:
    """The worker building the job was killed: its lease expired without renewal."""
    past = timezone.now() - dt.timedelta(seconds=1)
    ExportJob.objects.filter(pk=job.pk).update(status="running", lease_owner="host:1:dead", lease_expires_at=past,
                                                started_at=past, heartbeat_at=past, done=2, total=20)


def test_a_queued_export_is_cancelled_at_once_and_never_built(world, export_root, client_as, admin_user, builds):
    job = make_job(world, include_images=False)
    card = client_as(admin_user).post(url("export_cancel", job), **HX)
    assert card.status_code == 200
    page = card.content.decode()
    assert 'id="export-progress"' in page and "status-cancelled" in page and "hx-trigger" not in page  # no more polling
    assert url("export_resume", job) in page and url("export_cancel", job) not in page
    job.refresh_from_db()
    assert job.status == "cancelled" and job.finished_at is not None
    assert exports.run_export(job.pk) == {"job_id": job.pk, "status": "cancelled"}  # its message, delivered later
    assert builds == [] and not export_root.exists()
    assert actions(job) == ["export.cancel"]
    assert AuditEvent.objects.get(action="export.cancel").actor == admin_user


def test_cancel_from_the_plain_page_redirects_with_a_message(world, export_root, client_as, admin_user):
    job = make_job(world, include_images=False)
    client = client_as(admin_user)
    response = client.post(url("export_cancel", job))
    assert response.status_code == 302 and response["Location"] == url("export", job)
    page = client.get(response["Location"]).content.decode()
    assert f"Export #{job.pk}: cancelled; nothing is delivered" in page
    again = client.post(url("export_cancel", job), follow=True).content.decode()
    assert f"Export #{job.pk} is cancelled; there is nothing to cancel." in again
    assert actions(job) == ["export.cancel"]  # the refused second cancel changed and audited nothing


# The worker runs in a thread with its own database connection: the rows must be committed.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_running_export_stops_at_its_next_heartbeat_and_delivers_nothing(world, export_root, settings, client, admin_user, monkeypatch):
    settings.CPRT_EXPORT_HEARTBEAT_S = 0.05
    job = make_job(world, include_images=False, created_by=admin_user)
    building = threading.Event()
    steps = []

    def slow_export(out_dir, *args, progress, **kwargs):
        out_dir.mkdir(parents=True)
        (out_dir / "README.md").write_text("half an export\n")
        building.set()
        for step in range(600):  # 30 s at most: a long build that reports its progress
            progress(step, 600)
            steps.append(step)
            time.sleep(0.05)
        raise AssertionError("the build was never told to stop")

    monkeypatch.setattr(cprt_bench, "export_dataset", slow_export)
    result = {}

    def worker():
        try:
            result.update(exports.run_export(job.pk))
        finally:
            connection.close()

    thread = threading.Thread(target=worker)
    thread.start()
    assert building.wait(timeout=30)
    assert ExportJob.objects.get(pk=job.pk).status == "running"
    client.force_login(admin_user)
    card = client.post(url("export_cancel", job), **HX).content.decode()
    assert "status-cancelling" in card and "hx-trigger" in card  # the card keeps polling until the worker confirms
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert result == {"job_id": job.pk, "status": "cancelled"}
    job.refresh_from_db()
    assert job.status == "cancelled" and job.zip_path == "" and job.summary == {} and job.lease_owner == ""
    assert not any((export_root / str(job.pk)).iterdir())  # the working folder is removed; no zip
    assert len(steps) < 600
    assert actions(job) == ["export.cancel", "export.cancelled"]
    page = client.get(url("export_progress", job)).content.decode()
    assert "status-cancelled" in page and url("export_resume", job) in page and "Download" not in page


def test_a_failed_export_is_resumed_and_built_once(world, export_root, client_as, admin_user, monkeypatch, builds,
                                                    django_capture_on_commit_callbacks):
    job = make_job(world, include_images=False)
    real = cprt_bench.export_dataset

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(cprt_bench, "export_dataset", broken)
    assert exports.run_export(job.pk)["status"] == "failed"
    monkeypatch.setattr(cprt_bench, "export_dataset", real)
    sent = record_sends(monkeypatch)
    client = client_as(admin_user)
    assert url("export_resume", job) in client.get(url("export", job)).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        card = client.post(url("export_resume", job), **HX).content.decode()
    assert "status-queued" in card and "disk full" not in card
    assert sent == [("scoring.run_export", [job.pk])]
    job.refresh_from_db()
    assert (job.status, job.error, job.finished_at, job.done) == ("queued", "", None, 0)
    assert exports.run_export(job.pk)["status"] == "finished"
    job.refresh_from_db()
    assert job.downloadable and (export_root / job.zip_path).is_file()
    # The same message delivered twice (acks late, a redelivery): nothing is built again.
    assert exports.run_export(job.pk) == {"job_id": job.pk, "status": "finished"}
    assert len(builds) == 1
    assert actions(job) == ["export.failed", "export.resume", "export.finished"]
    assert AuditEvent.objects.get(action="export.resume").data["error"].endswith("OSError: disk full")


def test_a_worker_lost_export_can_be_resumed_before_and_after_the_reconciler(world, export_root, client_as, admin_user, builds,
                                                                               monkeypatch, django_capture_on_commit_callbacks):
    sent = record_sends(monkeypatch)
    client = client_as(admin_user)
    before, after = make_job(world, include_images=False), make_job(world, include_images=False)
    lose_worker(after)
    assert reconcile_exports() == {"failed": [after.pk]}  # `after`: failed by the reconciler, "worker stopped"
    lose_worker(before)  # `before`: still `running` under an expired lease (no reconciler pass yet)
    assert url("export_resume", before) in client.get(url("export", before)).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(url("export_resume", before), **HX).status_code == 200
        assert client.post(url("export_resume", after), **HX).status_code == 200
    assert sent == [("scoring.run_export", [before.pk]), ("scoring.run_export", [after.pk])]
    for job in (before, after):
        job.refresh_from_db()
        assert (job.status, job.lease_owner, job.lease_expires_at) == ("queued", "", None)
        assert exports.run_export(job.pk)["status"] == "finished"
        assert exports.run_export(job.pk)["status"] == "finished"  # a duplicate delivery after the resume
    assert len(builds) == 2
    assert "export.worker_lost" in actions(after) and actions(before)[-2:] == ["export.resume", "export.finished"]


def test_of_two_resumes_one_queues_the_job_and_one_message_is_sent(world, export_root, client_as, admin_user, monkeypatch,
                                                                    django_capture_on_commit_callbacks):
    job = make_job(world, include_images=False)
    ExportJob.objects.filter(pk=job.pk).update(status="failed", error="boom")
    sent = record_sends(monkeypatch)
    seen_twice = [ExportJob.objects.get(pk=job.pk), ExportJob.objects.get(pk=job.pk)]  # two tabs, both showing "failed"
    with django_capture_on_commit_callbacks(execute=True):
        assert exports.resume_export(admin_user, seen_twice[0]) is True
        assert exports.resume_export(admin_user, seen_twice[1]) is False
    assert sent == [("scoring.run_export", [job.pk])] and actions(job) == ["export.resume"]


def test_resume_is_refused_for_a_finished_queued_or_live_export(world, export_root, client_as, admin_user):
    finished, queued, live = (make_job(world) for _ in range(3))
    ExportJob.objects.filter(pk=finished.pk).update(status="finished")
    ExportJob.objects.filter(pk=live.pk).update(status="running", lease_owner="host:1:alive",
                                                lease_expires_at=timezone.now() + dt.timedelta(seconds=300))
    client = client_as(admin_user)
    for job in (finished, queued, live):
        status = ExportJob.objects.get(pk=job.pk).status
        page = client.post(url("export_resume", job), follow=True).content.decode()
        assert "can be resumed" in page and ExportJob.objects.get(pk=job.pk).status == status
        assert url("export_resume", job) not in client.get(url("export_progress", job)).content.decode()
    assert not AuditEvent.objects.filter(action="export.resume").exists()


def test_cancel_and_resume_are_for_admins_only_and_post_only(world, export_root, client_as, admin_user, adjudicator, reviewer_a):
    job = make_job(world)
    for name in ("export_cancel", "export_resume"):
        assert client_as(reviewer_a).post(url(name, job)).status_code == 403
        assert client_as(adjudicator).post(url(name, job)).status_code == 403
        assert client_as(admin_user).get(url(name, job)).status_code == 405
        assert client_as(admin_user).post(reverse(f"scoring:{name}", kwargs={"job_id": 999999})).status_code == 404
    assert ExportJob.objects.get(pk=job.pk).status == "queued" and actions(job) == []
