"""Liveness and readiness: `/healthz` and `/readyz` (docs/operations.md).

`/healthz` says that this process answers HTTP: no login, no database, no broker. `/readyz` says
whether the stack can do its work: the database answers, the broker answers, the data folders are
writable, each queue in CPRT_READY_QUEUES has a worker whose heartbeat is fresh, and beat's tick
reached a worker lately (core/heartbeats.py). Every check runs at once in its own thread and all of
them together get CPRT_READY_TIMEOUT_S; a check still running then counts as failed. The database
checks run in the request's own thread and connection (PostgreSQL gives up connecting after
CPRT_DB_CONNECT_TIMEOUT_S), the broker and storage checks in threads. 200 when every check passes,
else 503; the JSON names each check with "ok" or "error" and a message.

Logging: a probe asks every few seconds, so an outage would be one ERROR line per probe (django.request
logs every 5xx). [decision] Instead each process logs one WARNING naming the failing checks when the set
of failing checks changes, and one INFO line when every check passes again; the 503 itself is not
logged by django.request.
"""
from __future__ import annotations

import functools
import logging
import tempfile
import threading
import time
from concurrent.futures import wait
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from . import broker
from .logs import ContextThreadPoolExecutor
from .models import ProcessHeartbeat
from .secrets import scrub


log = logging.getLogger(__name__)
_state_lock = threading.Lock()
_failing: frozenset[str] = frozenset()  # the checks that failed at this process's last /readyz


class CheckFailed(Exception):
    """A check's plain answer (shown as it is, without the exception's name)."""


def check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return f"{connection.vendor} answers"


def check_broker() -> str:
    return broker.ping(timeout=settings.CPRT_READY_TIMEOUT_S)


def check_storage() -> str:
    roots = {"data": settings.DATA_DIR, "images": settings.PRIVATE_IMAGE_ROOT, "exports": settings.CPRT_EXPORT_ROOT}
    for root in roots.values():
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".ready-", suffix=".tmp"):
            pass
    return "writable: " + ", ".join(roots)


def _age(moment) -> str:
    return f"{(timezone.now() - moment).total_seconds():.0f} s ago"


def check_worker(queue: str) -> str:
    rows = ProcessHeartbeat.objects.filter(kind="worker", queue=queue)
    fresh_after = timezone.now() - timedelta(seconds=settings.CPRT_READY_WORKER_STALE_S)
    live = sorted(rows.filter(seen_at__gte=fresh_after).values_list("node", flat=True))
    if live:
        return f"{len(live)} live worker(s): {', '.join(live)}"
    last = rows.order_by("-seen_at").first()
    if last is None:
        raise CheckFailed(f"no worker consumes the {queue} queue")
    raise CheckFailed(f"no live worker: the last heartbeat ({last.node}) was {_age(last.seen_at)}")


def check_beat() -> str:
    tick = ProcessHeartbeat.objects.filter(kind="beat").order_by("-seen_at").first()
    if tick is None:
        raise CheckFailed("beat's tick (core.beat_tick) has never been recorded")
    if tick.seen_at < timezone.now() - timedelta(seconds=settings.CPRT_READY_BEAT_STALE_S):
        raise CheckFailed(f"beat's last tick was {_age(tick.seen_at)} (allowed: {settings.CPRT_READY_BEAT_STALE_S:.0f} s)")
    return f"last tick {_age(tick.seen_at)}"


def checks() -> tuple[dict, dict]:
    """(checks run in threads, checks run in the request's thread and database connection)."""
    threaded = {"broker": check_broker, "storage": check_storage}
    in_request = {"database": check_database}
    for queue in settings.CPRT_READY_QUEUES:
        in_request[f"worker:{queue}"] = functools.partial(check_worker, queue)
    in_request["beat"] = check_beat
    return threaded, in_request


def _outcome(call) -> dict:
    try:
        return {"status": "ok", "message": call()}
    except CheckFailed as exc:
        return {"status": "error", "message": str(exc)}
    except Exception as exc:
        return {"status": "error", "message": scrub(f"{type(exc).__name__}: {exc}")[:500]}


def readiness() -> tuple[bool, dict]:
    """(all passed, the JSON body: {"status", "seconds", "checks": {name: {"status": "ok"|"error", "message"}}})."""
    threaded, in_request = checks()
    started = time.monotonic()
    pool = ContextThreadPoolExecutor(max_workers=len(threaded), thread_name_prefix="readyz")
    futures = {name: pool.submit(_outcome, check) for name, check in threaded.items()}
    results = {name: _outcome(check) for name, check in in_request.items()}
    wait(futures.values(), timeout=max(0.0, settings.CPRT_READY_TIMEOUT_S - (time.monotonic() - started)))
    pool.shutdown(wait=False, cancel_futures=True)  # a hung check must not hold the answer
    for name, future in futures.items():
        results[name] = future.result() if future.done() else {"status": "error", "message": f"no answer within {settings.CPRT_READY_TIMEOUT_S} s"}
    ok = all(result["status"] == "ok" for result in results.values())
    order = ["database", "broker", "storage", *(name for name in in_request if name != "database")]
    body = {"status": "ok" if ok else "error", "seconds": round(time.monotonic() - started, 3), "checks": {name: results[name] for name in order}}
    return ok, body


@never_cache
@require_GET
def healthz(request):
    return JsonResponse({"status": "ok"})


def log_change(body: dict) -> None:
    """One line when the set of failing checks changes: WARNING naming them, INFO when none fails again."""
    global _failing
    failing = frozenset(name for name, result in body["checks"].items() if result["status"] != "ok")
    with _state_lock:
        if failing == _failing:
            return
        before, _failing = _failing, failing
    if failing:
        log.warning("not ready: %s", "; ".join(f"{name}: {body['checks'][name]['message']}" for name in sorted(failing)))
    elif before:
        log.info("ready again (%s had failed)", ", ".join(sorted(before)))


@never_cache
@require_GET
def readyz(request):
    ok, body = readiness()
    log_change(body)
    response = JsonResponse(body, status=200 if ok else 503)
    response._has_been_logged = True  # type: ignore[attr-defined]  # django.request's log_response skips it: log_change said what matters
    return response
