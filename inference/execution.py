"""Executing a chunk of a run: one image at a time on a thread pool, results written in small batches.

A chunk task keeps its lane's share of `run.concurrency` requests in flight (a sliding window); its
main thread writes the results as they complete. Results are unique per (run, image) and images with
a result are skipped, so a retried or duplicated chunk neither loses nor doubles anything; an image
is written once or not at all. Progress lives in the database: a chunk refreshes the run's totals and
its heartbeat every CPRT_RUN_HEARTBEAT_S seconds, and reads the status back: cancelling stops it.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotations import taxonomy
from annotations.faces import variants as face_variants
from annotations.images import mime_type
from annotations.models import Image
from annotations.services.labels import write_labels

from . import chunks, launching, leases, outcomes
from .models import Run, RunResult
from .providers import FatalProviderError, ProviderError, ProviderUnavailable, RetryableError, get_provider
from .ratelimit import RateLimiter
from . import schemas
from .lifecycle import mark_cancelled, fail_run, finish_if_complete, refresh_totals


log = logging.getLogger(__name__)

STOP_GRACE_S = 5.0  # after a cancel, how long a chunk waits for requests already in flight
WRITE_BATCH = 64  # results per write transaction...
WRITE_EVERY_S = 0.25  # ...or this often, whichever comes first


# --- one image -------------------------------------------------------------------------------

@dataclass
class Outcome:
    image_id: int
    outcome: str
    score: float | None = None
    reasoning: str = ""
    labels: dict = field(default_factory=dict)  # key -> (value, rationale), annotate runs
    raw: dict = field(default_factory=dict)
    error: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: int = 0
    fatal: bool = False  # nothing in this run can succeed: fail the run, write nothing


class Stopped(Exception):
    """The run was cancelled while this request waited (rate limit or backoff)."""


class GaveUp(Exception):
    def __init__(self, last: ProviderError, attempts: list):
        super().__init__(str(last))
        self.last = last
        self.attempts = attempts


@dataclass
class Context:
    """Everything a worker thread needs; no ORM objects (threads never touch the database)."""

    task: str
    provider: object
    limiter: RateLimiter
    prompt_text: dict
    keys: tuple
    stop: threading.Event
    max_attempts: int


def _read_image(file_name: str) -> tuple[bytes, str]:
    if not file_name:
        raise ValueError("This image has no anonymized variant under the run's setting (deleted since the launch?).")
    storage = Image._meta.get_field("file").storage
    with storage.open(file_name, "rb") as fh:
        data = fh.read()
    return data, mime_type(file_name)


def _call(ctx: Context, request, attempts: list):
    """One provider call with retries: backoff with jitter, or exactly Retry-After when the server says."""
    for attempt in range(1, ctx.max_attempts + 1):
        if not ctx.limiter.acquire(ctx.stop):
            raise Stopped()
        try:
            return request()
        except RetryableError as exc:
            attempts.append({"attempt": attempt, "error": str(exc), "status": exc.status, "retry_after": exc.retry_after, "body": exc.raw})
            if attempt == ctx.max_attempts:
                raise GaveUp(exc, attempts) from None
            if exc.retry_after is not None:
                ctx.limiter.hold(exc.retry_after)
                delay = exc.retry_after
            else:
                delay = min(settings.CPRT_PROVIDER_BACKOFF_MAX_S, settings.CPRT_PROVIDER_BACKOFF_S * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
            if ctx.stop.wait(delay):
                raise Stopped() from None
    raise AssertionError("unreachable")  # pragma: no cover


def process_image(ctx: Context, image_id: int, file_name: str) -> Outcome | None:
    """Ask the model about one image; never raises (an unexpected error becomes an `error` outcome).
    Returns None when the run was cancelled before an answer came back."""
    attempts: list = []
    out = Outcome(image_id=image_id, outcome=RunResult.OUTCOME_ERROR)
    try:
        data, mime = _read_image(file_name)
        if ctx.task == Run.TASK_JUDGE:
            prompt, schema = ctx.prompt_text["judge"], ctx.prompt_text["schemas"]["judge"]
            reply = _call(ctx, lambda: ctx.provider.judge(data, mime, prompt, schema), attempts)
            outcomes.apply_judge(out, reply)
        else:
            p1, s1 = ctx.prompt_text["stage1"], ctx.prompt_text["schemas"]["stage1"]
            reply1 = _call(ctx, lambda: ctx.provider.annotate_stage1(data, mime, p1, s1), attempts)
            stage1 = outcomes.apply_stage1(out, reply1, ctx.keys, schemas.stage1_choices(s1))  # annotate-v2: yes / no only
            if stage1 is not None:
                p2, s2 = ctx.prompt_text["stage2"], ctx.prompt_text["schemas"]["stage2"]
                user_text = outcomes.stage2_text(ctx.prompt_text, stage1)
                reply2 = _call(ctx, lambda: ctx.provider.annotate_stage2(user_text, p2, s2), attempts)
                outcomes.apply_stage2(out, stage1, reply2, ctx.keys)
    except Stopped:
        return None
    except GaveUp as exc:
        out.outcome = RunResult.OUTCOME_ERROR
        out.error = f"gave up after {len(exc.attempts)} attempts: {exc.last}"
    except FatalProviderError as exc:
        out.outcome, out.fatal, out.error = RunResult.OUTCOME_ERROR, True, str(exc)
        out.raw["error"] = exc.raw
    except ProviderUnavailable as exc:
        out.outcome, out.fatal, out.error = RunResult.OUTCOME_ERROR, True, str(exc)
    except ProviderError as exc:
        out.outcome, out.error = RunResult.OUTCOME_ERROR, str(exc)
        out.raw["error"] = exc.raw
    except OSError as exc:
        out.outcome, out.error = RunResult.OUTCOME_ERROR, f"image file unreadable: {exc}"
    except Exception as exc:  # noqa: BLE001 - one bad image must not take the chunk down
        log.exception("run image %s failed", image_id)
        out.outcome, out.error = RunResult.OUTCOME_ERROR, f"{type(exc).__name__}: {exc}"
    if attempts:
        out.raw["retries"] = attempts
    return out


# --- writing results -------------------------------------------------------------------------

def _result_row(run: Run, out: Outcome) -> RunResult:
    return RunResult(
        run=run, image_id=out.image_id, outcome=out.outcome, score=out.score, reasoning=out.reasoning, raw=out.raw,
        error=out.error[:10000], tokens_in=out.tokens_in, tokens_out=out.tokens_out, latency_ms=out.latency_ms,
    )


def write_outcome(run: Run, out: Outcome, attribute_ids: dict[str, int]) -> bool:
    """Store one image's result (and an annotate run's labels) atomically; False if already there."""
    try:
        with transaction.atomic():
            _result_row(run, out).save(force_insert=True)
            if out.labels and run.annotator_id:
                labels = {attribute_ids[key]: (value, rationale[:4000]) for key, (value, rationale) in out.labels.items()}
                write_labels(out.image_id, run.annotator_id, labels, submit=True)
    except IntegrityError:
        return False  # another copy of this chunk wrote this image first
    return True


def write_outcomes(run: Run, outs: list[Outcome], attribute_ids: dict[str, int]) -> tuple[int, int]:
    """Store several results in one transaction; (written, already there). Label-writing outcomes go
    one by one (each with its labels, atomically)."""
    written = duplicates = 0
    plain = [o for o in outs if not o.labels]
    for out in outs:
        if out.labels:
            if write_outcome(run, out, attribute_ids):
                written += 1
            else:
                duplicates += 1
    if plain:
        try:
            with transaction.atomic():
                existing = set(RunResult.objects.filter(run=run, image_id__in=[o.image_id for o in plain]).values_list("image_id", flat=True))
                new = [o for o in plain if o.image_id not in existing]
                RunResult.objects.bulk_create([_result_row(run, o) for o in new])
            written += len(new)
            duplicates += len(plain) - len(new)
        except IntegrityError:
            # A racing copy of this chunk committed some of these images in between: one by one.
            for out in plain:
                if write_outcome(run, out, attribute_ids):
                    written += 1
                else:
                    duplicates += 1
    return written, duplicates


def _heartbeat(run_id: int) -> str:
    Run.objects.filter(pk=run_id).update(heartbeat_at=timezone.now())
    refresh_totals(run_id)
    return Run.objects.values_list("status", flat=True).get(pk=run_id)


# --- a chunk ---------------------------------------------------------------------------------

def run_chunk(run_id: int, image_ids: list[int], concurrency: int | None = None, lane: int | None = None) -> dict:
    """Process the images of one chunk that have no result yet, with at most `concurrency` requests
    in flight (default and maximum: the run's). Safe to run twice, or concurrently.

    With a `lane` (every dispatched message has one): the chunk first claims the lane's lease and
    does nothing if a live worker holds it; it renews the lease with its heartbeat and stops if the
    lane was taken over; it stops taking images at its deadline (inference.chunks); when it ends,
    it sends the next chunk for the lane's images still missing, then releases the lease.
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
        lease = leases.Lease(run_id, lane)
        if not leases.lanes_of(run) or not lease.claim():
            return {"run": run_id, "lane": lane, "skipped": "lane leased by a live worker"}
    now = timezone.now()
    Run.objects.filter(pk=run_id, status=Run.STATUS_QUEUED).update(status=Run.STATUS_RUNNING, heartbeat_at=now)
    Run.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=now)
    wanted = sorted(set(image_ids) & set(run.image_ids))  # never work on images outside the run
    done = set(RunResult.objects.filter(run_id=run_id, image_id__in=wanted).values_list("image_id", flat=True))
    todo = list(Image.objects.filter(pk__in=[i for i in wanted if i not in done]).exclude(file="").order_by("pk").values_list("pk", "file"))
    if run.face_variant:  # the pixel-level counterfactual: the model sees the anonymized variant
        files = face_variants.variant_files([pk for pk, _ in todo], run.face_variant)
        todo = [(pk, files.get(pk, "")) for pk, _ in todo]
    try:
        provider = get_provider(run.provider, run.model_name)
    except ProviderUnavailable as exc:
        fail_run(run_id, str(exc))
        return {"run": run_id, "failed": str(exc)}
    ctx = Context(
        task=run.task, provider=provider, limiter=RateLimiter(run.provider), prompt_text=run.prompt_text,
        keys=taxonomy.active().keys, stop=threading.Event(), max_attempts=settings.CPRT_PROVIDER_MAX_ATTEMPTS,
    )
    width = min(concurrency or run.concurrency, run.concurrency)
    deadline = time.monotonic() + chunks.deadline_s() if lease is not None else None
    stats = _execute(run, ctx, todo, width, lease=lease, deadline=deadline)
    if stats.get("fatal"):
        fail_run(run_id, stats["fatal"])
    else:
        finish_if_complete(run_id)
    if lease is not None and not stats.get("lease_lost"):
        _hand_on(run_id, lane, lease, stats)
    return {"run": run_id, **stats}


def _hand_on(run_id: int, index: int, lease, stats: dict) -> None:
    """End of a leased chunk: send the next chunk for the lane's images still missing (while still
    holding the lease, so that no other copy can start them first), then release the lane."""
    run = Run.objects.get(pk=run_id)
    if run.status in (Run.STATUS_QUEUED, Run.STATUS_RUNNING):
        lanes = leases.lanes_of(run)
        lane = next(x for x in lanes if x.index == index)
        done = set(RunResult.objects.filter(run_id=run_id, image_id__in=lane.image_ids).values_list("image_id", flat=True))
        existing = set(Image.objects.filter(pk__in=lane.image_ids).exclude(file="").values_list("pk", flat=True))
        missing = [i for i in lane.image_ids if i in existing and i not in done]
        if missing:
            launching.send_chunk(run, lane, missing, len(lanes))
            stats["handed_on"] = len(missing)
    lease.release()


def _execute(run: Run, ctx: Context, todo: list[tuple[int, str]], width: int, lease=None, deadline: float | None = None) -> dict:
    attribute_ids = taxonomy.attribute_ids() if run.task == Run.TASK_ANNOTATE else {}
    stats = {"written": 0, "duplicates": 0, "todo": len(todo)}
    if not todo:
        return stats
    items = iter(todo)
    pending: set = set()
    beat_every = settings.CPRT_RUN_HEARTBEAT_S
    last_beat = time.monotonic()
    stop_deadline = None
    buffer: list[Outcome] = []
    last_flush = time.monotonic()

    def flush():
        written, duplicates = write_outcomes(run, buffer, attribute_ids)
        stats["written"] += written
        stats["duplicates"] += duplicates
        buffer.clear()

    pool = ThreadPoolExecutor(max_workers=min(width, len(todo)), thread_name_prefix=f"run{run.pk}")
    try:
        while True:
            while not ctx.stop.is_set() and len(pending) < width:
                if deadline is not None and time.monotonic() > deadline:
                    break  # the rest goes to the lane's next chunk (run_chunk hands it on)
                item = next(items, None)
                if item is None:
                    break
                pending.add(pool.submit(process_image, ctx, item[0], item[1]))
            if not pending:
                break
            finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in finished:
                out = future.result()
                if out is None:
                    continue
                if out.fatal:
                    stats.setdefault("fatal", out.error)
                    ctx.stop.set()
                    continue
                buffer.append(out)
            now = time.monotonic()
            # Results are written in small batches (one transaction each): per-row commits cost more
            # CPU than the requests themselves at high concurrency. A crash loses at most a batch.
            if buffer and (len(buffer) >= WRITE_BATCH or now - last_flush >= WRITE_EVERY_S or not pending):
                flush()
                last_flush = now
            now = time.monotonic()
            if now - last_beat >= beat_every:
                last_beat = now
                if _heartbeat(run.pk) != Run.STATUS_RUNNING:
                    ctx.stop.set()
                if lease is not None and not lease.renew():
                    stats["lease_lost"] = True  # the lane was re-dispatched to another worker: leave it to them
                    ctx.stop.set()
            if ctx.stop.is_set():
                for future in pending:
                    future.cancel()
                pending = {f for f in pending if not f.cancelled()}
                stop_deadline = stop_deadline or now + STOP_GRACE_S
                if now > stop_deadline:
                    stats["abandoned_in_flight"] = len(pending)
                    break
        if buffer:
            flush()
    finally:
        # Do not wait for abandoned requests: they end at their timeout and nobody writes them.
        pool.shutdown(wait=False, cancel_futures=True)
    if ctx.stop.is_set():
        stats["stopped"] = True
    _heartbeat(run.pk)
    return stats
