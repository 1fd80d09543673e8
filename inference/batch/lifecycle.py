"""A batch run's life: submit, poll (Celery beat, no worker waits), ingest, stage 2. Status, cancel
and retry are in `control` (importable by the run lifecycle without the execution layer).

`step(run_id)` does everything that is due for one run and is safe to run twice or concurrently:
* submission: the ProviderBatch row and its BatchRequest rows are created in one transaction
  (unique per run/stage/round/part and per run/image/stage: a second copy of the step fails and
  rolls back), then the upload is claimed with a conditional UPDATE before any money is spent;
* ingest: claimed with a lease (`core.jobs.Lease` on `ingest_owner` / `ingest_expires_at`); a claim
  whose worker died expires after CPRT_BATCH_INGEST_STALE_S and is taken over; request rows move
  submitted -> done in the same transaction as the results, so a re-ingest skips what was stored
  (see `ingest`);
* a pause (`pauses`): a submission or an output that every request would get the same way (401/403,
  404, not the API's JSON, every request failing) pauses the run with a named reason, as online.
"""
from __future__ import annotations

import logging
import tempfile
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F, Max, Q
from django.utils import timezone

from core.audit import audit
from core.jobs import Lease

from .. import kinds
from ..items import missing_item_ids
from ..models import Run
from ..providers import FatalProviderError, ProviderError, ProviderUnavailable
from ..lifecycle import fail_run
from . import conf, pauses
from .control import OPEN_PHASES, cancel_at_provider, end_unsent, next_stage_due, settle  # noqa: F401 - re-exported
from .clients import client_for
from .ingest import ingest_lines
from .models import BatchRequest, ProviderBatch
from .requests import first_stage, model_requests, write_parts

log = logging.getLogger(__name__)


# --- submission --------------------------------------------------------------------------------

def stage_client(run: Run, stage: str, client=None):
    """The batch client for `stage`: the run's (`client` when given), or one for the other model of
    the same provider that the kind sends this stage to (`Kind.model_for`)."""
    model = kinds.get(run.task)(run).model_for(stage)
    if model != run.model_name:
        return client_for(run.provider, model)
    return client or client_for(run.provider, run.model_name)


def submit(run: Run, stage: str, item_ids: list[int], client=None, retry: bool = False) -> list[ProviderBatch]:
    """Build the request files for `item_ids` at `stage`, split by the provider's limits, record and send them.
    `retry`: the requests exist and failed; they move to the new batches (only if still failed)."""
    if not item_ids:
        return []
    client = stage_client(run, stage, client)
    sent = []
    with tempfile.TemporaryDirectory(prefix="cprt-batch-") as directory:
        parts = write_parts(run, stage, model_requests(run, stage, item_ids), client.line, directory)
        next_round = (ProviderBatch.objects.filter(run=run, stage=stage).aggregate(r=Max("round"))["r"] + 1
                      if ProviderBatch.objects.filter(run=run, stage=stage).exists() else 0)
        try:
            with transaction.atomic():
                batches = [record(run, stage, next_round, i, part, retry) for i, part in enumerate(parts)]
        except IntegrityError:
            log.info("run %s: %s round %s was recorded by another worker", run.pk, stage, next_round)
            return []
        for batch, part in zip(batches, parts):
            if send(batch, client, part.path):
                sent.append(batch)
    return sent


def record(run: Run, stage: str, round_: int, index: int, part, retry: bool) -> ProviderBatch:
    batch = ProviderBatch.objects.create(run=run, stage=stage, round=round_, part=index,
                                         request_count=len(part.item_ids), input_bytes=part.bytes)
    if retry:
        moved = BatchRequest.objects.filter(run=run, stage=stage, item_id__in=part.item_ids, state=BatchRequest.FAILED).update(
            batch=batch, state=BatchRequest.SUBMITTED, error="", attempts=F("attempts") + 1)
        if moved != len(part.item_ids):
            raise IntegrityError("these failed requests were retried by someone else")
    else:
        pairs = list(zip(part.item_ids, part.image_ids))
        for i in range(0, len(pairs), 500):  # 500 rows at a time: memory stays flat
            BatchRequest.objects.bulk_create([BatchRequest(run=run, item_id=k, image_id=m, stage=stage, batch=batch) for k, m in pairs[i : i + 500]])
    return batch


def send(batch: ProviderBatch, client, path: str) -> bool:
    """Upload and create the provider batch, once: the claim is a conditional UPDATE."""
    now = timezone.now()
    if not ProviderBatch.objects.filter(pk=batch.pk, phase=ProviderBatch.BUILDING, submit_claimed_at__isnull=True).update(submit_claimed_at=now):
        return False
    try:
        batch_id, file_id, status = client.submit(path, batch.request_count, {"cprt_batch": str(batch.pk), "cprt_run": str(batch.run_id)})
    except FatalProviderError as exc:  # 401/403, 404, not the API: every submission would get the same
        end_unsent(batch, f"submission failed: {exc}")
        pauses.pause(batch.run_id, exc.reason, str(exc), client)
        return False
    except (ProviderError, ProviderUnavailable, OSError) as exc:
        end_unsent(batch, f"submission failed: {exc}")
        return False
    expires = status.expires_at or now + timedelta(hours=conf.window_hours())
    ProviderBatch.objects.filter(pk=batch.pk).update(
        phase=ProviderBatch.ACTIVE, provider_batch_id=batch_id, input_file_id=file_id, provider_state=status.state,
        counts=status.counts, submitted_at=timezone.now(), expires_at=expires,
    )
    audit(None, "run.batch_submit", batch.run, stage=batch.stage, round=batch.round, part=batch.part,
          provider_batch=batch_id, requests=batch.request_count, bytes=batch.input_bytes)
    if ProviderBatch.objects.filter(pk=batch.pk, cancel_requested=True).exists():
        cancel_at_provider(ProviderBatch.objects.get(pk=batch.pk), client)
    return True



def _resend_stale(run: Run, client) -> None:
    """A batch recorded but never sent (its worker died before or during the upload)."""
    stale = timezone.now() - timedelta(seconds=conf.ingest_stale_after())
    for batch in ProviderBatch.objects.filter(run=run, phase=ProviderBatch.BUILDING, provider_batch_id="").filter(
        Q(submit_claimed_at__isnull=True, created_at__lt=stale) | Q(submit_claimed_at__lt=stale)
    ):
        if not ProviderBatch.objects.filter(pk=batch.pk, submit_claimed_at=batch.submit_claimed_at).update(submit_claimed_at=None):
            continue
        ids = list(BatchRequest.objects.filter(batch=batch, state=BatchRequest.SUBMITTED).values_list("item_id", flat=True))
        stage_batch_client = stage_client(run, batch.stage, client)
        with tempfile.TemporaryDirectory(prefix="cprt-batch-") as directory:
            parts = write_parts(run, batch.stage, model_requests(run, batch.stage, ids), stage_batch_client.line, directory,
                                max_requests=max(1, len(ids)), max_bytes=2**62)
            if parts:
                send(batch, stage_batch_client, parts[0].path)
            else:
                end_unsent(batch, "none of its items is left")


# --- polling and ingest ------------------------------------------------------------------------

def poll(batch: ProviderBatch, client) -> None:
    try:
        status = client.retrieve(batch.provider_batch_id)
    except Exception as exc:  # noqa: BLE001 - a poll that fails is tried again at the next beat
        ProviderBatch.objects.filter(pk=batch.pk).update(error=f"poll failed: {exc}"[:4000], polled_at=timezone.now())
        return
    ProviderBatch.objects.filter(pk=batch.pk).update(
        provider_state=status.state, counts=status.counts, output_file_id=status.output_ref, error_file_id=status.error_ref,
        polled_at=timezone.now(), error=status.message[:4000],
    )
    if status.terminal:
        ingest(batch, client, status)


def ingest_lease(batch: ProviderBatch, owner: str | None = None) -> Lease:
    """The hold of one poller on one batch's ingest; it expires after CPRT_BATCH_INGEST_STALE_S (its worker died)."""
    return Lease(ProviderBatch.objects.filter(pk=batch.pk), conf.ingest_stale_after(), owner,
                 owner_field="ingest_owner", expiry_field="ingest_expires_at")


def ingest(batch: ProviderBatch, client, status) -> dict | None:
    """Ingest a finished batch's output once; None when another poller holds (or finished) the claim."""
    lease = ingest_lease(batch)
    if not lease.claim(where=Q(ingested_at__isnull=True)):
        return None
    try:
        ingested = ingest_lines(batch, client.results(status))
        report = ingested.as_dict()
    except Exception as exc:  # noqa: BLE001 - release the claim; the next poll tries again
        log.exception("ingest of batch %s failed", batch.pk)
        lease.release(error=f"ingest failed: {exc}"[:4000])
        return None
    with transaction.atomic():
        missing = BatchRequest.objects.filter(batch=batch, state=BatchRequest.SUBMITTED).update(
            state=BatchRequest.FAILED, error=f"no result in the provider's output (batch {status.state})")
        report["no_result"] = missing
        lease.release(phase=ProviderBatch.ENDED, ingested_at=timezone.now(), ingest_report=report)
    audit(None, "run.batch_ingest", batch.run, provider_batch=batch.provider_batch_id, state=status.state,
          **{k: v for k, v in report.items() if k != "refused"})
    stop = pauses.after_ingest(batch, status, ingested)
    if stop is not None:
        pauses.pause(batch.run_id, *stop, client)
    return report


# --- one step of a run --------------------------------------------------------------------------

def step(run_id: int) -> dict:
    run = Run.objects.filter(pk=run_id, mode=Run.MODE_BATCH).first()
    if run is None:
        return {"run": run_id, "skipped": "not a batch run"}
    now = timezone.now()
    if run.status == Run.STATUS_QUEUED:
        Run.move(run_id, "start", where=Q(status=Run.STATUS_QUEUED), started_at=now)
        run.refresh_from_db()
    if run.status not in (Run.STATUS_RUNNING, Run.STATUS_CANCELLING):
        return {"run": run_id, "skipped": run.status}
    try:
        client = client_for(run.provider, run.model_name)
    except ProviderUnavailable as exc:
        pauses.pause(run_id, "unavailable", str(exc))
        return {"run": run_id, "failed": str(exc)}
    Run.objects.filter(pk=run_id).update(heartbeat_at=now)
    if conf.is_offline(run.provider):  # vLLM: the request files go through `batch_export` / `batch_ingest` on a GPU machine
        return {"run": run_id, "status": settle(run_id), "offline": True}
    if run.status == Run.STATUS_RUNNING and not BatchRequest.objects.filter(run=run).exists():
        try:
            submit(run, first_stage(run), missing_item_ids(run), client)
        except ValueError as exc:  # a request over the provider's per-file limit: no file can carry it
            fail_run(run_id, f"batch submission impossible: {exc}")
            return {"run": run_id, "failed": str(exc)}
    _resend_stale(run, client)
    for batch in ProviderBatch.objects.filter(run=run, phase=ProviderBatch.ACTIVE):
        poll(batch, client)
    run.refresh_from_db()
    stage, due = next_stage_due(run)
    if due and run.status == Run.STATUS_RUNNING:
        submit(run, stage, due, client)
    return {"run": run_id, "status": settle(run_id)}




def poll_all() -> dict:
    """Periodic (Celery beat): one step for every active batch run."""
    done = {}
    for run_id in Run.objects.filter(mode=Run.MODE_BATCH, status__in=Run.ACTIVE_STATUSES).values_list("pk", flat=True):
        try:
            done[run_id] = step(run_id)
        except Exception as exc:  # noqa: BLE001 - one run's trouble must not stop the others
            log.exception("batch step of run %s failed", run_id)
            done[run_id] = {"error": str(exc)}
    return done


def resubmit_failed(run_id: int) -> int:
    run = Run.objects.get(pk=run_id)
    sent = 0
    for stage in kinds.get(run.task).stages:
        ids = list(BatchRequest.objects.filter(run=run, stage=stage, state=BatchRequest.FAILED).values_list("item_id", flat=True))
        sent += sum(b.request_count for b in submit(run, stage, ids, retry=True))
    return sent
