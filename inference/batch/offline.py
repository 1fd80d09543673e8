"""vLLM's offline batch on a GPU machine: export a run's request file, run
`vllm run-batch -i FILE -o OUT --model M` there, ingest OUT.

vLLM's OpenAI-compatible server has no Batches endpoint, so vLLM batch runs are not submitted by the
poller (unless VLLM_BATCH_MODE=api for a server that has one). The request file is the same as
OpenAI's (one Chat Completions body per line, images downscaled as online), and run_batch writes
OpenAI's output format, so the output goes through the same ingest.
"""
from __future__ import annotations

import os
import tempfile

from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone

from core.audit import audit

from .. import kinds
from ..items import missing_item_ids
from ..models import Run
from . import conf, control, lifecycle
from .models import BatchRequest, ProviderBatch
from .requests import first_stage, model_requests, write_parts

OFFLINE_PREFIX = "offline:"


def is_offline(run: Run) -> bool:
    return conf.is_offline(run.provider)


def due(run: Run) -> tuple[str, list[int], bool]:
    """(stage, item ids, retry) of the next request file this run needs."""
    if not BatchRequest.objects.filter(run=run).exists():
        return first_stage(run), missing_item_ids(run), False
    stage, ids = control.next_stage_due(run)
    if ids:
        return stage, ids, False
    for stage in kinds.get(run.task).stages:
        failed = list(BatchRequest.objects.filter(run=run, stage=stage, state=BatchRequest.FAILED).values_list("item_id", flat=True))
        if failed:
            return stage, failed, True
    return "", [], False


def export_file(run: Run, out_path: str) -> ProviderBatch | None:
    """Write the run's next request file to `out_path` and record it as an offline batch (None: nothing due)."""
    if run.mode != Run.MODE_BATCH or run.status not in (Run.STATUS_QUEUED, Run.STATUS_RUNNING):
        raise ValueError(f"Run #{run.pk} is a {run.mode} run in status {run.status}: nothing to export.")
    stage, ids, retry = due(run)
    if not ids:
        return None
    client = lifecycle.stage_client(run, stage)
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(out_path))) as directory:
        parts = write_parts(run, stage, model_requests(run, stage, ids), client.line, directory, max_requests=10**9, max_bytes=2**62)
        if not parts:
            return None
        last = ProviderBatch.objects.filter(run=run, stage=stage).aggregate(r=Max("round"))["r"]
        try:
            with transaction.atomic():
                batch = lifecycle.record(run, stage, 0 if last is None else last + 1, 0, parts[0], retry)
                ProviderBatch.objects.filter(pk=batch.pk).update(
                    phase=ProviderBatch.ACTIVE, provider_batch_id=f"{OFFLINE_PREFIX}{batch.pk}", provider_state="exported",
                    submit_claimed_at=timezone.now(), submitted_at=timezone.now())
                Run.move(run.pk, "start", where=Q(status=Run.STATUS_QUEUED), started_at=timezone.now())
        except IntegrityError:
            raise ValueError("Another export of this run's requests happened at the same time; nothing was written.") from None
        os.replace(parts[0].path, out_path)
    audit(None, "run.batch_export", run, stage=stage, requests=batch.request_count, path=os.path.basename(out_path))
    return ProviderBatch.objects.get(pk=batch.pk)


class _FileResults:
    """A stand-in batch client whose results are a run_batch output file."""

    def __init__(self, path: str):
        self.path = path

    def results(self, status):
        from ..providers.vllm.batch import parse_lines

        with open(self.path, "rb") as fh:
            yield from parse_lines(fh, "output")


def ingest_file(batch: ProviderBatch, path: str) -> dict | None:
    """Ingest a run_batch output file for an exported batch (once; see `lifecycle.ingest`)."""
    if not batch.provider_batch_id.startswith(OFFLINE_PREFIX):
        raise ValueError(f"Batch {batch.pk} was not exported for an offline run; its provider reports its own results.")
    if not os.path.isfile(path):
        raise ValueError(f"{path} is not a file.")
    from ..providers.batch_types import BatchStatus

    ProviderBatch.objects.filter(pk=batch.pk).update(provider_state="completed", polled_at=timezone.now())
    report = lifecycle.ingest(batch, _FileResults(path), BatchStatus(state="completed", terminal=True))
    control.settle(batch.run_id)
    return report
