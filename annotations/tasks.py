"""Celery tasks of the labeling app; the hourly slot release runs on Celery beat."""
from __future__ import annotations

from celery import shared_task

from .services import labeling_queue


@shared_task(name="annotations.release_idle_drafts")
def release_idle_drafts() -> dict:
    return {"released_image_ids": labeling_queue.release_idle_drafts()}


from .faces import tasks as _face_tasks  # noqa: E402,F401 - registers the anonymization tasks with Celery
from .datasets import tasks as _dataset_tasks  # noqa: E402,F401 - registers the dataset-build tasks with Celery
