"""Executing a chunk of a run: one item at a time on a thread pool, results written in small batches.

A chunk task keeps its lane's share of `run.concurrency` requests in flight (a sliding window); its
main thread writes the results as they complete. Results are unique per (run, item) and items with
a result are skipped, so a retried or duplicated chunk neither loses nor doubles anything; an item
is written once or not at all. Progress lives in the database: a chunk refreshes the run's totals and
its heartbeat every CPRT_RUN_HEARTBEAT_S seconds, and reads the status back: cancelling stops it.

Transient is not final: an error that can pass (the provider still answering 429/5xx/timeouts after
CPRT_PROVIDER_MAX_ATTEMPTS, Redis, the broker or the database unreachable) writes no result. The
chunk backs off (doubling once per ROUND of tries, not per item, capped at TRANSIENT_BACKOFF_MAX_S,
jittered, waking up for a cancel) and tries the image again until its deadline; what is still
missing then is handed on to the lane's next chunk, or left to resume and the reconciler.

Final for the run: an answer every request would get (401/403, 404, a 2xx that is not the API's
JSON), or a provider failing every item (CPRT_RUN_PAUSE_AFTER_FAILURES items in a row, or for
CPRT_RUN_PAUSE_AFTER_S, with no answer between; `Streak`): the run pauses itself with a named
reason (lifecycle.pause_run). docs/background-jobs.md, "What a provider's answer means".
"""
from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, wait

from django.conf import settings
from django.db import InterfaceError as DatabaseInterfaceError
from django.db import connection
from django.db import OperationalError as DatabaseOperationalError
from django.db.models import DateTimeField, F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from core.logs import ContextThreadPoolExecutor

from . import chunks, dispatching, kinds, leases
from .models import Run, RunResult
from .providers import ProviderUnavailable, get_provider
from .ratelimit import RateLimiter
from .lifecycle import finish_if_complete, mark_cancelled, pause_run, refresh_totals
from .item_calls import Context, Deferred, Rejected, RunStop, process_image
from .results import Outcome, write_outcomes


log = logging.getLogger(__name__)

STOP_GRACE_S = 5.0  # after a cancel, how long a chunk waits for requests already in flight
# The longest a chunk pauses between rounds of tries while something is down (and CPRT_PROVIDER_BACKOFF_MAX_S
# when smaller): short enough that work resumes within seconds of Redis or the database coming back.
TRANSIENT_BACKOFF_MAX_S = 8.0

WRITE_BATCH = 64  # results per write transaction...
WRITE_EVERY_S = 0.25  # ...or this often, whichever comes first


# --- a chunk ---------------------------------------------------------------------------------

def _heartbeat(run_id: int) -> str:
    Run.objects.filter(pk=run_id).update(heartbeat_at=timezone.now())
    refresh_totals(run_id)
    return Run.objects.values_list("status", flat=True).get(pk=run_id)


class Streak:
    """Items failed since the provider last answered any item of the run, shared by its lanes and
    chunks (`Run.failures_in_a_row`, `Run.failing_since`). CPRT_RUN_PAUSE_AFTER_FAILURES of them (an
    item counts each time it exhausts its attempts or is rejected), or failures for
    CPRT_RUN_PAUSE_AFTER_S, pause the run. An answer (any outcome the model gave) ends the streak.
    Only a chunk's main thread calls it; infrastructure errors are never counted (they pass), and a
    database error while counting counts nothing."""

    def __init__(self, run_id: int, open_streak: bool = False):
        self.run_id = run_id
        self.counted = open_streak  # a streak this chunk knows of (its own, or found on the run) is not ended yet

    def failed(self) -> bool:
        """Count one failure; True when the run should pause."""
        now = timezone.now()
        try:
            Run.objects.filter(pk=self.run_id).update(
                failures_in_a_row=F("failures_in_a_row") + 1, failing_since=Coalesce("failing_since", Value(now, output_field=DateTimeField())))
            count, since = Run.objects.values_list("failures_in_a_row", "failing_since").get(pk=self.run_id)
        except (DatabaseOperationalError, DatabaseInterfaceError):
            return False
        self.counted = True
        failing_s = (now - since).total_seconds() if since else 0.0
        return count >= settings.CPRT_RUN_PAUSE_AFTER_FAILURES or failing_s >= settings.CPRT_RUN_PAUSE_AFTER_S

    def answered(self, always: bool = False) -> None:
        """The provider answered: the streak ends (only written when there is one to end)."""
        if not (self.counted or always):
            return
        try:
            Run.objects.filter(pk=self.run_id, failures_in_a_row__gt=0).update(failures_in_a_row=0, failing_since=None)
        except (DatabaseOperationalError, DatabaseInterfaceError):
            return
        self.counted = False


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
        pause_run(run_id, "unavailable", str(exc))
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
    if stats.get("pause"):
        pause_run(run_id, *stats["pause"])
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


def _transient_pause(rounds: int) -> float:
    """How long a chunk pauses after `rounds` rounds of tries in a row that ended with an item deferred
    (however many items each round deferred): doubling, capped at the smaller of
    TRANSIENT_BACKOFF_MAX_S and CPRT_PROVIDER_BACKOFF_MAX_S, jittered (50-100 %)."""
    cap = min(TRANSIENT_BACKOFF_MAX_S, settings.CPRT_PROVIDER_BACKOFF_MAX_S)
    return min(cap, settings.CPRT_PROVIDER_BACKOFF_S * 2 ** min(rounds - 1, 16)) * random.uniform(0.5, 1.0)


def _stop_for(stats: dict, ctx: Context, reason: str, message: str) -> None:
    """No further request of this run can succeed: stop the chunk; run_chunk pauses the run (the first reason wins)."""
    if "pause" not in stats:
        stats["pause"] = (reason, message)
        stats["fatal"] = message
    ctx.stop.set()


def _execute(run: Run, ctx: Context, todo: list[kinds.Item], width: int, lease=None, deadline: float | None = None,
             lane: int | None = None) -> dict:
    stats: dict = {"written": 0, "duplicates": 0, "todo": len(todo)}
    if not todo:
        return stats
    fresh = deque(todo)
    again: deque[kinds.Item] = deque()  # deferred items, tried again after a pause
    failures = 0  # rounds of tries in a row that deferred an item; an answer resets it
    generation = 0  # the current round: it ends when one of its items is deferred (a pause begins)
    round_of: dict = {}  # future -> the round it was sent in
    paused_until = 0.0
    streak = Streak(run.pk, open_streak=run.failures_in_a_row > 0)
    held: list[Outcome] = []  # rejected items since the last answer (Rejected): written once one comes
    answered = False  # an answer since the last heartbeat (it ends the streak of every lane)
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
            in_flight_record = [*flying.values(), *(o.item_id for o in buffer), *(o.item_id for o in held), *(i.item_id for i in batch)]
            if batch and not _reserved(run.pk, lane, in_flight_record, stats):
                again.extendleft(reversed(batch))  # nothing sent: the database is down; try again after a pause
                failures, generation = failures + 1, generation + 1
                paused_until = time.monotonic() + _transient_pause(failures)
                batch = []
            for item in batch:
                future = pool.submit(process_image, ctx, item)
                flying[future] = item.item_id
                round_of[future] = generation
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
                sent_in = round_of.pop(future, generation)
                out = future.result()
                if out is None:
                    continue
                if isinstance(out, RunStop):
                    _stop_for(stats, ctx, out.reason, out.message)
                    continue
                if isinstance(out, Deferred):
                    stats["deferred"] = stats.get("deferred", 0) + 1
                    stats["last_transient_error"] = out.reason
                    again.append(out.item)
                    if sent_in == generation:  # the first of its round: one longer pause per round, not per item
                        failures, generation = failures + 1, generation + 1
                        paused_until = max(paused_until, time.monotonic() + _transient_pause(failures))
                    if out.provider and not ctx.stop.is_set() and streak.failed():
                        _stop_for(stats, ctx, "provider_failing", out.reason)
                    continue
                failures = 0
                if isinstance(out, Rejected):
                    held.append(out.outcome)
                    if not ctx.stop.is_set() and streak.failed():
                        _stop_for(stats, ctx, "items_failing", out.outcome.error)
                    continue
                answered = True
                streak.answered()
                buffer.extend(held)  # the provider answers: those errors were the items' own
                held.clear()
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
                    if answered:
                        streak.answered(always=True)  # another lane's streak ends too: the provider answers
                        answered = False
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
        if held and not stats.get("pause"):
            buffer.extend(held)  # final for their items (no streak long enough to pause the run)
        elif held:
            stats["rejected_unwritten"] = len(held)  # the run paused: Resume after the fix asks them again
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
    if answered:
        streak.answered(always=True)
    _heartbeat(run.pk)
    return stats
