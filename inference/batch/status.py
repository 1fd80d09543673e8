"""What the run page shows of a batch run (its provider batches, failed requests, whether a retry is
possible): plain reads of the batch tables, importable from the models without the run lifecycle."""
from __future__ import annotations

from django.utils import timezone

from ..models import Run
from .models import BatchRequest, ProviderBatch

OPEN_PHASES = (ProviderBatch.BUILDING, ProviderBatch.ACTIVE)


def failed_count(run: Run) -> int:
    return BatchRequest.objects.filter(run=run, state=BatchRequest.FAILED).count()


def can_retry(run: Run) -> bool:
    return (run.mode == Run.MODE_BATCH and run.status == Run.STATUS_RUNNING and failed_count(run) > 0
            and not ProviderBatch.objects.filter(run=run, phase__in=OPEN_PHASES).exists())


def summary(run: Run) -> dict:
    now = timezone.now()
    batches = list(ProviderBatch.objects.filter(run=run))
    for batch in batches:
        batch.overdue = batch.phase == ProviderBatch.ACTIVE and batch.expires_at is not None and batch.expires_at < now
    return {"batches": batches, "failed": failed_count(run), "can_retry": can_retry(run)}
