"""Launch, execute, cancel, resume and reconcile model runs. Plain functions; `tasks` wraps them.

Execution model
* A launch freezes the image list and the exact prompts, then (on commit) dispatches chunk tasks
  on the provider's queue (`api` for OpenAI/Gemini, `gpu` for vLLM).
* A chunk task keeps its lane's share of `run.concurrency` requests in flight on a thread pool (a
  sliding window); its main thread writes the results in small batches as they complete. Lanes
  (see `dispatch`) let one run use several worker processes without exceeding its concurrency. Results
  are unique per (run, image) and images with a result are skipped, so a retried or duplicated chunk
  neither loses nor doubles anything; an image is written once or not at all.
* Progress lives in the database: a chunk refreshes the run's outcome counts, tokens and cost, and
  its heartbeat, every CPRT_RUN_HEARTBEAT_S seconds, and reads the status back: cancelling stops it.
* A worker killed mid-run loses at most its in-flight requests. `reconcile()` (Celery beat) and
  `resume_run()` (the page's button) re-dispatch every selected image that has no result.
"""
from __future__ import annotations

from django.conf import settings
import logging
from functools import partial
import math
import random
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Count, Sum
from django.utils import timezone

from annotations import taxonomy
from annotations.models import Annotator, Image, Label, Labeling
from core.audit import audit

from . import pricing, prompts, signals
from .models import Run, RunResult
from .providers import FatalProviderError, ProviderError, ProviderUnavailable, RetryableError, get_provider, queue_for
from .ratelimit import RateLimiter
from .schemas import JudgeAnswer, Stage1Answer, Stage2Answer, ValidationError, describe_error
from .selection import Selection, select_image_ids

log = logging.getLogger(__name__)

STOP_GRACE_S = 5.0  # after a cancel, how long a chunk waits for requests already in flight
WRITE_BATCH = 64  # results per write transaction...
WRITE_EVERY_S = 0.25  # ...or this often, whichever comes first


# --- launch ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class LaunchSpec:
    task: str
    provider: str
    model_name: str
    strategy: str
    counterfactual_faces: bool
    prompt_version: str
    selection: Selection
    concurrency: int


def plan(spec: LaunchSpec) -> dict:
    """What a launch would do: image ids, selection description, prompt texts, estimate."""
    ids, described = select_image_ids(spec.selection)
    prompt_text = prompts.render(spec.task, spec.prompt_version, spec.strategy, spec.counterfactual_faces)
    estimate = pricing.estimate(spec.task, spec.provider, spec.model_name, len(ids), prompt_text)
    return {"image_ids": ids, "selection": described, "prompt_text": prompt_text, "estimate": estimate}


def launch_run(user, spec: LaunchSpec) -> Run:
    planned = plan(spec)
    if not planned["image_ids"]:
        raise ValueError("The selection matches no images with stored bytes.")
    provider = get_provider(spec.provider, spec.model_name)
    request_params = dict(provider.request_params())
    if spec.provider == "vllm":
        request_params["max_pixels"] = settings.VLLM_MAX_PIXELS
    with transaction.atomic():
        annotator = None
        if spec.task == Run.TASK_ANNOTATE:
            annotator = Annotator.for_model(spec.provider, spec.model_name, spec.prompt_version)
        run = Run.objects.create(
            task=spec.task,
            provider=spec.provider,
            model_name=spec.model_name,
            strategy=spec.strategy,
            counterfactual_faces=spec.counterfactual_faces,
            prompt_version=spec.prompt_version,
            prompt_text=planned["prompt_text"],
            selection=planned["selection"],
            image_ids=planned["image_ids"],
            concurrency=spec.concurrency,
            annotator=annotator,
            total_images=len(planned["image_ids"]),
            request_params=request_params,
            estimate=planned["estimate"],
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        audit(user, "run.launch", run, task=run.task, provider=run.provider, model=run.model_name,
              strategy=run.strategy, counterfactual_faces=run.counterfactual_faces, prompt_version=run.prompt_version,
              images=run.total_images, selection=run.selection, concurrency=run.concurrency)
        transaction.on_commit(lambda: dispatch(run.pk))
    return run


def lane_widths(concurrency: int) -> list[int]:
    """How a run's concurrency is split into lanes; the widths add up to exactly `concurrency`."""
    lanes = max(1, math.ceil(concurrency / settings.CPRT_RUN_LANE_CONCURRENCY))
    return [concurrency // lanes + (1 if i < concurrency % lanes else 0) for i in range(lanes)]


def dispatch(run_id: int, image_ids: list[int] | None = None) -> int:
    """Send the chunks for `image_ids` (default: every image still missing a result); returns the count.

    The run's concurrency is its bound on requests in flight, across all workers: the chunks are
    dealt into lanes, each lane a Celery chain (one chunk at a time) with its share of the
    concurrency, so lanes run in parallel on separate worker processes and never exceed the total.
    """
    from celery import chain

    from .tasks import run_chunk

    run = Run.objects.get(pk=run_id)
    ids = run.missing_image_ids() if image_ids is None else sorted(image_ids)
    widths = lane_widths(run.concurrency)
    Run.objects.filter(pk=run_id).update(dispatched_at=timezone.now())
    queue = queue_for(run.provider)
    chunks = 0
    for lane, width in enumerate(widths):
        share = ids[lane :: len(widths)]  # equal shares, so that the lanes finish together
        # A chunk's window stays full until its last `width` requests, and the next chunk of a
        # lane starts only after a broker round trip (up to a second with the filesystem broker):
        # chunks of up to 200 x the lane's width keep both costs small. Size does not risk loss:
        # results are written as they complete, and a re-run chunk skips what is done.
        size = max(settings.CPRT_RUN_CHUNK_SIZE, 200 * width)
        count = math.ceil(len(share) / size)
        if not count:
            continue
        step = math.ceil(len(share) / count)  # even chunk sizes within a lane
        links = [run_chunk.si(run.pk, share[i : i + step], width).set(queue=queue) for i in range(0, len(share), step)]
        chain(*links).apply_async(queue=queue)
        chunks += len(links)
    return chunks


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
    storage = Image._meta.get_field("file").storage
    with storage.open(file_name, "rb") as fh:
        data = fh.read()
    mime = "image/png" if file_name.lower().endswith(".png") else "image/jpeg"
    return data, mime


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


def _classify(reply, model, context=None) -> tuple[str, object, str]:
    """(outcome, validated answer or None, error text) for one reply."""
    if reply.refusal:
        return RunResult.OUTCOME_REFUSED, None, f"refused: {reply.refusal}"
    if reply.parsed is None:
        return RunResult.OUTCOME_UNPARSEABLE, None, reply.parse_error or "no JSON in the response"
    try:
        return RunResult.OUTCOME_OK, model.model_validate(reply.parsed, context=context), ""
    except ValidationError as exc:
        return RunResult.OUTCOME_UNPARSEABLE, None, describe_error(exc)


def _reply_record(reply) -> dict:
    return {"response": reply.raw, "text": reply.text, "refusal": reply.refusal, "finish_reason": reply.finish_reason}


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
            out.raw = {"judge": _reply_record(reply)}
            out.tokens_in, out.tokens_out, out.latency_ms = reply.tokens_in, reply.tokens_out, reply.latency_ms
            out.outcome, answer, out.error = _classify(reply, JudgeAnswer)
            if answer is not None:
                out.score, out.reasoning = answer.score, answer.reasoning
        else:
            p1, s1 = ctx.prompt_text["stage1"], ctx.prompt_text["schemas"]["stage1"]
            reply1 = _call(ctx, lambda: ctx.provider.annotate_stage1(data, mime, p1, s1), attempts)
            out.raw = {"stage1": _reply_record(reply1)}
            out.tokens_in, out.tokens_out, out.latency_ms = reply1.tokens_in, reply1.tokens_out, reply1.latency_ms
            out.outcome, stage1, out.error = _classify(reply1, Stage1Answer, {"keys": ctx.keys})
            if stage1 is not None:
                out.error = ""
                p2, s2 = ctx.prompt_text["stage2"], ctx.prompt_text["schemas"]["stage2"]
                answers = {k: v.model_dump() for k, v in stage1.answers.items()}
                user_text = prompts.stage2_user_text(p2["user"], answers)
                reply2 = _call(ctx, lambda: ctx.provider.annotate_stage2(user_text, p2, s2), attempts)
                out.raw["stage2"] = _reply_record(reply2)
                out.tokens_in += reply2.tokens_in
                out.tokens_out += reply2.tokens_out
                out.latency_ms += reply2.latency_ms
                out.outcome, stage2, error = _classify(reply2, Stage2Answer, {"keys": ctx.keys})
                out.error = f"stage 2: {error}" if error else ""
                if stage2 is not None:
                    out.labels = {k: (v, stage1.answers[k].reasoning) for k, v in stage2.labels.items()}
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
                for key, (value, rationale) in out.labels.items():
                    Label.objects.update_or_create(
                        image_id=out.image_id, annotator_id=run.annotator_id, attribute_id=attribute_ids[key],
                        defaults={"value": value, "rationale": rationale[:4000]},
                    )
                Labeling.objects.update_or_create(
                    image_id=out.image_id, annotator_id=run.annotator_id,
                    defaults={"status": Labeling.STATUS_SUBMITTED, "submitted_at": timezone.now()},
                )
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


def refresh_totals(run_id: int) -> None:
    """Outcome counts, tokens and estimated cost from the stored results (idempotent)."""
    rows = RunResult.objects.filter(run_id=run_id).values("outcome").annotate(n=Count("id"), ti=Sum("tokens_in"), to=Sum("tokens_out"))
    counts, tokens_in, tokens_out = {}, 0, 0
    for row in rows:
        counts[row["outcome"]] = row["n"]
        tokens_in += row["ti"] or 0
        tokens_out += row["to"] or 0
    run = Run.objects.only("provider", "model_name").get(pk=run_id)
    usd = pricing.cost(run.provider, run.model_name, tokens_in, tokens_out)
    Run.objects.filter(pk=run_id).update(
        outcome_counts=counts, tokens_in=tokens_in, tokens_out=tokens_out, estimated_cost_usd=usd if usd is not None else 0
    )


def _heartbeat(run_id: int) -> str:
    Run.objects.filter(pk=run_id).update(heartbeat_at=timezone.now())
    refresh_totals(run_id)
    return Run.objects.values_list("status", flat=True).get(pk=run_id)


# --- a chunk ---------------------------------------------------------------------------------

def run_chunk(run_id: int, image_ids: list[int], concurrency: int | None = None) -> dict:
    """Process the images of one chunk that have no result yet, with at most `concurrency` requests
    in flight (default and maximum: the run's). Safe to run twice, or concurrently."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return {"run": run_id, "skipped": "no such run"}
    if run.status == Run.STATUS_CANCELLING:
        _mark_cancelled(run_id)
    if run.status not in (Run.STATUS_QUEUED, Run.STATUS_RUNNING):
        return {"run": run_id, "skipped": run.status}
    now = timezone.now()
    Run.objects.filter(pk=run_id, status=Run.STATUS_QUEUED).update(status=Run.STATUS_RUNNING, heartbeat_at=now)
    Run.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=now)
    wanted = sorted(set(image_ids) & set(run.image_ids))  # never work on images outside the run
    done = set(RunResult.objects.filter(run_id=run_id, image_id__in=wanted).values_list("image_id", flat=True))
    todo = list(Image.objects.filter(pk__in=[i for i in wanted if i not in done]).exclude(file="").order_by("pk").values_list("pk", "file"))
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
    stats = _execute(run, ctx, todo, width)
    if stats.get("fatal"):
        fail_run(run_id, stats["fatal"])
    else:
        finish_if_complete(run_id)
    return {"run": run_id, **stats}


def _execute(run: Run, ctx: Context, todo: list[tuple[int, str]], width: int) -> dict:
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


# --- status changes ----------------------------------------------------------------------------

def finish_if_complete(run_id: int) -> str:
    refresh_totals(run_id)
    run = Run.objects.get(pk=run_id)
    if run.status == Run.STATUS_CANCELLING:
        _mark_cancelled(run_id)
    elif run.status in (Run.STATUS_QUEUED, Run.STATUS_RUNNING) and not run.missing_image_ids():
        changed = Run.objects.filter(pk=run_id, status__in=[Run.STATUS_QUEUED, Run.STATUS_RUNNING]).update(
            status=Run.STATUS_FINISHED, finished_at=timezone.now()
        )
        if changed and run.task == Run.TASK_ANNOTATE:
            transaction.on_commit(partial(signals.annotate_run_finished.send, sender=Run, run=run))
        elif changed and run.task == Run.TASK_JUDGE:
            transaction.on_commit(partial(signals.judge_run_finished.send, sender=Run, run_id=run_id))
    return Run.objects.values_list("status", flat=True).get(pk=run_id)


def _mark_cancelled(run_id: int) -> None:
    Run.objects.filter(pk=run_id, status=Run.STATUS_CANCELLING).update(status=Run.STATUS_CANCELLED, finished_at=timezone.now())


def fail_run(run_id: int, message: str) -> None:
    Run.objects.filter(pk=run_id, status__in=Run.ACTIVE_STATUSES).update(
        status=Run.STATUS_FAILED, error=message[:4000], finished_at=timezone.now()
    )
    refresh_totals(run_id)


def _heartbeat_is_stale(run: Run, seconds: float) -> bool:
    last = max([t for t in (run.heartbeat_at, run.dispatched_at, run.created_at) if t is not None])
    return timezone.now() - last > timedelta(seconds=seconds)


def cancel_run(user, run: Run) -> bool:
    """Ask running chunks to stop (they check within a heartbeat); False if the run is not active."""
    if not run.is_active:
        return False
    Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE_STATUSES).update(status=Run.STATUS_CANCELLING)
    run.refresh_from_db()
    # Nobody is working on it (never started, or its worker died): nobody else will confirm.
    if run.heartbeat_at is None or _heartbeat_is_stale(run, 3 * settings.CPRT_RUN_HEARTBEAT_S + 5):
        _mark_cancelled(run.pk)
    audit(user, "run.cancel", run, done=run.done_count, total=run.total_images)
    return True


def can_resume(run: Run) -> bool:
    if run.status in (Run.STATUS_CANCELLED, Run.STATUS_FAILED):
        return True
    if run.status == Run.STATUS_FINISHED:
        return run.done_count < run.total_images
    return run.status in (Run.STATUS_QUEUED, Run.STATUS_RUNNING) and _heartbeat_is_stale(run, settings.CPRT_RUN_STALE_S)


def resume_run(user, run: Run) -> int:
    """Re-dispatch every selected image without a result; returns how many."""
    missing = run.missing_image_ids()
    with transaction.atomic():
        if missing:
            Run.objects.filter(pk=run.pk).update(status=Run.STATUS_QUEUED, error="", finished_at=None)
            transaction.on_commit(lambda: dispatch(run.pk, missing))
        audit(user, "run.resume", run, missing=len(missing), previous_status=run.status)
    if not missing:
        Run.objects.filter(pk=run.pk, status__in=[Run.STATUS_CANCELLED, Run.STATUS_FAILED]).update(status=Run.STATUS_RUNNING)
        finish_if_complete(run.pk)
    return len(missing)


def reconcile() -> dict:
    """Periodic (Celery beat): re-dispatch runs whose workers went quiet; close finished or cancelled ones."""
    redispatched, finished, cancelled = [], [], []
    stale = settings.CPRT_RUN_STALE_S
    for run in Run.objects.filter(status__in=[Run.STATUS_QUEUED, Run.STATUS_RUNNING]):
        if not _heartbeat_is_stale(run, stale):
            continue
        missing = run.missing_image_ids()
        if missing:
            dispatch(run.pk, missing)
            audit(None, "run.redispatch", run, missing=len(missing))
            redispatched.append(run.pk)
        elif finish_if_complete(run.pk) == Run.STATUS_FINISHED:
            finished.append(run.pk)
    for run in Run.objects.filter(status=Run.STATUS_CANCELLING):
        if _heartbeat_is_stale(run, 3 * settings.CPRT_RUN_HEARTBEAT_S + 5):
            _mark_cancelled(run.pk)
            cancelled.append(run.pk)
    return {"redispatched": redispatched, "finished": finished, "cancelled": cancelled}
