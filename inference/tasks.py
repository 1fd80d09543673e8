"""Celery tasks: thin wrappers over `inference.execution` and `inference.lifecycle`. Ids in, JSON out.

The reconciler runs on Celery beat (`celery -A cprt_site beat`), every CPRT_RECONCILE_EVERY_S seconds
(the schedule is CELERY_BEAT_SCHEDULE in cprt_site/settings.py).
"""
from __future__ import annotations

from celery import shared_task
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError

from . import execution, lifecycle


class ChunkArgs(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    run_id: PositiveInt
    image_ids: list[PositiveInt] = Field(min_length=1, max_length=10_000)
    concurrency: PositiveInt | None = Field(default=None, le=1024)
    lane: int | None = Field(default=None, ge=0, le=1024)


def parse_chunk_args(run_id, image_ids, concurrency=None, lane=None) -> ChunkArgs:
    try:
        return ChunkArgs(run_id=run_id, image_ids=image_ids, concurrency=concurrency, lane=lane)
    except ValidationError as exc:
        raise ValueError(f"run_chunk refuses its input: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None


@shared_task(name="inference.run_chunk", acks_late=True)
def run_chunk(run_id, image_ids, concurrency=None, lane=None) -> dict:
    args = parse_chunk_args(run_id, image_ids, concurrency, lane)
    return execution.run_chunk(args.run_id, args.image_ids, args.concurrency, args.lane)


@shared_task(name="inference.reconcile_runs")
def reconcile_runs() -> dict:
    return lifecycle.reconcile()


@shared_task(name="inference.batch_step", acks_late=True)
def batch_step(run_id) -> dict:
    from .batch import lifecycle as batch_lifecycle

    return batch_lifecycle.step(_run_id(run_id))


@shared_task(name="inference.batch_resubmit", acks_late=True)
def batch_resubmit(run_id) -> int:
    from .batch import lifecycle as batch_lifecycle

    return batch_lifecycle.resubmit_failed(_run_id(run_id))


@shared_task(name="inference.poll_batches")
def poll_batches() -> dict:
    """Periodic (CELERY_BEAT_SCHEDULE): one step of every active batch run."""
    from .batch import lifecycle as batch_lifecycle

    return batch_lifecycle.poll_all()


def _run_id(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"a batch task needs a positive integer run id, got {value!r}")
    return value
