"""Celery tasks of face anonymization: thin wrappers that take ids (annotations/faces/jobs.py does the work).
The reconciler runs on beat (CELERY_BEAT_SCHEDULE in cprt_site/settings.py)."""
from __future__ import annotations

from celery import shared_task
from pydantic import BaseModel, ConfigDict, PositiveInt, ValidationError


class JobArgs(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    job_id: PositiveInt


@shared_task(name="annotations.anonymize_faces", acks_late=True)
def anonymize_faces(job_id) -> dict:
    from .jobs import run_job

    try:
        args = JobArgs(job_id=job_id)
    except ValidationError as exc:
        raise ValueError(f"anonymize_faces refuses its input: {exc.errors()[0]['msg']}") from None
    return run_job(args.job_id)


@shared_task(name="annotations.reconcile_face_jobs")
def reconcile_face_jobs() -> dict:
    from .jobs import reconcile

    return {"resumed": reconcile()}
