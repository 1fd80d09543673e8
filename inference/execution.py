"""Executing a chunk of a run: one item at a time on a thread pool, results written in small batches.

A chunk task keeps its lane's share of `run.concurrency` requests in flight (a sliding window); its
main thread writes the results as they complete. Results are unique per (run, item) and items with
a result are skipped, so a retried or duplicated chunk neither loses nor doubles anything; an item
is written once or not at all. Progress lives in the database: a chunk refreshes the run's totals and
its heartbeat every CPRT_RUN_HEARTBEAT_S seconds, and reads the status back: cancelling stops it.

Transient is not final: an error that can pass (the provider still answering 429/5xx/timeouts after
CPRT_PROVIDER_MAX_ATTEMPTS, Redis, the broker or the database unreachable) writes no result. The
chunk backs off (capped, waking up for a cancel) and tries the image again until its deadline;
what is still missing then is handed on to the lane's next chunk, or left to resume and the reconciler.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass

import kombu.exceptions
import redis.exceptions
from django.conf import settings
from django.db import InterfaceError as DatabaseInterfaceError
from django.db import connection
from django.db import OperationalError as DatabaseOperationalError
from django.db.models import Q
from django.utils import timezone

from annotations.images import mime_type
from annotations.models import Image
from core import metrics
from core.logs import ContextThreadPoolExecutor

from . import chunks, dispatching, kinds, leases
from .models import Run, RunResult
from .providers import FatalProviderError, ProviderError, ProviderUnavailable, RetryableError, get_provider
from .ratelimit import RateLimiter
from .lifecycle import mark_cancelled, fail_run, finish_if_complete, refresh_totals
from .results import Outcome, scrub_outcome, write_outcomes


log = logging.getLogger(__name__)

STOP_GRACE_S = 5.0  # after a cancel, how long a chunk waits for requests already in flight
TRANSIENT_BACKOFF_MAX_S = 30.0  # the longest a chunk pauses between tries while something is down

# Errors of the infrastructure that pass when it is back: never an image's final outcome. OSError
# covers sockets (ConnectionError, TimeoutError); an unreadable image file is told apart (read first).
INFRASTRUCTURE_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
    DatabaseOperationalError, DatabaseInterfaceError,
    kombu.exceptions.OperationalError, OSError,
)
WRITE_BATCH = 64  # results per write transaction...
WRITE_EVERY_S = 0.25  # ...or this often, whichever comes first


# --- one item --------------------------------------------------------------------------------

class Stopped(Exception):
    """The run was cancelled while this request waited (rate limit or backoff)."""


class GaveUp(Exception):
    def __init__(self, last: ProviderError, attempts: list):
        super().__init__(str(last))
        self.last = last
        self.attempts = attempts


@dataclass
class Deferred:
    """No answer yet for this item, for a reason that can pass: the chunk tries it again later."""

    item: kinds.Item
    reason: str


@dataclass
class Context:
    """Everything a worker thread needs; no ORM queries (threads never touch the database): the run's
    kind is bound and prepared in the main thread."""

    kind: kinds.Kind
    provider: object  # the run's provider and model (the first stage's)
    limiter: RateLimiter
    stop: threading.Event
    max_attempts: int
    stage_providers: dict | None = None  # stage -> provider, where the kind sends a stage to another model

    def provider_for(self, stage: str):
        return (self.stage_providers or {}).get(stage, self.provider)


def _read_image(file_name: str) -> tuple[bytes, str]:
    if not file_name:
        raise ValueError("This image has no anonymized variant under the run's setting (deleted since the launch?).")
    storage = Image._meta.get_field("file").storage
    with storage.open(file_name, "rb") as fh:
        data = fh.read()
    return data, mime_type(file_name)


def _call(ctx: Context, request, attempts: list):
    """One provider call with retries: backoff with jitter, or exactly Retry-After when the server says."""
    name = getattr(ctx.provider, "name", "") or "unknown"  # one provider per run (its stages may use other models of it)
    for attempt in range(1, ctx.max_attempts + 1):
        if not ctx.limiter.acquire(ctx.stop):
            raise Stopped()
        try:
            reply = request()
        except RetryableError as exc:
            metrics.provider_call(name, "retryable_error")
            metrics.provider_error(name, "rate_limit" if exc.status == 429 else "timeout" if exc.status is None else "server")
            attempts.append({"attempt": attempt, "error": str(exc), "status": exc.status, "retry_after": exc.retry_after, "body": exc.raw})
            if attempt == ctx.max_attempts:
                raise GaveUp(exc, attempts) from None
            metrics.provider_retry(name)
            if exc.retry_after is not None:
                ctx.limiter.hold(exc.retry_after)
                delay = exc.retry_after
            else:
                delay = min(settings.CPRT_PROVIDER_BACKOFF_MAX_S, settings.CPRT_PROVIDER_BACKOFF_S * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
            if ctx.stop.wait(delay):
                raise Stopped() from None
        except ProviderError:
            metrics.provider_call(name, "error")
            metrics.provider_error(name, "client")
            raise
        else:
            metrics.provider_call(name, "ok")
            return reply
    raise AssertionError("unreachable")  # pragma: no cover


def process_image(ctx: Context, item: kinds.Item) -> Outcome | Deferred | None:
    """Ask the model about one item, stage after stage as its kind says; never raises. Returns None
    when the run was cancelled before an answer came back, a `Deferred` when an error that can pass
    (see INFRASTRUCTURE_ERRORS, or a provider still failing with retryable errors after every attempt)
    kept it from an answer, else the final outcome (an unexpected error is a final `error`). Every
    text in the outcome is scrubbed of configured secrets (a model may echo one)."""
    attempts: list = []
    out = Outcome(item_id=item.item_id, image_id=item.image_id, outcome=RunResult.OUTCOME_ERROR)
    try:
        images: tuple = tuple(_read_image(name) for name in item.files)
    except OSError as exc:  # the file itself: final
        out.error = f"image file unreadable: {exc}"
        return scrub_outcome(out)
    except Exception as exc:  # noqa: BLE001 - one bad image must not take the chunk down
        out.error = f"{type(exc).__name__}: {exc}"
        return scrub_outcome(out)
    try:
        carry = None
        for index, stage in enumerate(ctx.kind.stages):
            if index == 0:
                request = ctx.kind.request(stage, images, None, item)
            else:
                request = ctx.kind.request(stage, (), carry)
            provider = ctx.provider_for(stage)
            reply = _call(ctx, lambda: provider.ask(request.system, request.user, request.images, request.schema, request.schema_name), attempts)
            carry = ctx.kind.apply(stage, out, reply, carry)
            if carry is None:
                break
    except Stopped:
        return None
    except GaveUp as exc:
        return Deferred(item, f"gave up after {len(exc.attempts)} attempts: {exc.last}")
    except FatalProviderError as exc:
        out.outcome, out.fatal, out.error = RunResult.OUTCOME_ERROR, True, str(exc)
        out.raw["error"] = exc.raw
    except ProviderUnavailable as exc:
        out.outcome, out.fatal, out.error = RunResult.OUTCOME_ERROR, True, str(exc)
    except ProviderError as exc:
        out.outcome, out.error = RunResult.OUTCOME_ERROR, str(exc)
        out.raw["error"] = exc.raw
    except INFRASTRUCTURE_ERRORS as exc:
        log.warning("run item %s deferred: %s: %s", item.item_id, type(exc).__name__, exc)
        return Deferred(item, f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # noqa: BLE001 - one bad image must not take the chunk down
        log.exception("run item %s failed", item.item_id)
        out.outcome, out.error = RunResult.OUTCOME_ERROR, f"{type(exc).__name__}: {exc}"
    if attempts:
        out.raw["retries"] = attempts
    return scrub_outcome(out)


# --- a chunk ---------------------------------------------------------------------------------

def _heartbeat(run_id: int) -> str:
    Run.objects.filter(pk=run_id).update(heartbeat_at=timezone.now())
    refresh_totals(run_id)
    return Run.objects.values_list("status", flat=True).get(pk=run_id)


def run_chunk(run_id: int, item_ids: list[int], concurrency: int | None = None, lane: int | None = None,
              hand_on: bool = True) -> dict:
    """Process the items of one chunk that have no result yet, with at most `concurrency` requests
    in flight (default and maximum: the run's). Safe to run twice, or concurrently.

    With a `lane` (every dispatched message has one): the chunk first claims the lane's lease and
    does nothing if a live worker holds it; it renews the lease with its heartbeat and stops if the
    lane was taken over; it stops taking items at its deadline (inference.chunks); when it ends,
    it sends the next chunk for the lane's items still missing (unless not `hand_on`: the caller
    works the lane on, as `launch_run --here` does), then releases the lease.
    """
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return {"run": run_id, "skipped": "no such run"}
    if run.status == Run.STATUS_CANCELLING:
        mark_cancelled(run_id)
    if run.status not in (Run.STATUS_QUEUED, Run.STATUS_RUNNING):
        return {"run": run_id, "skipped": run.status}
    lease = None
    if lane is not None:
        lease = leases.lane_lease(run_id, lane)
        if not leases.lanes_of(run) or not lease.claim():
            return {"run": run_id, "lane": lane, "skipped": "lane leased by a live worker"}
        resent = leases.count_resent(run_id, lane)
    now = timezone.now()
    Run.move(run_id, "start", where=Q(status=Run.STATUS_QUEUED), heartbeat_at=now)
    Run.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=now)
    wanted = sorted(set(item_ids) & set(run.item_ids))  # never work on items outside the run
    done = set(RunResult.objects.filter(run_id=run_id, item_id__in=wanted).values_list("item_id", flat=True))
    kind = kinds.bind(run)
    todo = kind.items([i for i in wanted if i not in done])
    try:
        provider = get_provider(run.provider, run.model_name)
        stage_providers = {stage: get_provider(run.provider, kind.model_for(stage))
                           for stage in kind.stages if kind.model_for(stage) != run.model_name}
    except ProviderUnavailable as exc:
        fail_run(run_id, str(exc))
        return {"run": run_id, "failed": str(exc)}
    ctx = Context(
        kind=kind, provider=provider, limiter=RateLimiter(run.provider), stop=threading.Event(),
        max_attempts=settings.CPRT_PROVIDER_MAX_ATTEMPTS, stage_providers=stage_providers,
    )
    width = min(concurrency or run.concurrency, run.concurrency)
    deadline = time.monotonic() + chunks.deadline_s() if lease is not None else None
    stats = _execute(run, ctx, todo, width, lease=lease, deadline=deadline, lane=lane)
    if lane is not None and resent:
        stats["resent"] = resent
    if stats.get("fatal"):
        fail_run(run_id, stats["fatal"])
    else:
        finish_if_complete(run_id)
    if lease is not None and not stats.get("lease_lost"):
        if hand_on:
            _hand_on(run_id, lane, lease, stats)
        else:
            lease.release()
    return {"run": run_id, **stats}


def _hand_on(run_id: int, index: int, lease, stats: dict) -> None:
    """End of a leased chunk: send the next chunk for the lane's items still missing (while still
    holding the lease, so that no other copy can start them first), then release the lane."""
    run = Run.objects.get(pk=run_id)
    if run.status in (Run.STATUS_QUEUED, Run.STATUS_RUNNING):
        lanes = leases.lanes_of(run)
        lane = next(x for x in lanes if x.index == index)
        missing = leases.missing_of(lane)
        if missing:
            sent = dispatching.send_chunk(run, lane, missing, len(lanes))  # False: the broker is away, the reconciler sends it
            stats["handed_on" if sent else "hand_on_unsent"] = len(missing)
    lease.release()


def _database_down(stats: dict, exc: Exception) -> None:
    """The database failed a chunk's write or heartbeat: count it, and drop a broken connection so
    that the next query opens a new one."""
    log.warning("run chunk: database unreachable: %s: %s", type(exc).__name__, exc)
    stats["database_errors"] = stats.get("database_errors", 0) + 1
    if not connection.in_atomic_block:  # a worker's chunk runs in autocommit (never inside a test's transaction)
        connection.close_if_unusable_or_obsolete()


def _reserved(run_id: int, lane: int | None, item_ids, stats: dict) -> bool:
    """Record the lane's in-flight items before requests go out (leases.reserve); False when the
    database is unreachable (then nothing may be sent: a lost worker would leave no trace)."""
    if lane is None:
        return True
    try:
        leases.reserve(run_id, lane, item_ids)
    except (DatabaseOperationalError, DatabaseInterfaceError) as exc:
        _database_down(stats, exc)
        return False
    return True


def _transient_pause(failures: int) -> float:
    """How long a chunk pauses after `failures` deferred items in a row: doubling, capped, jittered."""
    cap = max(TRANSIENT_BACKOFF_MAX_S, settings.CPRT_PROVIDER_BACKOFF_MAX_S)
    return min(cap, settings.CPRT_PROVIDER_BACKOFF_S * 2 ** min(failures - 1, 16)) * random.uniform(0.5, 1.0)


def _execute(run: Run, ctx: Context, todo: list[kinds.Item], width: int, lease=None, deadline: float | None = None,
             lane: int | None = None) -> dict:
    stats: dict = {"written": 0, "duplicates": 0, "todo": len(todo)}
    if not todo:
        return stats
    fresh = deque(todo)
    again: deque[kinds.Item] = deque()  # deferred items, tried again after a pause
    failures = 0  # deferred items in a row; an answer resets it
    paused_until = 0.0
    retry_until = deadline if deadline is not None else time.monotonic() + chunks.deadline_s()
    pending: set = set()
    flying: dict = {}  # future -> item id, for the lane's in-flight record
    beat_every = settings.CPRT_RUN_HEARTBEAT_S
    last_beat = time.monotonic()
    stop_deadline = None
    buffer: list[Outcome] = []
    last_flush = time.monotonic()
    flush_after, flush_failures = 0.0, 0  # a failed write waits before the next try

    def flush() -> bool:
        """Write the buffer in one transaction; False (the buffer kept, to be written again: results
        are unique per item) when the database is unreachable."""
        try:
            written, duplicates = write_outcomes(run, buffer, ctx.kind)
        except (DatabaseOperationalError, DatabaseInterfaceError) as exc:
            _database_down(stats, exc)
            return False
        stats["written"] += written
        stats["duplicates"] += duplicates
        buffer.clear()
        return True

    pool = ContextThreadPoolExecutor(max_workers=min(width, len(todo)), thread_name_prefix=f"run{run.pk}")  # its lines carry the job ids
    try:
        while True:
            batch: list[kinds.Item] = []
            while not ctx.stop.is_set() and len(pending) + len(batch) < width:
                now = time.monotonic()
                if deadline is not None and now > deadline:
                    break  # the rest goes to the lane's next chunk (run_chunk hands it on)
                if now < paused_until:
                    break  # something is down: wait before sending more
                if again and now <= retry_until:
                    item = again.popleft()
                elif fresh:
                    item = fresh.popleft()
                else:
                    break
                batch.append(item)
            if batch and not _reserved(run.pk, lane, [*flying.values(), *(o.item_id for o in buffer), *(i.item_id for i in batch)], stats):
                again.extendleft(reversed(batch))  # nothing sent: the database is down; try again after a pause
                paused_until = time.monotonic() + _transient_pause(max(1, failures))
                batch = []
            for item in batch:
                future = pool.submit(process_image, ctx, item)
                flying[future] = item.item_id
                pending.add(future)
            if pending:
                finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            else:
                now = time.monotonic()
                retrying = bool(again) and now <= retry_until
                more = bool(fresh) and (deadline is None or now <= deadline)
                if ctx.stop.is_set() or not (retrying or more):
                    break  # deferred items past the deadline stay missing: hand-on, resume, reconciler
                # Paused (something is down): sleep until the pause ends or the next heartbeat is
                # due, waking up at once for a cancel; no request goes out meanwhile.
                finished = set()
                ctx.stop.wait(max(0.01, min(paused_until - now, beat_every, 0.5)))
            for future in finished:
                flying.pop(future, None)
                out = future.result()
                if out is None:
                    continue
                if isinstance(out, Deferred):
                    failures += 1
                    stats["deferred"] = stats.get("deferred", 0) + 1
                    stats["last_transient_error"] = out.reason
                    again.append(out.item)
                    paused_until = max(paused_until, time.monotonic() + _transient_pause(failures))
                    continue
                failures = 0
                if out.fatal:
                    stats.setdefault("fatal", out.error)
                    ctx.stop.set()
                    continue
                buffer.append(out)
            now = time.monotonic()
            # Results are written in small batches (one transaction each): per-row commits cost more
            # CPU than the requests themselves at high concurrency. A crash loses at most a batch.
            if buffer and now >= flush_after and (len(buffer) >= WRITE_BATCH or now - last_flush >= WRITE_EVERY_S or not pending):
                if flush():
                    last_flush, flush_failures = now, 0
                else:
                    flush_failures += 1
                    flush_after = now + _transient_pause(flush_failures)
            now = time.monotonic()
            if now - last_beat >= beat_every:
                last_beat = now
                try:
                    if _heartbeat(run.pk) != Run.STATUS_RUNNING:
                        ctx.stop.set()
                    if lease is not None and not lease.renew():
                        stats["lease_lost"] = True  # the lane was re-dispatched to another worker: leave it to them
                        ctx.stop.set()
                except (DatabaseOperationalError, DatabaseInterfaceError) as exc:
                    _database_down(stats, exc)  # no beat this time; the lease outlives a few missed ones
            if ctx.stop.is_set():
                for future in pending:
                    future.cancel()
                pending = {f for f in pending if not f.cancelled()}
                stop_deadline = stop_deadline or now + STOP_GRACE_S
                if now > stop_deadline:
                    stats["abandoned_in_flight"] = len(pending)
                    break
        # The last results: the database may be down for a while; wait for it (capped by the chunk's
        # deadline and a cancel) rather than drop answers already paid for.
        while buffer and not flush() and time.monotonic() < retry_until:
            flush_failures += 1
            if ctx.stop.wait(_transient_pause(flush_failures)):
                break
        if lane is not None and not buffer and not pending:
            _reserved(run.pk, lane, [], stats)  # a clean end: nothing of this lane is in flight
    finally:
        # Do not wait for abandoned requests: they end at their timeout and nobody writes them.
        pool.shutdown(wait=False, cancel_futures=True)
    if again:
        stats["left_missing"] = len(again)
    if ctx.stop.is_set():
        stats["stopped"] = True
    _heartbeat(run.pk)
    return stats
