"""Start a real Celery worker process against the test database and the configured broker.

The worker is a separate OS process: it sees only what the test has committed, so tests that use it
need `transactional_db` (or `live_server`). The broker is the one settings choose: the filesystem
transport under CPRT_DATA_DIR by default, Redis when CELERY_BROKER_URL says so.

Under pytest-xdist every xdist worker gets its own data folder (so its own filesystem broker, results,
stored files and SQLite test database) and its own Redis database index (broker, results, rate
limiter): `xdist_worker_env`, applied by tests/conftest.py before the xdist worker imports the
settings. A Celery worker started by a test inherits them (`worker_env`), so it never takes a task
of another xdist worker's test.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.db import connection

from core.processes import stop_process

ROOT = Path(__file__).resolve().parents[2]


REDIS_DATABASES = 16  # Redis' default `databases`
REDIS_URL_VARIABLES = ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CPRT_RATE_LIMIT_URL")


def shifted_redis_url(url: str, offset: int) -> str:
    """redis://host:port/N -> the same server, database N + offset (N defaults to 0)."""
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    if base + offset >= REDIS_DATABASES:
        raise ValueError(f"{url!r} shifted by {offset} is Redis database {base + offset}, past the {REDIS_DATABASES} a server has "
                         f"by default (0-{REDIS_DATABASES - 1}): use fewer xdist workers or a lower database in the URL.")
    return urlunsplit(parts._replace(path=f"/{base + offset}"))


def xdist_worker_env(worker_id: str, environ: dict, data_dir: Path) -> dict:
    """The variables that isolate xdist worker `worker_id` ("gw3"): its own data folder under
    `data_dir`, and for each Redis URL in `environ` the database index shifted by the worker's number."""
    number = int(worker_id.removeprefix("gw"))
    env = {"CPRT_DATA_DIR": str(Path(data_dir) / f"xdist-{worker_id}")}
    for name in REDIS_URL_VARIABLES:
        url = environ.get(name, "")
        if url.startswith(("redis://", "rediss://")):
            env[name] = shifted_redis_url(url, number)
    return env


def worker_env() -> dict:
    env = dict(os.environ)
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        env["DATABASE_URL"] = f"sqlite:///{db['NAME']}"
    else:
        env["DATABASE_URL"] = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env["CPRT_DATA_DIR"] = str(settings.DATA_DIR)
    env["CELERY_BROKER_URL"] = settings.CELERY_BROKER_URL
    env["CELERY_RESULT_BACKEND"] = settings.CELERY_RESULT_BACKEND
    env["CELERY_TASK_ALWAYS_EAGER"] = "0"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def purge_broker() -> None:
    """Drop messages left by earlier tests so each test's worker sees only its own."""
    from cprt_site.celery import app

    app.control.purge()


@contextmanager
def celery_worker(queues: str = "default,api,gpu", concurrency: int = 2, pool: str = "prefork", log_path: Path | None = None,
                  env: dict | None = None):
    """Run `celery -A cprt_site worker` until the block ends; yields the Popen (kill it to simulate a crash).
    `env`: variables over `worker_env()` (another broker, provider settings)."""
    log_path = log_path or Path(settings.DATA_DIR) / f"worker-{os.getpid()}-{time.time_ns()}.log"
    log = open(log_path, "wb")
    cmd = [
        sys.executable, "-m", "celery", "-A", "cprt_site", "worker", "--loglevel", "INFO",
        "-Q", queues, "--concurrency", str(concurrency), "--pool", pool,
        "--without-gossip", "--without-mingle", "--without-heartbeat",
        "-n", f"test-{os.getpid()}-{time.time_ns()}@%h",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**worker_env(), **(env or {})}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield proc
    finally:
        stop_process(proc, 15)
        log.close()


@contextmanager
def celery_beat(folder: Path, env: dict | None = None):
    """Run `celery -A cprt_site beat` (the reconciler, the beat tick) until the block ends; yields the Popen."""
    log = open(Path(folder) / "beat.log", "wb")
    cmd = [sys.executable, "-m", "celery", "-A", "cprt_site", "beat", "--loglevel", "INFO", "--schedule", str(Path(folder) / "beat-schedule")]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**worker_env(), **(env or {})}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield proc
    finally:
        stop_process(proc, 15)
        log.close()


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.2, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
