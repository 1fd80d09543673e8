"""Celery tasks of dataset builds: thin wrappers that take ids (annotations/datasets/build.py does the work).
Beat runs the reconciler through core.reconcile_jobs (core/reconcile.py); the task below is its pass for this type alone."""
from __future__ import annotations

from celery import shared_task

from core.dispatch import JobIdArgs, task_args

from . import build


@shared_task(name="annotations.build_dataset", acks_late=True, ignore_result=True)
def build_dataset(job_id) -> dict:
    args = task_args(JobIdArgs, "annotations.build_dataset", job_id=job_id)
    return build.run_build(args.job_id)


@shared_task(name="annotations.reconcile_dataset_builds")
def reconcile_dataset_builds() -> dict:
    return {"resumed": build.reconcile()}
