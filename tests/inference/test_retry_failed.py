"""Retry the failed items of a run: exactly the images whose stored outcome is `error` are sent again,
once each (refusals and unparseable answers stay); through the service, the run page, the API and
`manage.py retry_failed`."""
from __future__ import annotations

import json
import threading

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core.models import AuditEvent
from inference import dispatching, execution, launching, prompts, runs
from inference.models import Run, RunResult
from inference.selection import Selection
from tests.fakes import openai_server as ofake
from tests.fakes.fixtures import *  # noqa: F401,F403


def finished_run_with_failures(openai_server, capture) -> Run:
    """Five images, one at a time: the 1st and 4th answer 400 (final errors), the 2nd a refusal."""
    spec = launching.LaunchSpec(
        task="judge", provider="openai", model_name="gpt-5.1", strategy="zero_shot", counterfactual_faces=False,
        prompt_version=prompts.DEFAULT_VERSION["judge"], selection=Selection(), concurrency=1,
    )
    with capture(execute=False):  # no broker: the test runs the chunk itself
        run = launching.launch_run(None, spec)
    default = openai_server.default_reply
    openai_server.queue(ofake.error(400, "image too large"), ofake.refusal(), default, ofake.error(400, "bad image"))
    execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"error": 2, "refused": 1, "ok": 2}
    openai_server.requests.clear()
    return run


def failed_ids(run: Run) -> list[int]:
    return sorted(RunResult.objects.filter(run=run, outcome="error").values_list("image_id", flat=True))


def sent_image_ids(openai_server, run: Run) -> list[int]:
    """Which of the run's images the fake was asked about, by their bytes."""
    from tests.fakes.openai_server import request_images
    from annotations.models import Image

    by_bytes = {}
    for image in Image.objects.filter(pk__in=run.image_ids):
        with image.file.open("rb") as fh:
            by_bytes[fh.read()] = image.pk
    return sorted(by_bytes[request_images(r["json"])[0]] for r in openai_server.requests)


def test_retry_sends_exactly_the_failed_items_once(openai_server, images, admin_user, django_capture_on_commit_callbacks, eager_celery):
    run = finished_run_with_failures(openai_server, django_capture_on_commit_callbacks)
    failed = failed_ids(run)
    with django_capture_on_commit_callbacks(execute=True):
        assert runs.retry_failed(admin_user, run) == 2
    assert sent_image_ids(openai_server, run) == failed
    run.refresh_from_db()
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"ok": 4, "refused": 1}
    event = AuditEvent.objects.get(action="run.retry_failed")
    assert event.actor == admin_user and event.data == {"images": 2, "previous_status": "finished"}
    assert runs.retry_failed(admin_user, run) == 0  # nothing failed any more
    assert len(openai_server.requests) == 2


def test_an_active_run_is_not_retried(openai_server, images, admin_user, django_capture_on_commit_callbacks):
    run = finished_run_with_failures(openai_server, django_capture_on_commit_callbacks)
    Run.objects.filter(pk=run.pk).update(status=Run.STATUS_RUNNING)
    run.refresh_from_db()
    assert not runs.can_retry_failed(run) and runs.retry_failed(admin_user, run) == 0
    assert len(failed_ids(run)) == 2


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_retries_at_once_send_each_item_once(openai_server, images, admin_user, monkeypatch):
    monkeypatch.setattr(dispatching, "dispatch", lambda *args, **kwargs: 0)
    spec = launching.LaunchSpec(
        task="judge", provider="openai", model_name="gpt-5.1", strategy="zero_shot", counterfactual_faces=False,
        prompt_version=prompts.DEFAULT_VERSION["judge"], selection=Selection(), concurrency=1,
    )
    run = launching.launch_run(None, spec)
    openai_server.queue(ofake.error(400, "a"), ofake.error(400, "b"), ofake.error(400, "c"))
    execution.run_chunk(run.pk, run.image_ids)
    failed = failed_ids(run)
    assert len(failed) == 3
    sent: list[int] = []
    lock = threading.Lock()

    def record(run_id, image_ids=None, **options):
        with lock:
            sent.extend(image_ids)
        return 1

    monkeypatch.setattr(dispatching, "dispatch", record)
    barrier = threading.Barrier(2)
    counts = []

    def retry():
        try:
            copy = Run.objects.get(pk=run.pk)
            barrier.wait()
            counts.append(runs.retry_failed(admin_user, copy))
        finally:
            connection.close()

    threads = [threading.Thread(target=retry) for _ in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert sorted(counts) == [0, 3]
    assert sorted(sent) == failed
    assert AuditEvent.objects.filter(action="run.retry_failed").count() == 1


def test_page_button(openai_server, images, admin_user, client_as, django_capture_on_commit_callbacks, eager_celery):
    run = finished_run_with_failures(openai_server, django_capture_on_commit_callbacks)
    client = client_as(admin_user)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Retry failed items" in page and f"/runs/{run.pk}/retry-failed/" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/runs/{run.pk}/retry-failed/", follow=True)
    assert "re-dispatched 2 images whose answer was an error" in response.content.decode()
    assert len(openai_server.requests) == 2
    run.refresh_from_db()
    assert run.outcome_counts == {"ok": 4, "refused": 1}
    assert "Retry failed items" not in client.get(f"/runs/{run.pk}/").content.decode()
    refused = client.post(f"/runs/{run.pk}/retry-failed/", follow=True).content.decode()
    assert "no failed items to retry" in refused and len(openai_server.requests) == 2


def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def test_api(openai_server, images, admin_user, reviewer_a, django_capture_on_commit_callbacks, eager_celery):
    run = finished_run_with_failures(openai_server, django_capture_on_commit_callbacks)
    url = f"/api/runs/{run.pk}/retry-failed/"
    assert api(reviewer_a).post(url).status_code == 403
    assert api(admin_user).post("/api/runs/999999/retry-failed/").status_code == 404
    assert api(admin_user).get(url).status_code == 405
    assert len(failed_ids(run)) == 2 and not openai_server.requests
    with django_capture_on_commit_callbacks(execute=True):
        response = api(admin_user).post(url)
    assert response.status_code == 200 and response.json()["redispatched"] == 2
    assert len(openai_server.requests) == 2
    again = api(admin_user).post(url)
    assert again.status_code == 409 and "no failed items to retry" in again.json()["detail"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_command_here(openai_server, images, django_capture_on_commit_callbacks, capsys, monkeypatch):
    monkeypatch.setattr(dispatching, "dispatch", lambda *args, **kwargs: 0)  # the launch: the test runs the chunk itself
    run = finished_run_with_failures(openai_server, django_capture_on_commit_callbacks)
    sent = []
    monkeypatch.setattr(dispatching, "dispatch", lambda *args, **kwargs: sent.append(args))
    call_command("retry_failed", str(run.pk), "--here", "--json")
    assert not sent  # --here sends no message: the lanes are worked in this process
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "finished" and summary["errors"] == 0 and summary["outcomes"] == {"ok": 4, "refused": 1}
    assert len(openai_server.requests) == 2
    with pytest.raises(CommandError, match="no failed items to retry"):
        call_command("retry_failed", str(run.pk))
    with pytest.raises(CommandError, match="No run #999999"):
        call_command("retry_failed", "999999")


def test_command_queues_for_the_workers(openai_server, images, django_capture_on_commit_callbacks, capsys, monkeypatch):
    run = finished_run_with_failures(openai_server, django_capture_on_commit_callbacks)
    failed = failed_ids(run)
    sent = []
    monkeypatch.setattr(dispatching, "dispatch", lambda run_id, image_ids=None, **options: sent.append(sorted(image_ids)) or 1)
    with django_capture_on_commit_callbacks(execute=True):
        call_command("retry_failed", str(run.pk))
    assert sent == [failed]
    assert "queued" in capsys.readouterr().out
