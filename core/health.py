"""Liveness and readiness: `/healthz` and `/readyz` (docs/operations.md).

`/healthz` says that this process answers HTTP: no login, no database, no broker. `/readyz` says
whether the stack can do its work: the database answers, the broker answers, the data folders are
writable, each queue in CPRT_READY_QUEUES has a worker whose heartbeat is fresh, and beat's tick
reached a worker lately (core/heartbeats.py). Every check runs at once in its own thread and all of
them together get CPRT_READY_TIMEOUT_S; a check still running then counts as failed. 200 when every
check passes, else 503; the JSON names each check with "ok" or "error" and a message.
"""
from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from . import broker
from .models import ProcessHeartbeat
from .secrets import scrub


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
        raise RuntimeError(f"no worker consumes the {queue} queue")
    raise RuntimeError(f"no live worker: the last heartbeat ({last.node}) was {_age(last.seen_at)}")


def check_beat() -> str:
    tick = ProcessHeartbeat.objects.filter(kind="beat").order_by("-seen_at").first()
    if tick is None:
        raise RuntimeError("beat's tick (core.beat_tick) has never been recorded")
    if tick.seen_at < timezone.now() - timedelta(seconds=settings.CPRT_READY_BEAT_STALE_S):
        raise RuntimeError(f"beat's last tick was {_age(tick.seen_at)} (allowed: {settings.CPRT_READY_BEAT_STALE_S:.0f} s)")
    return f"last tick {_age(tick.seen_at)}"


def checks() -> dict:
    named = {"database": check_database, "broker": check_broker, "storage": check_storage}
    for queue in settings.CPRT_READY_QUEUES:
        named[f"worker:{queue}"] = lambda queue=queue: check_worker(queue)
    named["beat"] = check_beat
    return named


def _run(check) -> str:
    try:
        return check()
    finally:
        connection.close()  # each check thread opened its own connection


def readiness() -> tuple[bool, dict]:
    """(all passed, {name: {"status": "ok"|"error", "message": ...}}) within CPRT_READY_TIMEOUT_S."""
    named = checks()
    started = time.monotonic()
    pool = ThreadPoolExecutor(max_workers=len(named), thread_name_prefix="readyz")
    futures = {name: pool.submit(_run, check) for name, check in named.items()}
    wait(futures.values(), timeout=settings.CPRT_READY_TIMEOUT_S)
    pool.shutdown(wait=False, cancel_futures=True)  # a hung check must not hold the answer
    results = {}
    for name, future in futures.items():
        if not future.done():
            results[name] = {"status": "error", "message": f"no answer within {settings.CPRT_READY_TIMEOUT_S} s"}
        elif future.exception() is not None:
            exc = future.exception()
            results[name] = {"status": "error", "message": scrub(f"{type(exc).__name__}: {exc}")[:500]}
        else:
            results[name] = {"status": "ok", "message": future.result()}
    ok = all(result["status"] == "ok" for result in results.values())
    results = {"status": "ok" if ok else "error", "seconds": round(time.monotonic() - started, 3), "checks": results}
    return ok, results


@never_cache
@require_GET
def healthz(request):
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request):
    ok, body = readiness()
    return JsonResponse(body, status=200 if ok else 503)
