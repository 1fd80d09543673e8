"""Celery tasks of face anonymization: thin wrappers that take ids (annotations/faces/jobs.py does the work).
Beat runs the reconciler through core.reconcile_jobs (core/reconcile.py); the task below is its pass for this type alone."""
from __future__ import annotations

from celery import shared_task

from core.dispatch import JobIdArgs, task_args

from . import jobs


@shared_task(name="annotations.anonymize_faces", acks_late=True, ignore_result=True)
def anonymize_faces(job_id) -> dict:
    args = task_args(JobIdArgs, "annotations.anonymize_faces", job_id=job_id)
    return jobs.run_job(args.job_id)


@shared_task(name="annotations.reconcile_face_jobs")
def reconcile_face_jobs() -> dict:
    return {"resumed": jobs.reconcile()}
