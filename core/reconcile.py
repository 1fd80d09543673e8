"""The one periodic reconciliation over every kind of job (Celery beat: `core.reconcile_jobs`).

Each app registers its job types from its AppConfig.ready (`register`): the model, the task that
runs one job (sent by name with the job id), its queue, and the type's own pass (expired leases,
abandoned cancels; runs: their lanes). Core never imports the apps: it only calls what they gave.

One pass (`reconcile_all`) asks the broker once whether it lost its messages (core.broker.emptied_at
answers once per loss, so only one caller may ask) and hands the answer to every type's own pass,
then sends again every job whose message is gone (`unsent`): a QUEUED job no worker holds whose
message never went out (`sent_at` empty since it was queued more than CPRT_JOB_SEND_GRACE_S ago: the
send after the commit failed, or its process died before sending) or went out before the broker lost
its data (`sent_at` < emptied_at). A copy sent too many is harmless: a job is claimed before it runs,
so a second delivery finds it claimed or final and does nothing.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from . import broker
from .dispatch import DEFAULT_QUEUE, send_job
from .jobs import QUEUED, Job

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobType:
    """One kind of job. `task`: sent with [job id] to run one job; None where the type sends its own
    messages (runs: one per lane). `reconcile(emptied_at)`: the type's own pass, or None."""

    name: str
    model: type[Job]
    task: str | None = None
    queue: str = DEFAULT_QUEUE
    reconcile: Callable[[datetime | None], Any] | None = None


_TYPES: dict[str, JobType] = {}


def register(name: str, model: type[Job], task: str | None = None, queue: str = DEFAULT_QUEUE,
             reconcile: Callable[[datetime | None], Any] | None = None) -> JobType:
    """Register a job type (idempotent per name: AppConfig.ready may run more than once in tests)."""
    job_type = JobType(name, model, task, queue, reconcile)
    _TYPES[name] = job_type
    return job_type


def registered_types() -> list[JobType]:
    return list(_TYPES.values())


def unsent(model: type[Job], emptied_at: datetime | None = None):
    """Queued jobs no worker holds whose message is gone (see the module's docstring)."""
    cutoff = timezone.now() - timedelta(seconds=settings.CPRT_JOB_SEND_GRACE_S)
    gone = Q(sent_at__isnull=True, queued_at__lt=cutoff)
    if emptied_at is not None:
        gone |= Q(sent_at__lt=emptied_at)
    return model._default_manager.filter(gone, status=QUEUED, lease_owner="").order_by("pk")


def resend(job_type: JobType, emptied_at: datetime | None = None) -> list[int]:
    """Send again the type's jobs whose message is gone; the ids the broker took."""
    if job_type.task is None:
        return []
    ids = list(unsent(job_type.model, emptied_at).values_list("pk", flat=True))
    return [pk for pk in ids if send_job(job_type.model, pk, job_type.task, [pk], job_type.queue)]


def reconcile_all() -> dict:
    """One pass over every registered type: its own pass, then the re-sends. A type whose pass raises
    does not keep the others from theirs; the first error is raised at the end."""
    emptied_at = broker.emptied_at()
    report: dict[str, Any] = {"broker_emptied": emptied_at is not None}
    errors: list[Exception] = []
    for job_type in registered_types():
        entry: dict[str, Any] = {}
        try:
            if job_type.reconcile is not None:
                entry["reconciled"] = job_type.reconcile(emptied_at)
            entry["resent"] = resend(job_type, emptied_at)
        except Exception as exc:  # noqa: BLE001 - raised below, after the other types had their pass
            log.exception("reconciling %s failed", job_type.name)
            errors.append(exc)
        report[job_type.name] = entry
    if errors:
        raise errors[0]
    return report
