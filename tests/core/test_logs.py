"""Log lines: timestamp, level, logger, request id and job id; JSON on request; the request id goes
with the jobs a request launches, into the worker's log lines; gunicorn's access log; no secret."""
from __future__ import annotations

import io
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from core import logs
from core.dispatch import send_on_commit
from core.secrets import ScrubFilter
from cprt_site.celery import app, job_id_of
from tests.fakes.fixtures import eager_celery  # noqa: F401  (a fixture)
from tests.support.workers import celery_worker, purge_broker, wait_for

ROOT = Path(__file__).resolve().parents[2]
HEX_ID = re.compile(r"^[0-9a-f]{32}$")
TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR|CRITICAL) (\S+) \[req=(\S+) job=(\S+) task=(\S+)\] (.*)$")


@pytest.fixture
def log_lines():
    """The root logger's lines in the app's text format, as a list that grows while the test runs."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.addFilter(ScrubFilter())
    handler.addFilter(logs.ContextFilter())
    handler.setFormatter(logs.TextFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lambda: buffer.getvalue().splitlines()
    finally:
        root.removeHandler(handler)


@app.task(name="tests.logs.log_job", bind=True)
def log_job(self, job_id: int, note: str = "") -> dict:
    logging.getLogger("tests.logs").info("working on %s", note)
    return {"request_id": logs.request_id.get(), "job_id": logs.job_id.get(), "task": logs.task_name.get()}


# --- the request id --------------------------------------------------------------------------------

def test_a_sane_incoming_request_id_is_kept_and_answered(client):
    response = client.get("/accounts/login/", HTTP_X_REQUEST_ID="edge-7f3a.B_1")
    assert response["X-Request-ID"] == "edge-7f3a.B_1"


@pytest.mark.parametrize("incoming", [None, "", "has space", "semi;colon", "x" * 65, "é-accent", "a\nb"])
def test_an_absent_or_odd_request_id_is_replaced_by_a_new_one(client, incoming):
    headers = {} if incoming is None else {"HTTP_X_REQUEST_ID": incoming}
    first = client.get("/accounts/login/", **headers)["X-Request-ID"]
    second = client.get("/accounts/login/", **headers)["X-Request-ID"]
    assert HEX_ID.match(first) and HEX_ID.match(second) and first != second


def test_a_64_character_request_id_is_accepted(client):
    assert client.get("/accounts/login/", HTTP_X_REQUEST_ID="a" * 64)["X-Request-ID"] == "a" * 64


@pytest.mark.urls("tests.core.log_urls")
@pytest.mark.django_db
def test_a_request_s_log_line_carries_its_request_id(client, log_lines):
    # (The ping is never sent: the test's transaction does not commit. The worker test below sends it.)
    response = client.get("/launch-ping/?value=hello", HTTP_X_REQUEST_ID="req-123")
    assert response.status_code == 200 and response["X-Request-ID"] == "req-123"
    mine = [TEXT_LINE.match(line) for line in log_lines() if "launching ping hello" in line]
    assert len(mine) == 1 and mine[0], log_lines()
    assert mine[0].group(1, 2, 3, 4) == ("INFO", "tests.logs", "req-123", "-")
    # Outside the request the id is gone again.
    logging.getLogger("tests.logs").info("after the request")
    assert "[req=- job=- task=-] after the request" in log_lines()[-1]


# --- into the jobs ----------------------------------------------------------------------------------

def test_job_id_is_taken_from_the_task_arguments():
    from inference.tasks import run_chunk
    from scoring.tasks import run_export

    assert job_id_of(run_export, [12], {}) == "12"
    assert job_id_of(run_export, [], {"job_id": 5}) == "5"
    assert job_id_of(run_chunk, [7, [1, 2], 4], {"lane": 0}) == "7"
    assert job_id_of(app.tasks["cprt_site.ping"], ["x"], {}) is None
    assert job_id_of(run_export, [1, 2, 3], {}) is None  # arguments that do not fit: no guess


def test_the_task_hooks_set_and_restore_the_log_context(log_lines):
    token = logs.request_id.set("outer-request")
    try:
        result = log_job.apply(args=[41], kwargs={"note": "eager"}, headers={logs.TASK_HEADER: "from-header"}).get()
        assert result == {"request_id": "from-header", "job_id": "41", "task": "tests.logs.log_job"}
        assert logs.request_id.get() == "outer-request" and logs.job_id.get() is None and logs.task_name.get() is None
    finally:
        logs.request_id.reset(token)
    line = next(TEXT_LINE.match(line) for line in log_lines() if "working on eager" in line)
    assert line.group(3, 4, 5) == ("from-header", "41", "tests.logs.log_job")
    # A header that is not a sane id is not logged as one.
    assert log_job.apply(args=[1], headers={logs.TASK_HEADER: "bad id\n"}).get()["request_id"] is None


@pytest.mark.django_db
def test_send_on_commit_carries_the_request_id_of_its_request(eager_celery, django_capture_on_commit_callbacks):
    token = logs.request_id.set("launching-request")
    try:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            send_on_commit("tests.logs.log_job", [9])
    finally:
        logs.request_id.reset(token)
    # The commit comes after the request's context ended: the id was taken when the job was launched.
    assert logs.request_id.get() is None
    (send,) = callbacks
    assert send().get() == {"request_id": "launching-request", "job_id": "9", "task": "tests.logs.log_job"}


@pytest.mark.worker
@pytest.mark.urls("tests.core.log_urls")
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_job_launched_by_a_request_logs_with_its_request_id_in_the_worker(client, log_lines):
    purge_broker()
    rid = f"journey-{uuid.uuid4().hex[:12]}"
    value = f"v{uuid.uuid4().hex[:8]}"
    log_path = Path(django_settings.DATA_DIR) / f"logs-worker-{rid}.log"
    with celery_worker(queues="default", concurrency=1, log_path=log_path):
        response = client.get(f"/launch-ping/?value={value}", HTTP_X_REQUEST_ID=rid)
        assert response["X-Request-ID"] == rid
        wait_for(lambda: f"ping: {value}" in log_path.read_text(), timeout=90, what="the worker's ping line")
    worker_lines = [TEXT_LINE.match(line) for line in log_path.read_text().splitlines() if f"ping: {value}" in line]
    assert len(worker_lines) == 1 and worker_lines[0], log_path.read_text()[-3000:]
    assert worker_lines[0].group(1, 2, 3, 5) == ("INFO", "cprt_site.celery", rid, "cprt_site.ping")
    # The web side's line has the same id.
    assert any(f"[req={rid} " in line and f"launching ping {value}" in line for line in log_lines())


# --- JSON, secrets, gunicorn ------------------------------------------------------------------------

JSON_PROBE = """
import logging, django
django.setup()
from django.conf import settings
from core import logs
log = logging.getLogger("probe")
token = logs.request_id.set("json-req-1")
log.warning("the key is %s", settings.OPENAI_API_KEY)
try:
    raise ValueError("failed with " + settings.OPENAI_API_KEY)
except ValueError:
    log.exception("it broke")
logs.request_id.reset(token)
log.info("no request")
"""


def run_probe(tmp_path, script: str, **variables) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOG_", "OPENAI_API_KEY"))}
    env.update(DJANGO_SETTINGS_MODULE="cprt_site.settings", CPRT_DATA_DIR=str(tmp_path / "data"), DEBUG="1", **variables)
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_json_lines_have_the_fields_and_no_secret(tmp_path):
    key = "sk-json-" + uuid.uuid4().hex
    (tmp_path / "openai_key").write_text(key + "\n")
    done = run_probe(tmp_path, JSON_PROBE, LOG_FORMAT="json", OPENAI_API_KEY_FILE=str(tmp_path / "openai_key"))
    assert done.returncode == 0, done.stderr
    assert key not in done.stderr + done.stdout
    records = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]  # every line is JSON
    probe = [r for r in records if r["logger"] == "probe"]
    assert [r["level"] for r in probe] == ["WARNING", "ERROR", "INFO"]
    for record in probe:
        assert set(record) >= {"time", "level", "logger", "message", "request_id", "job_id", "task"}
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", record["time"])
    assert probe[0]["message"] == "the key is [redacted]" and probe[0]["request_id"] == "json-req-1"
    assert "ValueError: failed with [redacted]" in probe[1]["exception"]
    assert probe[2]["request_id"] is None


def test_text_is_the_default_format(tmp_path):
    done = run_probe(tmp_path, JSON_PROBE, OPENAI_API_KEY="sk-text-" + "q" * 20 + "Z9x")
    assert done.returncode == 0, done.stderr
    first = next(line for line in done.stderr.splitlines() if " probe " in line)
    assert TEXT_LINE.match(first).group(1, 2, 3, 6) == ("WARNING", "probe", "json-req-1", "the key is [redacted]")
    assert "qqqqqqqqqqqqqqqqqqqqZ9x" not in done.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_gunicorn_logs_each_request_in_the_app_format(tmp_path):
    """deploy/gunicorn.conf.py (as docker-compose.yml runs it): JSON access lines with the request id."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOG_")}
    env.update(DJANGO_SETTINGS_MODULE="cprt_site.settings", CPRT_DATA_DIR=str(tmp_path / "data"), DEBUG="1", LOG_FORMAT="json")
    out = open(tmp_path / "gunicorn.log", "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "cprt_site.wsgi:application", "--config", "deploy/gunicorn.conf.py",
         "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        def answered():
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}/accounts/login/", headers={"X-Request-ID": "gunicorn-req-1"})
                with urllib.request.urlopen(request, timeout=5) as response:
                    return response.headers["X-Request-ID"]
            except OSError:
                return None
        assert wait_for(answered, timeout=180, what="gunicorn to answer") == "gunicorn-req-1"
        wait_for(lambda: "gunicorn.access" in (tmp_path / "gunicorn.log").read_text(), timeout=10, what="the access line")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        out.close()
    lines = [line for line in (tmp_path / "gunicorn.log").read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # gunicorn's own lines too: every line is JSON
    access = [r for r in records if r["logger"] == "gunicorn.access"]
    assert access and access[0]["request_id"] == "gunicorn-req-1" and access[0]["level"] == "INFO"
    assert '"GET /accounts/login/ HTTP/1.1" 200' in access[0]["message"]
    assert any(r["logger"] == "gunicorn.error" and "Booting worker" in r["message"] for r in records)


# --- ids on every line of a request or a job (issue 36) ----------------------------------------------

def context_of(lines: list[str], text: str) -> list[tuple]:
    """(level, logger, req, job, task) of each line holding `text`."""
    return [m.group(1, 2, 3, 4, 5) for m in map(TEXT_LINE.match, lines) if m and text in m.group(6)]


@pytest.mark.django_db
def test_django_request_lines_carry_the_request_id(client, log_lines, settings):
    settings.CPRT_METRICS_TOKEN, settings.CPRT_METRICS_ALLOW = "t" * 32, []
    assert client.get("/metrics", HTTP_X_REQUEST_ID="req-403").status_code == 403
    assert client.get("/no-such-page/", HTTP_X_REQUEST_ID="req-404").status_code == 404
    assert context_of(log_lines(), "Forbidden: /metrics") == [("WARNING", "django.request", "req-403", "-", "-")]
    assert context_of(log_lines(), "Not Found: /no-such-page/") == [("WARNING", "django.request", "req-404", "-", "-")]
    logging.getLogger("tests.logs").info("between requests")
    assert context_of(log_lines(), "between requests") == [("INFO", "tests.logs", "-", "-", "-")]


@pytest.mark.django_db
@pytest.mark.urls("tests.core.log_urls")
def test_a_500_line_carries_the_request_id(client, log_lines):
    client.raise_request_exception = False
    assert client.get("/broken/", HTTP_X_REQUEST_ID="req-500").status_code == 500
    assert context_of(log_lines(), "Internal Server Error: /broken/") == [("ERROR", "django.request", "req-500", "-", "-")]


@pytest.mark.django_db
def test_readiness_failures_are_one_warning_per_change_of_state(client, log_lines, settings, monkeypatch):
    from core import health, heartbeats

    monkeypatch.setattr(health, "_failing", frozenset())
    settings.CPRT_READY_QUEUES = ["default"]
    heartbeats.beat_tick()
    for n in range(5):  # an outage: no worker for the queue, probed five times
        assert client.get("/readyz", HTTP_X_REQUEST_ID=f"probe-{n}").status_code == 503
    settings.CPRT_READY_QUEUES = ["default", "api"]  # another check fails too: the state changed
    assert client.get("/readyz", HTTP_X_REQUEST_ID="probe-5").status_code == 503
    heartbeats.record("worker", "celery@host-a", ["default", "api"])
    for n in range(6, 9):
        assert client.get("/readyz", HTTP_X_REQUEST_ID=f"probe-{n}").status_code == 200
    lines = [m.group(1, 2, 3, 6) for m in map(TEXT_LINE.match, log_lines()) if m and m.group(2) in ("core.health", "django.request")]
    assert lines == [
        ("WARNING", "core.health", "probe-0", "not ready: worker:default: no worker consumes the default queue"),
        ("WARNING", "core.health", "probe-5", "not ready: worker:api: no worker consumes the api queue; "
                                              "worker:default: no worker consumes the default queue"),
        ("INFO", "core.health", "probe-6", "ready again (worker:api, worker:default had failed)"),
    ], lines


def test_a_job_s_threads_log_with_its_ids(log_lines):
    from concurrent.futures import wait

    def work(n):
        logging.getLogger("tests.logs").info("item %s in a thread", n)

    with logs.job_context(17, "tests.logs.threads"):
        with logs.ContextThreadPoolExecutor(max_workers=2) as pool:
            wait([pool.submit(work, n) for n in range(3)])
        thread = threading.Thread(target=logs.in_context(work), args=("lane",))
        thread.start()
        thread.join()
    assert logs.job_id.get() is None and logs.task_name.get() is None
    for n in ("0", "1", "2", "lane"):
        assert context_of(log_lines(), f"item {n} in a thread") == [("INFO", "tests.logs", "-", "17", "tests.logs.threads")]

