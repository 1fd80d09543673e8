"""Celery tasks: thin wrappers over the run services. Ids in, JSON out; arguments validated first
(core.dispatch.task_args). Nothing imports this module: services send these tasks by name
(inference.dispatching, through core.dispatch).

The reconciler (core.reconcile_jobs, which calls inference.lifecycle.reconcile) and the batch poller
run on Celery beat (`celery -A cprt_site beat`), every CPRT_RECONCILE_EVERY_S and CPRT_BATCH_POLL_S
seconds (CELERY_BEAT_SCHEDULE in cprt_site/settings.py).
"""
from __future__ import annotations

from celery import shared_task
from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from core.dispatch import JobIdArgs, task_args

from . import execution, lifecycle
from .batch import lifecycle as batch_lifecycle


class ChunkArgs(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    run_id: PositiveInt
    item_ids: list[PositiveInt] = Field(min_length=1, max_length=10_000)
    concurrency: PositiveInt | None = Field(default=None, le=1024)
    lane: int | None = Field(default=None, ge=0, le=1024)


@shared_task(name="inference.run_chunk", acks_late=True)
def run_chunk(run_id, item_ids, concurrency=None, lane=None) -> dict:
    args = task_args(ChunkArgs, "inference.run_chunk", run_id=run_id, item_ids=item_ids, concurrency=concurrency, lane=lane)
    return execution.run_chunk(args.run_id, args.item_ids, args.concurrency, args.lane)


@shared_task(name="inference.reconcile_runs")
def reconcile_runs() -> dict:
    """The runs' pass alone (beat sends core.reconcile_jobs, which alone asks the broker whether it
    lost its messages: that answer comes once per loss)."""
    return lifecycle.reconcile(emptied_at=None)


@shared_task(name="inference.batch_step", acks_late=True)
def batch_step(run_id) -> dict:
    return batch_lifecycle.step(task_args(JobIdArgs, "inference.batch_step", job_id=run_id).job_id)


@shared_task(name="inference.batch_resubmit", acks_late=True)
def batch_resubmit(run_id) -> int:
    return batch_lifecycle.resubmit_failed(task_args(JobIdArgs, "inference.batch_resubmit", job_id=run_id).job_id)


@shared_task(name="inference.poll_batches")
def poll_batches() -> dict:
    """Periodic (CELERY_BEAT_SCHEDULE): one step of every active batch run."""
    return batch_lifecycle.poll_all()
