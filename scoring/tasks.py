"""Celery tasks of the scoring app: thin wrappers that take ids. The export reconciler runs on beat."""
from celery import shared_task
from pydantic import BaseModel, ConfigDict, PositiveInt, ValidationError


class JobArgs(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    job_id: PositiveInt


@shared_task(name="scoring.refresh_run_metrics")
def refresh_run_metrics(run_id: int) -> dict:
    """Precompute a finished judge run's metrics so no page pays for the bootstrap."""
    from .services.run_metrics import refresh_run_metrics as compute

    compute(int(run_id))
    return {"run_id": int(run_id)}


@shared_task(name="scoring.run_export", acks_late=True)
def run_export(job_id) -> dict:
    """Build and deliver one export job (scoring.exports.run_export); the job row holds progress and outcome."""
    from .exports import run_export as run

    try:
        args = JobArgs(job_id=job_id)
    except ValidationError as exc:
        raise ValueError(f"run_export refuses its input: {exc.errors()[0]['msg']}") from None
    return run(args.job_id)


@shared_task(name="scoring.reconcile_exports")
def reconcile_exports() -> dict:
    """Mark exports whose worker went silent as failed (scoring.exports.reconcile)."""
    from .exports import reconcile

    return {"failed": reconcile()}
