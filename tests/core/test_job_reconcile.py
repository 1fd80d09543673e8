"""The one reconciler (core.reconcile_jobs) sends again every kind of job whose message is gone: the
send after the launch's commit failed (the broker was away: the launch still answers, the job waits
with no `sent_at`), or the broker lost its messages (a Redis that came back empty: `sent_at` before
`core.broker.emptied_at`). It asks the broker once per pass and hands the answer to every type, runs
included. A copy sent too many does nothing: the job is claimed before it runs."""
from __future__ import annotations

import logging

from datetime import timedelta

import kombu.exceptions
import pytest
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from annotations.datasets import build, recipes
from annotations.datasets.models import DatasetBuild, DatasetVersion
from annotations.faces import jobs as face_jobs
from annotations.faces.models import AnonymizationJob, FaceVariant
from core import broker, dispatch
from core import reconcile as job_reconcile
from core.models import AuditEvent
from core.tasks import reconcile_jobs
from scoring import exports, imports
from scoring.models import ExportJob, ImportJob, ScoringProfile
from tests.support import faces as photos
from tests.support.dispatch import record_sends
from tests.support.vispr_release import write_release
from tests.support.vispr_world import make_world
from tests.conftest import with_submission_token

pytestmark = pytest.mark.django_db


def broker_down(monkeypatch):
    def refuse(task_name, args, kwargs, queue, rid):
        raise kombu.exceptions.OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    monkeypatch.setattr(dispatch, "_send", refuse)


def launch_build(admin_user, settings):
    make_world()
    return build.start_build(admin_user, recipes.preset("cprt-paper"), "v-lost")


def launch_faces(admin_user, settings):
    photos.store("2017_job_astro", photos.encoded(photos.astronaut()))
    return face_jobs.start_job(admin_user)


def launch_import(admin_user, settings, tmp_path):
    settings.CPRT_IMPORT_ROOT = tmp_path / "imports"
    write_release(settings.CPRT_IMPORT_ROOT / "vispr", {"test2017": {"2017_10000001": ["a4_gender"]}})
    return imports.start_import(admin_user, "vispr", "vispr", {})


def launch_export(admin_user, settings):
    profile = ScoringProfile.objects.create(name="p", lo1=0.75, lo2=0.5, lo3=0.25, provisional=True, weights=[330, 30, 5, 1])
    return exports.start_export(admin_user, {"splits": ["test"], "profile": profile, "include_annotations": True, "include_images": False,
                                             "destination": "zip", "repo_id": "", "public": False})


# type name -> (launch, model, task)
TYPES = {
    "dataset_build": (launch_build, DatasetBuild, build.TASK),
    "anonymization": (launch_faces, AnonymizationJob, face_jobs.TASK),
    "import": (launch_import, ImportJob, imports.TASK),
    "export": (launch_export, ExportJob, exports.TASK),
}


def launch(name, admin_user, settings, tmp_path):
    factory = TYPES[name][0]
    return factory(admin_user, settings, tmp_path) if factory is launch_import else factory(admin_user, settings)


@pytest.fixture
def no_loss(monkeypatch):
    monkeypatch.setattr(broker, "emptied_at", lambda timeout=1.0: None)


def test_every_job_type_is_registered_with_its_task():
    tasks = {t.name: t.task for t in job_reconcile.registered_types()}
    assert tasks == {"run": None, **{name: task for name, (_, _, task) in TYPES.items()}}


@pytest.mark.parametrize("name", list(TYPES))
def test_a_launch_while_the_broker_is_down_is_sent_by_the_reconciler_once_the_grace_is_over(
        name, admin_user, settings, tmp_path, monkeypatch, no_loss, caplog, django_capture_on_commit_callbacks):
    _, model, task = TYPES[name]
    # Loading the task modules the first time lets Celery's Django fixup call django.setup(), whose
    # LOGGING replaces the root handlers, caplog's among them: load them first, then listen.
    dispatch.registered(task)
    logging.getLogger().addHandler(caplog.handler)
    caplog.set_level("WARNING", logger="core.dispatch")
    broker_down(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        job = launch(name, admin_user, settings, tmp_path)  # the send fails after the commit: the launch does not
    job.refresh_from_db()
    assert job.status == "queued" and job.sent_at is None
    assert f"the broker did not take {task}" in caplog.text  # the log says so
    sent = record_sends(monkeypatch)  # the broker is back
    assert reconcile_jobs()[name]["resent"] == [] and sent == []  # within the grace: its send may still be on its way
    model.objects.filter(pk=job.pk).update(queued_at=timezone.now() - timedelta(seconds=settings.CPRT_JOB_SEND_GRACE_S + 1))
    assert reconcile_jobs()[name]["resent"] == [job.pk]
    assert sent == [(task, [job.pk])]
    assert model.objects.get(pk=job.pk).sent_at is not None
    assert reconcile_jobs()[name]["resent"] == [] and len(sent) == 1  # sent: not again


@pytest.mark.parametrize("name", list(TYPES))
def test_jobs_sent_before_the_broker_lost_its_messages_are_sent_again(
        name, admin_user, settings, tmp_path, monkeypatch, django_capture_on_commit_callbacks):
    _, model, task = TYPES[name]
    sent = record_sends(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        job = launch(name, admin_user, settings, tmp_path)
    sent_at = model.objects.get(pk=job.pk).sent_at
    assert sent == [(task, [job.pk])] and sent_at is not None
    monkeypatch.setattr(broker, "emptied_at", lambda timeout=1.0: sent_at - timedelta(seconds=1))  # emptied before: kept
    assert reconcile_jobs()[name]["resent"] == []
    monkeypatch.setattr(broker, "emptied_at", lambda timeout=1.0: timezone.now())  # Redis came back empty since the send
    assert reconcile_jobs()[name]["resent"] == [job.pk]
    assert sent == [(task, [job.pk])] * 2 and model.objects.get(pk=job.pk).sent_at > sent_at
    # A job a worker holds has its message: never sent again, whatever the broker lost.
    model.objects.filter(pk=job.pk).update(lease_owner="worker-1", lease_expires_at=timezone.now() + timedelta(minutes=5))
    assert reconcile_jobs()[name]["resent"] == []


def test_one_pass_asks_the_broker_once_and_hands_its_answer_to_every_type(monkeypatch):
    from inference import lifecycle

    lost_at, asked, runs_got = timezone.now(), [], []
    monkeypatch.setattr(broker, "emptied_at", lambda timeout=1.0: asked.append(1) or lost_at)
    monkeypatch.setattr(lifecycle, "reconcile", lambda emptied_at: runs_got.append(emptied_at) or {"redispatched": []})
    report = reconcile_jobs()
    assert asked == [1] and runs_got == [lost_at] and report["broker_emptied"] is True


def test_the_requeue_of_a_resume_waits_for_its_new_message(admin_user, settings, tmp_path, monkeypatch, no_loss,
                                                            django_capture_on_commit_callbacks):
    sent = record_sends(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        job = launch_build(admin_user, settings)
    assert build.cancel_build(admin_user, job)
    DatasetBuild.objects.filter(pk=job.pk).update(queued_at=timezone.now() - timedelta(hours=1))
    broker_down(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        assert build.resume_build(admin_user, DatasetBuild.objects.get(pk=job.pk))
    job.refresh_from_db()
    assert job.status == "queued" and job.sent_at is None and timezone.now() - job.queued_at < timedelta(minutes=1)
    sent = record_sends(monkeypatch)
    assert reconcile_jobs()["dataset_build"]["resent"] == []  # queued again just now: within the grace
    DatasetBuild.objects.filter(pk=job.pk).update(queued_at=timezone.now() - timedelta(hours=1))
    assert reconcile_jobs()["dataset_build"]["resent"] == [job.pk] and sent == [(build.TASK, [job.pk])]


def test_a_duplicate_build_message_does_no_second_build(admin_user, settings, monkeypatch, django_capture_on_commit_callbacks):
    sent = record_sends(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        job = launch_build(admin_user, settings)
    monkeypatch.setattr(broker, "emptied_at", lambda timeout=1.0: timezone.now())  # its message taken for lost; it was not
    reconcile_jobs()
    assert sent == [(build.TASK, [job.pk])] * 2
    first, second = (build.run_build(*args) for _, args in sent)
    assert first["status"] == "finished" and second == {"job_id": job.pk, "status": "finished", "claimed": False}
    assert DatasetVersion.objects.filter(name="v-lost").count() == 1
    assert AuditEvent.objects.filter(action="dataset.build.finished").count() == 1


def test_a_duplicate_anonymization_message_does_no_second_pass(admin_user, settings, monkeypatch, django_capture_on_commit_callbacks):
    sent = record_sends(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        job = launch_faces(admin_user, settings)
    monkeypatch.setattr(broker, "emptied_at", lambda timeout=1.0: timezone.now())
    reconcile_jobs()
    assert sent == [(face_jobs.TASK, [job.pk])] * 2
    first, second = (face_jobs.run_job(*args) for _, args in sent)
    assert first["status"] == "finished" and second["claimed"] is False
    assert FaceVariant.objects.filter(job=job).count() == 1
    assert AuditEvent.objects.filter(action="faces.finished").count() == 1


def test_the_old_per_type_reconcilers_are_not_on_the_beat_schedule(settings):
    from cprt_site.celery import app

    entry = app.conf.beat_schedule["core.reconcile_jobs"]
    assert entry["task"] == "core.reconcile_jobs" and entry["schedule"] == settings.CPRT_RECONCILE_EVERY_S
    reconcilers = sorted(name for name, e in app.conf.beat_schedule.items() if "reconcile" in e["task"])
    assert reconcilers == ["core.reconcile_jobs"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_build_launched_from_the_page_while_the_broker_is_down_answers_with_its_page(client_as, admin_user, monkeypatch):
    """On commit for real (no test transaction around the request): the failed send does not fail the request."""
    make_world()
    broker_down(monkeypatch)
    assert not transaction.get_connection().in_atomic_block
    response = client_as(admin_user).post(reverse("datasets:versions"), with_submission_token({"source": "cprt-paper", "vispr_split": "test",
                                                                                                "seed": "0", "name": "v1"}))
    job = DatasetBuild.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("datasets:build", args=[job.pk])
    assert job.status == "queued" and job.sent_at is None
