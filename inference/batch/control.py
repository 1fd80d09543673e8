"""A batch run's status, cancel and retry: what the run pages and `inference.runs` call.

Kept apart from `lifecycle` (submission, polling, ingest), which writes results: the runs facade
(`inference.runs.cancel_run`) reaches batch runs through this module without the ingest code.
"""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from core.audit import audit

from .. import dispatching, kinds
from ..lifecycle import finish_if_complete, mark_cancelled, refresh_totals
from ..models import Run
from ..providers import ProviderUnavailable
from . import conf
from .clients import client_for
from .models import BatchRequest, ProviderBatch
from .status import OPEN_PHASES, can_retry, failed_count  # noqa: F401 - re-exported



def end_unsent(batch: ProviderBatch, message: str) -> None:
    with transaction.atomic():
        ProviderBatch.objects.filter(pk=batch.pk).update(phase=ProviderBatch.ENDED, error=message[:4000])
        BatchRequest.objects.filter(batch=batch, state=BatchRequest.SUBMITTED).update(state=BatchRequest.FAILED, error=message[:2000])


def next_stage_due(run: Run) -> tuple[str, list[int]]:
    """(stage, item ids) of the kind's next stage whose earlier answers are back and valid, with no
    request of that stage yet; ("", []) when none (one-stage kinds: never)."""
    stages = kinds.get(run.task).stages
    for earlier, stage in zip(stages, stages[1:]):
        asked = BatchRequest.objects.filter(run=run, stage=stage).values("item_id")
        ids = list(BatchRequest.objects.filter(run=run, stage=earlier, state=BatchRequest.DONE).exclude(reply={})
                   .exclude(item_id__in=asked).values_list("item_id", flat=True))
        if ids:
            return stage, ids
    return "", []


def settle(run_id: int) -> str:
    """Totals, and the run's status once nothing is open at the provider."""
    refresh_totals(run_id)
    run = Run.objects.get(pk=run_id)
    open_batches = ProviderBatch.objects.filter(run=run, phase__in=OPEN_PHASES)
    overdue = open_batches.filter(phase=ProviderBatch.ACTIVE, expires_at__lt=timezone.now())
    if overdue.exists():
        ids = ", ".join(overdue.values_list("provider_batch_id", flat=True)[:5])
        _note(run, f"Batches still pending after the provider's {conf.window_hours():g} h window: {ids}. "
                   "They may still finish or expire; cancel the run to stop waiting.")
    elif open_batches.exists():
        return run.status
    elif run.status == Run.STATUS_CANCELLING:
        mark_cancelled(run_id)
    elif run.status == Run.STATUS_RUNNING:
        failed = BatchRequest.objects.filter(run=run, state=BatchRequest.FAILED).count()
        if failed:
            _note(run, f"{failed} batch requests failed or expired; retry them online or in a follow-up batch.")
        elif not next_stage_due(run)[1] and not BatchRequest.objects.filter(run=run, state=BatchRequest.ONLINE).exists():
            finish_if_complete(run_id)
    return Run.objects.values_list("status", flat=True).get(pk=run_id)


def _note(run: Run, message: str) -> None:
    if run.error != message:
        Run.objects.filter(pk=run.pk).update(error=message)


# --- cancel and retry ----------------------------------------------------------------------------

def cancel_at_provider(batch: ProviderBatch, client) -> None:
    try:
        status = client.cancel(batch.provider_batch_id)
    except Exception as exc:  # noqa: BLE001 - the next poll shows the provider's state anyway
        ProviderBatch.objects.filter(pk=batch.pk).update(error=f"cancel failed: {exc}"[:4000])
        return
    ProviderBatch.objects.filter(pk=batch.pk).update(provider_state=status.state, counts=status.counts)


def cancel(user, run: Run) -> bool:
    """Cancel the provider batches; results that came back are still ingested (paid for), then the run is cancelled."""
    if not run.is_active:
        return False
    Run.move(run.pk, "request_cancel")
    ProviderBatch.objects.filter(run=run, phase__in=OPEN_PHASES).update(cancel_requested=True)
    for batch in ProviderBatch.objects.filter(run=run, phase=ProviderBatch.BUILDING, submit_claimed_at__isnull=True):
        if ProviderBatch.objects.filter(pk=batch.pk, submit_claimed_at__isnull=True).update(submit_claimed_at=timezone.now()):
            end_unsent(batch, "cancelled before submission")
    active = list(ProviderBatch.objects.filter(run=run, phase=ProviderBatch.ACTIVE))
    if active:
        try:
            client = client_for(run.provider, run.model_name)
        except ProviderUnavailable:
            client = None
        for batch in active:
            if batch.provider_batch_id.startswith("offline:"):  # nobody to tell: its output will not be ingested
                end_unsent(batch, "cancelled (offline batch)")
            elif client is not None:
                cancel_at_provider(batch, client)
    audit(user, "run.cancel", run, mode="batch", provider_batches=[b.provider_batch_id for b in active])
    settle(run.pk)
    return True


def resumes_in_batch(run: Run) -> bool:
    """A batch run that paused itself (`stop_reason`, inference.batch.pauses) and has failed requests:
    Resume sends them again in a follow-up batch rather than online."""
    return (run.mode == Run.MODE_BATCH and bool(run.stop_reason) and not conf.is_offline(run.provider)
            and BatchRequest.objects.filter(run=run, state=BatchRequest.FAILED).exists())


def retry(user, run: Run, how: str) -> int:
    """Retry the failed or expired requests: `online` (the normal chunk path) or `batch` (a follow-up batch)."""
    if how not in ("online", "batch"):
        raise ValueError("Retry how? Choose online or batch.")
    if not can_retry(run):
        raise ValueError(f"Run #{run.pk} has no failed batch requests to retry (or batches are still open).")
    failed = list(BatchRequest.objects.filter(run=run, state=BatchRequest.FAILED).values_list("item_id", "stage"))
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(error="")
        if how == "online":
            ids = sorted({item_id for item_id, _ in failed})
            BatchRequest.objects.filter(run=run, state=BatchRequest.FAILED).update(state=BatchRequest.ONLINE)
            dispatching.dispatch_on_commit(run.pk, ids)
        else:
            dispatching.resubmit_batch(run.pk)
        audit(user, "run.batch_retry", run, how=how, requests=len(failed))
    return len(failed)
