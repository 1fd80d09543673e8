"""Celery tasks of the scoring app: thin wrappers that take ids."""
from celery import shared_task


@shared_task(name="scoring.refresh_run_metrics")
def refresh_run_metrics(run_id: int) -> dict:
    """Precompute a finished judge run's metrics so no page pays for the bootstrap."""
    from .services import refresh_run_metrics as compute

    compute(int(run_id))
    return {"run_id": int(run_id)}
