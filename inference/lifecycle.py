"""A run's lifecycle after launch: totals, finishing, failing, confirming a cancel, and the reconciler.

Every status change goes through the job base's declared transitions (`Run.move`, compare-and-set;
core.jobs.TRANSITIONS). A worker killed mid-run loses at most its in-flight requests: `reconcile()`
(Celery beat) re-dispatches lanes whose lease expired, and a person's resume (inference.runs)
re-dispatches every selected image that has no result. A finished run tells the apps above through
inference.signals (sent on commit).
"""
from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from core import broker, metrics
from core.audit import audit
from core.secrets import scrub

from . import dispatching, kinds, leases, outcomes, pricing
from .items import missing_item_ids
from .models import Run, RunLane, RunResult

log = logging.getLogger(__name__)

def refresh_totals(run_id: int) -> None:
    """Outcome counts, done, tokens and estimated cost from the stored results (idempotent).

    The run's row is locked first and the results counted after: two lanes ending together could
    otherwise each count, and the one that counted before the other's results committed would write
    its smaller totals last (a finished run showing 3 of 5 done). With the lock, the last writer
    counts after every commit that came before it."""
    with transaction.atomic():
        Run.objects.select_for_update().filter(pk=run_id).values_list("pk", flat=True).first()
        _write_totals(run_id)


def _write_totals(run_id: int) -> None:
    rows = RunResult.objects.filter(run_id=run_id).values("outcome").annotate(n=Count("id"), ti=Sum("tokens_in"), to=Sum("tokens_out"))
    counts, tokens_in, tokens_out = {}, 0, 0
    for row in rows:
        counts[row["outcome"]] = row["n"]
        tokens_in += row["ti"] or 0
        tokens_out += row["to"] or 0
    run = Run.objects.only("provider", "model_name", "mode").get(pk=run_id)
    usd = pricing.cost(run.provider, run.model_name, tokens_in, tokens_out, run.mode)
    Run.objects.filter(pk=run_id).update(
        outcome_counts=counts, done=sum(counts.values()), tokens_in=tokens_in, tokens_out=tokens_out,
        estimated_cost_usd=usd if usd is not None else 0,
    )


# --- status changes ----------------------------------------------------------------------------

def finish_if_complete(run_id: int) -> str:
    refresh_totals(run_id)
    run = Run.objects.get(pk=run_id)
    if run.status == Run.STATUS_CANCELLING:
        mark_cancelled(run_id)
    elif run.status in (Run.STATUS_QUEUED, Run.STATUS_RUNNING) and not missing_item_ids(run):
        if Run.move(run_id, "finish"):
            kinds.get(run.task)(run).finished()  # its metrics hook (sent on commit)
    return Run.objects.values_list("status", flat=True).get(pk=run_id)


def mark_cancelled(run_id: int) -> None:
    """A requested cancel is confirmed (by a worker, or because nobody works on the run)."""
    Run.move(run_id, "cancel", where=Q(status=Run.STATUS_CANCELLING))


def fail_run(run_id: int, message: str) -> None:
    Run.move(run_id, "fail", error=message[:4000])
    refresh_totals(run_id)


# Written with every requeue (resume, retry failed): a resumed run starts with a clean slate.
CLEAR_PAUSE = {"stop_reason": "", "failures_in_a_row": 0, "failing_since": None}


def pause_run(run_id: int, reason: str, message: str) -> bool:
    """Every further request would fail the same way: stop the run with a named reason (`fail` move,
    `stop_reason`; the error says what and what to do), once. The page and the API show it,
    /metrics counts it (cprt_run_pauses_total, cprt_runs_paused) and one WARNING line logs it.
    Resume (inference.runs.resume_run) after the fix continues with the items that have no result."""
    label = outcomes.pause_label(reason)
    text = f"Paused: {label}. Last error: {message}. Fix the cause, then Resume: the run continues where it stopped."
    moved = Run.move(run_id, "fail", where=Q(status__in=[Run.STATUS_QUEUED, Run.STATUS_RUNNING]), error=text[:4000], stop_reason=reason)
    if not moved:
        mark_cancelled(run_id)  # a cancel asked meanwhile wins; a run already stopped stays as it is
    refresh_totals(run_id)
    if moved:
        metrics.run_paused(reason)
        log.warning("run %s paused (%s): %s", run_id, reason, scrub(message)[:500])
    return moved


def heartbeat_is_stale(run: Run, seconds: float) -> bool:
    """No chunk has shown a sign of life (or been dispatched) for `seconds`."""
    last = max([t for t in (run.heartbeat_at, run.dispatched_at, run.created_at) if t is not None])
    return timezone.now() - last > timedelta(seconds=seconds)


def cancel_is_unattended(run: Run) -> bool:
    """Nobody is working on the run (never started, or its workers died): nobody else will confirm a cancel."""
    return not leases.live(run) and heartbeat_is_stale(run, 3 * settings.CPRT_RUN_HEARTBEAT_S + 5)


ASK_BROKER = object()


def reconcile(emptied_at: datetime | None | object = ASK_BROKER) -> dict:
    """Periodic (Celery beat, through core.reconcile_jobs, which passes the broker's `emptied_at`):
    re-dispatch the lanes whose lease expired (their worker went silent) and the lanes whose message
    never went out or was lost with the broker's data, never queued work; close finished runs and
    abandoned cancels. See inference.leases. Called without `emptied_at`, it asks the broker itself."""
    redispatched, finished, cancelled = [], [], []
    if emptied_at is ASK_BROKER:
        emptied_at = broker.emptied_at()
    # Batch runs are looked after by their own poller (inference.batch.lifecycle.poll_all).
    for run in Run.objects.filter(status__in=[Run.STATUS_QUEUED, Run.STATUS_RUNNING]).exclude(mode=Run.MODE_BATCH):
        if not RunLane.objects.filter(run=run).exists():
            # Dispatched before lanes existed: judged once by its heartbeat (dispatch deals its lanes).
            if heartbeat_is_stale(run, settings.CPRT_RUN_STALE_S) and missing_item_ids(run):
                dispatching.dispatch(run.pk)
                audit(None, "run.redispatch", run, missing=len(missing_item_ids(run)))
                redispatched.append(run.pk)
                continue
        expired, unsent = leases.expired(run), leases.unsent(run, emptied_at)
        if expired or unsent:
            missing = set(missing_item_ids(run))
            todo = [lane.index for lane in expired + unsent if missing.intersection(lane.item_ids)]
            if todo:
                dispatching.dispatch(run.pk, sorted(missing), lanes=todo)
                details = {"unsent": [x.index for x in unsent], "broker_emptied": emptied_at is not None} if unsent else {}
                audit(None, "run.redispatch", run, lanes=todo, missing=sum(len(missing.intersection(x.item_ids)) for x in expired + unsent),
                      **details)
                redispatched.append(run.pk)
            for lane in expired:
                if lane.index not in todo:
                    leases.lane_lease(run.pk, lane.index, owner=lane.owner).release()
        if run.pk not in redispatched and not leases.live(run) and not missing_item_ids(run):
            if finish_if_complete(run.pk) == Run.STATUS_FINISHED:
                finished.append(run.pk)
    for run in Run.objects.filter(status=Run.STATUS_CANCELLING).exclude(mode=Run.MODE_BATCH):
        if cancel_is_unattended(run):
            mark_cancelled(run.pk)
            cancelled.append(run.pk)
    return {"redispatched": redispatched, "finished": finished, "cancelled": cancelled}
