"""What a person can do to a launched run (the run pages, the API and the commands call these):
cancel, resume, retry the failed items.

Online runs are cancelled by a status flag that their chunks read back within a heartbeat; batch
runs through their provider batches (inference.batch.control). A resume re-dispatches every
selected image without a result, taking over lanes whose workers are gone. A retry of the failed
items deletes the run's `error` results (not refusals nor unparseable answers: those will not change)
and re-dispatches exactly those images, once.
"""
from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from core.audit import audit
from core.jobs import FINAL_STATUSES

from . import dispatching, leases
from .batch import control as batch_control
from .lifecycle import CLEAR_PAUSE, finish_if_complete, heartbeat_is_stale, mark_cancelled, refresh_totals
from .items import missing_item_ids
from .models import Run, RunResult


def cancel_run(user, run: Run) -> bool:
    """Ask running chunks to stop (they check within a heartbeat); False if the run is not active."""
    if run.mode == Run.MODE_BATCH:
        return batch_control.cancel(user, run)
    if not run.is_active:
        return False
    Run.move(run.pk, "request_cancel")
    run.refresh_from_db()
    # Nobody is working on it (never started, or its worker died): nobody else will confirm.
    if not leases.live(run) and (run.heartbeat_at is None or heartbeat_is_stale(run, 3 * settings.CPRT_RUN_HEARTBEAT_S + 5)):
        mark_cancelled(run.pk)
    audit(user, "run.cancel", run, done=run.done_count, total=run.total_images)
    return True


def can_resume(run: Run) -> bool:
    if run.mode == Run.MODE_BATCH and run.batches.filter(phase__in=("building", "active")).exists():
        return False  # its requests are at the provider; cancel first
    if run.status == Run.STATUS_CANCELLED:  # cancelled after its last item: nothing is left to resume
        return run.done_count < run.total_images
    if run.status == Run.STATUS_FAILED:
        return True
    if run.status == Run.STATUS_FINISHED:
        return run.done_count < run.total_images
    return run.status in (Run.STATUS_QUEUED, Run.STATUS_RUNNING) and not leases.live(run) and heartbeat_is_stale(run, settings.CPRT_RUN_STALE_S)


def resume_run(user, run: Run) -> int:
    """Re-dispatch every selected image without a result; returns how many."""
    missing = missing_item_ids(run)
    with transaction.atomic():
        if missing and batch_control.resumes_in_batch(run):
            # A paused batch run: its failed requests go out again in a follow-up batch (the poller steps it).
            Run.move(run.pk, "requeue", error="", **CLEAR_PAUSE)
            dispatching.resubmit_batch(run.pk)
        elif missing:
            Run.move(run.pk, "requeue", error="", **CLEAR_PAUSE)
            dispatching.dispatch_on_commit(run.pk, missing, takeover=True)
        audit(user, "run.resume", run, missing=len(missing), previous_status=run.status)
    if not missing:
        Run.moves(Run.objects.filter(pk=run.pk, status__in=[Run.STATUS_CANCELLED, Run.STATUS_FAILED]), "requeue", **CLEAR_PAUSE)
        finish_if_complete(run.pk)
    return len(missing)


def can_retry_failed(run: Run) -> bool:
    """The run is not active (nor its provider batches) and has `error` results."""
    if run.is_active:
        return False
    if run.mode == Run.MODE_BATCH and run.batches.filter(phase__in=("building", "active")).exists():
        return False
    return run.results.filter(outcome=RunResult.OUTCOME_ERROR).exists()


def retry_failed(user, run: Run, send: bool = True) -> int:
    """Delete the run's `error` results and re-dispatch exactly those images; returns how many (0:
    nothing to retry, or the run is active). The requeue is the compare-and-set: of two retries at
    once, only the one that moves the run out of its final status deletes and re-sends anything.
    Without `send` nothing is dispatched: the caller works the run itself (`retry_failed --here`)."""
    if not can_retry_failed(run):
        return 0
    previous = run.status
    with transaction.atomic():
        if not Run.move(run.pk, "requeue", where=Q(status__in=FINAL_STATUSES), error="", **CLEAR_PAUSE):
            return 0  # another retry (or resume) got there first
        failed = RunResult.objects.filter(run_id=run.pk, outcome=RunResult.OUTCOME_ERROR)
        item_ids = sorted(failed.values_list("item_id", flat=True))
        RunResult.objects.filter(run_id=run.pk, outcome=RunResult.OUTCOME_ERROR, item_id__in=item_ids).delete()
        refresh_totals(run.pk)
        if item_ids and send:
            dispatching.dispatch_on_commit(run.pk, item_ids, takeover=True)
        audit(user, "run.retry_failed", run, images=len(item_ids), previous_status=previous)
    if not item_ids:
        finish_if_complete(run.pk)
    return len(item_ids)
