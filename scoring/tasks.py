"""Celery tasks of the scoring app: thin wrappers that take ids. Beat runs the export reconciler through
core.reconcile_jobs (core/reconcile.py)."""
from celery import shared_task
from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from core.dispatch import JobIdArgs, task_args

from . import exports


class RunIdArgs(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    run_id: PositiveInt


@shared_task(name="scoring.refresh_run_metrics")
def refresh_run_metrics(run_id) -> dict:
    """Precompute a finished judge run's metrics so no page pays for the bootstrap."""
    from .services.run_metrics import refresh_run_metrics as compute

    args = task_args(RunIdArgs, "scoring.refresh_run_metrics", run_id=run_id)
    compute(args.run_id)
    return {"run_id": args.run_id}


class CacheKeyArgs(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    key: str = Field(min_length=1, max_length=200)


@shared_task(name="scoring.refresh_cached")
def refresh_cached(key) -> dict:
    """Recompute one stale cached computation that a page served as it was (scoring.services.cache)."""
    from .services.cache import refresh

    args = task_args(CacheKeyArgs, "scoring.refresh_cached", key=key)
    return refresh(args.key)


@shared_task(name="scoring.run_export", acks_late=True, ignore_result=True)
def run_export(job_id) -> dict:
    """Build and deliver one export job (scoring.exports.run_export); the job row holds progress and outcome."""
    args = task_args(JobIdArgs, "scoring.run_export", job_id=job_id)
    return exports.run_export(args.job_id)


@shared_task(name="scoring.reconcile_exports")
def reconcile_exports() -> dict:
    """Fail exports whose worker went silent (scoring.exports.reconcile)."""
    return {"failed": exports.reconcile()}


@shared_task(name="scoring.run_import", acks_late=True, ignore_result=True)
def run_import(job_id) -> dict:
    """Run one import started from the page (scoring.imports.run_import); the job row holds progress and outcome."""
    from . import imports

    args = task_args(JobIdArgs, "scoring.run_import", job_id=job_id)
    return imports.run_import(args.job_id)
