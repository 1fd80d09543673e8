"""A run's lifecycle after launch: totals, finishing, failing, cancel, resume and reconcile.

A worker killed mid-run loses at most its in-flight requests. `reconcile()` (Celery beat) and
`resume_run()` (the page's button) re-dispatch every selected image that has no result. A finished
run tells the apps above through inference.signals (sent on commit).
"""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Sum
from django.utils import timezone

from core.audit import audit

from . import kinds, launching, leases, pricing
from .models import Run, RunLane, RunResult


def refresh_totals(run_id: int) -> None:
    """Outcome counts, tokens and estimated cost from the stored results (idempotent)."""
    rows = RunResult.objects.filter(run_id=run_id).values("outcome").annotate(n=Count("id"), ti=Sum("tokens_in"), to=Sum("tokens_out"))
    counts, tokens_in, tokens_out = {}, 0, 0
    for row in rows:
        counts[row["outcome"]] = row["n"]
        tokens_in += row["ti"] or 0
        tokens_out += row["to"] or 0
    run = Run.objects.only("provider", "model_name", "mode").get(pk=run_id)
    usd = pricing.cost(run.provider, run.model_name, tokens_in, tokens_out, run.mode)
    Run.objects.filter(pk=run_id).update(
        outcome_counts=counts, tokens_in=tokens_in, tokens_out=tokens_out, estimated_cost_usd=usd if usd is not None else 0
    )


# --- status changes ----------------------------------------------------------------------------

def finish_if_complete(run_id: int) -> str:
    refresh_totals(run_id)
    run = Run.objects.get(pk=run_id)
    if run.status == Run.STATUS_CANCELLING:
        mark_cancelled(run_id)
    elif run.status in (Run.STATUS_QUEUED, Run.STATUS_RUNNING) and not run.missing_image_ids():
        changed = Run.objects.filter(pk=run_id, status__in=[Run.STATUS_QUEUED, Run.STATUS_RUNNING]).update(
            status=Run.STATUS_FINISHED, finished_at=timezone.now()
        )
        if changed:
            kinds.get(run.task)(run).finished()  # its metrics hook (sent on commit)
    return Run.objects.values_list("status", flat=True).get(pk=run_id)


def mark_cancelled(run_id: int) -> None:
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
    if run.mode == Run.MODE_BATCH:
        from .batch.control import cancel

        return cancel(user, run)
    if not run.is_active:
        return False
    Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE_STATUSES).update(status=Run.STATUS_CANCELLING)
    run.refresh_from_db()
    # Nobody is working on it (never started, or its worker died): nobody else will confirm.
    if not leases.live(run) and (run.heartbeat_at is None or _heartbeat_is_stale(run, 3 * settings.CPRT_RUN_HEARTBEAT_S + 5)):
        mark_cancelled(run.pk)
    audit(user, "run.cancel", run, done=run.done_count, total=run.total_images)
    return True


def can_resume(run: Run) -> bool:
    if run.mode == Run.MODE_BATCH and run.batches.filter(phase__in=("building", "active")).exists():
        return False  # its requests are at the provider; cancel first
    if run.status in (Run.STATUS_CANCELLED, Run.STATUS_FAILED):
        return True
    if run.status == Run.STATUS_FINISHED:
        return run.done_count < run.total_images
    return run.status in (Run.STATUS_QUEUED, Run.STATUS_RUNNING) and not leases.live(run) and _heartbeat_is_stale(run, settings.CPRT_RUN_STALE_S)


def resume_run(user, run: Run) -> int:
    """Re-dispatch every selected image without a result; returns how many."""
    missing = run.missing_image_ids()
    with transaction.atomic():
        if missing:
            Run.objects.filter(pk=run.pk).update(status=Run.STATUS_QUEUED, error="", finished_at=None)
            transaction.on_commit(lambda: launching.dispatch(run.pk, missing, takeover=True))
        audit(user, "run.resume", run, missing=len(missing), previous_status=run.status)
    if not missing:
        Run.objects.filter(pk=run.pk, status__in=[Run.STATUS_CANCELLED, Run.STATUS_FAILED]).update(status=Run.STATUS_RUNNING)
        finish_if_complete(run.pk)
    return len(missing)


def reconcile() -> dict:
    """Periodic (Celery beat): re-dispatch the lanes whose lease expired (their worker went silent),
    never queued work; close finished runs and abandoned cancels. See inference.leases."""
    redispatched, finished, cancelled = [], [], []
    # Batch runs are looked after by their own poller (inference.batch.lifecycle.poll_all).
    for run in Run.objects.filter(status__in=[Run.STATUS_QUEUED, Run.STATUS_RUNNING]).exclude(mode=Run.MODE_BATCH):
        if not RunLane.objects.filter(run=run).exists():
            # Dispatched before lanes existed: judged once by its heartbeat (dispatch deals its lanes).
            if _heartbeat_is_stale(run, settings.CPRT_RUN_STALE_S) and run.missing_image_ids():
                launching.dispatch(run.pk)
                audit(None, "run.redispatch", run, missing=len(run.missing_image_ids()))
                redispatched.append(run.pk)
                continue
        expired = leases.expired(run)
        if expired:
            missing = set(run.missing_image_ids())
            todo = [lane.index for lane in expired if missing.intersection(lane.image_ids)]
            if todo:
                launching.dispatch(run.pk, sorted(missing), lanes=todo)
                audit(None, "run.redispatch", run, lanes=todo, missing=sum(len(missing.intersection(x.image_ids)) for x in expired))
                redispatched.append(run.pk)
            for lane in expired:
                if lane.index not in todo:
                    leases.Lease(run.pk, lane.index, owner=lane.owner).release()
        if run.pk not in redispatched and not leases.live(run) and not run.missing_image_ids():
            if finish_if_complete(run.pk) == Run.STATUS_FINISHED:
                finished.append(run.pk)
    for run in Run.objects.filter(status=Run.STATUS_CANCELLING).exclude(mode=Run.MODE_BATCH):
        if not leases.live(run) and _heartbeat_is_stale(run, 3 * settings.CPRT_RUN_HEARTBEAT_S + 5):
            mark_cancelled(run.pk)
            cancelled.append(run.pk)
    return {"redispatched": redispatched, "finished": finished, "cancelled": cancelled}
