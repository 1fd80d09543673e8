"""/healthz and /readyz: liveness without login or database; readiness names every check, 503 when one fails."""
from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from core import heartbeats
from core.models import ProcessHeartbeat
from core.processes import stop_process
from tests.support.workers import ROOT, celery_worker, purge_broker, wait_for, worker_env


def all_alive(queues=("default", "api", "gpu")):
    heartbeats.record("worker", "celery@host-a", list(queues))
    heartbeats.beat_tick()


def test_healthz_needs_no_login_and_no_database(client):
    # No django_db mark: any query would raise.
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_healthz_and_readyz_refuse_other_methods(client):
    assert client.post("/healthz").status_code == 405
    assert client.post("/readyz").status_code == 405


@pytest.mark.django_db
def test_readyz_passes_when_every_check_passes(client):
    all_alive()
    response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 200, body
    assert set(body["checks"]) == {"database", "broker", "storage", "worker:default", "worker:api", "worker:gpu", "beat"}
    assert all(check["status"] == "ok" for check in body["checks"].values()), body
    assert "celery@host-a" in body["checks"]["worker:api"]["message"]
    assert body["status"] == "ok"


@pytest.mark.django_db
def test_readyz_fails_for_a_queue_no_worker_serves(client):
    all_alive(queues=("default", "api"))
    response = client.get("/readyz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["worker:gpu"] == {"status": "error", "message": "no worker consumes the gpu queue"}
    assert checks["worker:default"]["status"] == "ok"


@pytest.mark.django_db
def test_a_queue_no_deployment_serves_can_be_left_out(client, settings):
    settings.CPRT_READY_QUEUES = ["default", "api"]
    all_alive(queues=("default", "api"))
    response = client.get("/readyz")
    assert response.status_code == 200, response.json()
    assert "worker:gpu" not in response.json()["checks"]


@pytest.mark.django_db
def test_readyz_fails_on_a_stale_worker_heartbeat_or_beat_tick(client, settings):
    all_alive()
    old = timezone.now() - timedelta(seconds=settings.CPRT_READY_WORKER_STALE_S + 5)
    ProcessHeartbeat.objects.filter(kind="worker", queue="api").update(seen_at=old)
    ProcessHeartbeat.objects.filter(kind="beat").update(seen_at=timezone.now() - timedelta(seconds=settings.CPRT_READY_BEAT_STALE_S + 5))
    response = client.get("/readyz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["worker:api"]["status"] == "error"
    assert "the last heartbeat (celery@host-a) was" in checks["worker:api"]["message"]
    assert checks["worker:default"]["status"] == "ok"
    assert checks["beat"]["status"] == "error" and "beat's last tick was" in checks["beat"]["message"]


@pytest.mark.django_db
def test_readyz_without_any_beat_tick(client):
    heartbeats.record("worker", "celery@host-a", ["default", "api", "gpu"])
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["beat"]["message"] == "beat's tick (core.beat_tick) has never been recorded"


@pytest.mark.django_db
def test_readyz_fails_when_the_broker_is_down(client, settings):
    all_alive()
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{port}/0"
    response = client.get("/readyz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["broker"]["status"] == "error" and "ConnectionError" in checks["broker"]["message"]
    assert checks["database"]["status"] == "ok"


@pytest.mark.django_db
def test_readyz_answers_in_time_when_a_check_hangs(client, settings):
    """A broker that accepts the connection and never answers: the check fails, the answer comes in time."""
    all_alive()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted = []
    threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True).start()
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    settings.CPRT_READY_TIMEOUT_S = 0.5
    try:
        started = time.monotonic()
        response = client.get("/readyz")
        elapsed = time.monotonic() - started
    finally:
        listener.close()
    assert response.status_code == 503
    assert response.json()["checks"]["broker"]["status"] == "error"
    assert elapsed < 1.5, elapsed


@pytest.mark.django_db
def test_readyz_fails_when_storage_is_not_writable(client, settings, tmp_path):
    all_alive()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    settings.CPRT_EXPORT_ROOT = blocker / "exports"
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["storage"]["status"] == "error"


@pytest.mark.worker
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_real_worker_and_beat_make_the_stack_ready(client, settings, monkeypatch, tmp_path):
    """On the configured broker (filesystem by default, Redis with CELERY_BROKER_URL): a worker's
    heartbeat marks its queues live, beat's tick reaches it, and a stopped worker is no longer live."""
    settings.CPRT_READY_QUEUES = ["default", "api"]
    monkeypatch.setenv("CPRT_BEAT_TICK_S", "1")
    purge_broker()
    assert client.get("/readyz").status_code == 503
    beat_log = open(tmp_path / "beat.log", "wb")
    beat = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "cprt_site", "beat", "--loglevel", "INFO", "-s", str(tmp_path / "schedule")],
        cwd=ROOT, env=worker_env(), stdout=beat_log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        with celery_worker(queues="default,api", concurrency=1):
            body = wait_for(lambda: (r := client.get("/readyz")).status_code == 200 and r.json(), timeout=240, what="/readyz 200")
            assert body["checks"]["worker:default"]["status"] == "ok"
            assert body["checks"]["beat"]["message"].startswith("last tick")
        # A clean shutdown removes the worker's heartbeat rows at once.
        response = client.get("/readyz")
        assert response.status_code == 503
        assert response.json()["checks"]["worker:api"]["message"] == "no worker consumes the api queue"
    finally:
        stop_process(beat, 15)
        beat_log.close()
