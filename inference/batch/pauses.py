"""When a batch run pauses itself: the reasons of an online run (`inference.outcomes.PAUSE_REASONS`),
read from what the provider's batch endpoints answered and what its output says. docs/background-jobs.md,
"What a provider's answer means" (batch runs).

* A submission answered 401/403 or 404, or a 2xx that is not the API's JSON (`FatalProviderError`
  from the batch client): `auth`, `no_model`, `not_api`, at the first one.
* An output line failed with 401/403 or 404: `auth`, `no_model`.
* A finished batch that answered nothing: every line unreadable (`not_api`), the batch itself failed
  by the provider (`no_model` when its message says the model is unknown, else `items_failing`), or
  every request failed (`provider_failing` when all of them with 429/5xx, else `items_failing`).
* Failed requests count towards the run's failure streak as online items do (`Run.failures_in_a_row`;
  a batch with any answer ends it): `CPRT_RUN_PAUSE_AFTER_FAILURES` in a row, or failures for
  `CPRT_RUN_PAUSE_AFTER_S`, pause the run. Expired requests (the provider's window passed) and 4xx
  about the item itself never count: they stay failed for a retry, as before.

A pause ends the run's open batches (those at the provider are cancelled there; their requests are
failed), so that Resume (`inference.runs.resume_run`) sends every failed request again in a
follow-up batch once the cause is fixed.
"""
from __future__ import annotations

import re

from django.conf import settings
from django.db.models import DateTimeField, F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from ..lifecycle import pause_run
from ..models import Run
from .control import cancel_at_provider, end_unsent
from .models import ProviderBatch

FAILED_STATES = {"failed", "JOB_STATE_FAILED"}
NO_MODEL = re.compile(r"model_not_found|model\b.*\b(not found|does not exist|is not supported|unknown)", re.IGNORECASE)


def after_ingest(batch: ProviderBatch, status, report) -> tuple[str, str] | None:
    """(reason, message) of the pause that a finished batch's output calls for, else None; keeps the
    run's failure streak (`report`: the ingest's `Report`)."""
    if report.fatal:
        return report.fatal
    if report.stored or report.stage1_kept:
        Run.objects.filter(pk=batch.run_id, failures_in_a_row__gt=0).update(failures_in_a_row=0, failing_since=None)
        return None
    if report.refused_count and not report.failed:
        first = report.refused[0]["reason"] if report.refused else "unreadable"
        return "not_api", f"none of the {report.refused_count} lines of the provider's output is a batch result ({first})"
    if status.state in FAILED_STATES:
        message = status.message or f"the provider failed batch {batch.provider_batch_id}"
        return ("no_model" if NO_MODEL.search(message) else "items_failing"), message
    if not report.counted:
        return None
    now = timezone.now()
    Run.objects.filter(pk=batch.run_id).update(
        failures_in_a_row=F("failures_in_a_row") + report.counted, failing_since=Coalesce("failing_since", Value(now, output_field=DateTimeField())))
    count, since = Run.objects.values_list("failures_in_a_row", "failing_since").get(pk=batch.run_id)
    every_request = report.counted >= batch.request_count
    too_long = since is not None and (now - since).total_seconds() >= settings.CPRT_RUN_PAUSE_AFTER_S
    if every_request or count >= settings.CPRT_RUN_PAUSE_AFTER_FAILURES or too_long:
        reason = "provider_failing" if report.transient == report.counted else "items_failing"
        return reason, f"{report.counted} of the batch's {batch.request_count} requests failed, none answered; last: {report.last_failure}"
    return None


def pause(run_id: int, reason: str, message: str, client=None) -> bool:
    """Pause the run (`inference.lifecycle.pause_run`) and end its open batches: one not sent yet is
    ended here, one at the provider is cancelled there (`client`) and ended; their requests fail, for
    Resume to send again. A run no longer running (a cancel asked meanwhile) is left as it is."""
    if not Run.objects.filter(pk=run_id, status__in=[Run.STATUS_QUEUED, Run.STATUS_RUNNING]).exists():
        return False
    moved = pause_run(run_id, reason, message)
    ended = f"not finished: the run paused ({reason})"
    for batch in ProviderBatch.objects.filter(run_id=run_id, phase=ProviderBatch.BUILDING, provider_batch_id=""):
        if ProviderBatch.objects.filter(pk=batch.pk, phase=ProviderBatch.BUILDING, submit_claimed_at=batch.submit_claimed_at).update(
                submit_claimed_at=timezone.now()):
            end_unsent(batch, ended)
    for batch in ProviderBatch.objects.filter(run_id=run_id, phase=ProviderBatch.ACTIVE):
        if client is not None and not batch.provider_batch_id.startswith("offline:"):
            cancel_at_provider(batch, client)
        end_unsent(batch, ended)
    return moved
