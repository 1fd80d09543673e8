"""Dataset export jobs launched from the browser: `start_export` (the web request: store, audit,
dispatch on commit) and `run_export` (the worker: build the export with `cprt_bench.export_dataset`,
then zip it under CPRT_EXPORT_ROOT or push it to the Hugging Face Hub).

A delivery of `run_export` first claims the job with a lease (one conditional UPDATE): a second
delivery while a live worker builds it does nothing; a job whose worker stopped renewing its lease
(CPRT_EXPORT_STALE_S) is failed by `reconcile`, or taken over by a redelivery that comes first.

The job row is the only state: status, progress (done/total, written at most every
PROGRESS_EVERY_S), summary, error, zip path and Hub URL. The job page reads it; the task takes only
the job id. The working folder is removed whatever happens; only the zip stays.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
import zipfile
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from core.audit import audit

from core.jobs import new_owner

from . import cprt_bench
from .models import ExportJob, ScoringProfile

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 0.5  # the page polls every 2 s; writing more often only costs database writes


def start_export(actor, data: dict) -> ExportJob:
    """Store a queued job from the launch form's cleaned data, audit it, and dispatch it on commit.

    `data`: splits (list), profile (ScoringProfile), include_annotations, include_images (bools),
    destination ("zip" or "hub"), repo_id (hub), public (bool; private unless set).
    """
    hub = data["destination"] == ExportJob.DESTINATION_HUB
    if hub and not settings.HF_TOKEN:
        raise ValueError("Pushing to the Hugging Face Hub needs HF_TOKEN in the server's environment.")
    if not isinstance(data["profile"], ScoringProfile):
        raise ValueError("profile must be a scoring profile.")
    with transaction.atomic():
        job = ExportJob(
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
            splits=list(data["splits"]),
            profile=data["profile"],
            include_annotations=bool(data["include_annotations"]),
            include_images=bool(data["include_images"]),
            face_variant=dict(data.get("face_variant") or {}) if data["include_images"] else {},
            destination=data["destination"],
            repo_id=data["repo_id"] if hub else "",
            private=not data["public"] if hub else True,
        )
        job.full_clean()
        job.save()
        audit(
            actor, "export.launch", job, splits=job.splits, profile=job.profile.label, include_annotations=job.include_annotations,
            include_images=job.include_images, face_variant=job.face_variant, destination=job.destination, repo_id=job.repo_id, private=job.private,
        )
        transaction.on_commit(lambda: dispatch(job.pk))
    return job


def dispatch(job_id: int) -> None:
    from .tasks import run_export as task

    task.apply_async(args=[job_id], queue="default")


class _ProgressWriter:
    """The export's progress callback: writes done/total to the job row, at most every PROGRESS_EVERY_S."""

    def __init__(self, job_id: int):
        self.job_id = job_id
        self.last = float("-inf")

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < PROGRESS_EVERY_S:
            return
        self.last = now
        ExportJob.objects.filter(pk=self.job_id).update(done=done, total=total)


def _lease_expiry():
    return timezone.now() + timedelta(seconds=settings.CPRT_EXPORT_STALE_S)


def claim(job_id: int, owner: str) -> bool:
    """Take the job for this delivery: queued, or running under a lease that expired (its worker is
    gone). One conditional UPDATE, so of two deliveries at once exactly one builds; a delivery while a
    live worker builds it does nothing."""
    now = timezone.now()
    silent = Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=now - timedelta(seconds=settings.CPRT_EXPORT_STALE_S))
    # (A running job without a lease was started before leases existed: taken over once it is silent.)
    takeable = Q(status=ExportJob.STATUS_QUEUED) | Q(status=ExportJob.STATUS_RUNNING) & (
        Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True) & silent
    )
    return ExportJob.objects.filter(takeable, pk=job_id).update(
        status=ExportJob.STATUS_RUNNING, lease_owner=owner, lease_expires_at=_lease_expiry(),
        started_at=now, heartbeat_at=now, done=0, total=0, error="",
    ) == 1


class _Heartbeat(threading.Thread):
    """Renews the job's lease and writes heartbeat_at every CPRT_EXPORT_HEARTBEAT_S while the job runs
    (also through a long zip or upload that reports no progress), so that `reconcile` can tell a slow
    export from a lost worker. `lost` is set when the lease was taken from this worker."""

    def __init__(self, job_id: int, owner: str):
        super().__init__(name=f"export-{job_id}-heartbeat", daemon=True)
        self.job_id, self.owner = job_id, owner
        self._stop_event = threading.Event()
        self.lost = threading.Event()

    def run(self) -> None:
        try:
            while not self._stop_event.wait(settings.CPRT_EXPORT_HEARTBEAT_S):
                renewed = ExportJob.objects.filter(pk=self.job_id, status=ExportJob.STATUS_RUNNING, lease_owner=self.owner).update(
                    heartbeat_at=timezone.now(), lease_expires_at=_lease_expiry()
                )
                if not renewed:
                    self.lost.set()
                    return
        finally:
            connection.close()  # this thread's own database connection

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=10)


def reconcile() -> list[int]:
    """Periodic (Celery beat): a running export whose lease expired (no renewal for CPRT_EXPORT_STALE_S)
    lost its worker; mark it failed with a message that says so (a late redelivery of its message then
    finds it failed and does nothing). A queued job is waiting for a worker, not lost. Returns the job ids."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.CPRT_EXPORT_STALE_S)
    expired = Q(status=ExportJob.STATUS_RUNNING) & (Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True, heartbeat_at__lt=cutoff))
    stale = list(ExportJob.objects.filter(expired).values_list("pk", flat=True))
    for job_id in stale:
        error = (f"The worker building this export stopped (no heartbeat for more than {settings.CPRT_EXPORT_STALE_S:.0f} s). "
                 "Nothing was delivered; launch the export again.")
        if ExportJob.objects.filter(expired, pk=job_id).update(
            status=ExportJob.STATUS_FAILED, error=error, finished_at=timezone.now(), lease_owner="", lease_expires_at=None
        ):
            audit(None, "export.worker_lost", ExportJob(pk=job_id), error=error)
    return stale


def job_folder(job: ExportJob) -> Path:
    return Path(settings.CPRT_EXPORT_ROOT) / str(job.pk)


def run_export(job_id: int) -> dict:
    """Build the job's export and deliver it; marks the job finished or failed (never raises for export errors)."""
    job = ExportJob.objects.select_related("profile", "created_by").get(pk=job_id)
    if job.status in (ExportJob.STATUS_FINISHED, ExportJob.STATUS_FAILED):
        return {"job_id": job.pk, "status": job.status}  # a redelivered message: the job is done
    owner = new_owner()
    if not claim(job.pk, owner):
        # Another worker holds a live lease on it (a second delivery while it builds): leave it alone.
        return {"job_id": job.pk, "status": job.status, "skipped": "another worker is building this export"}
    # A job left `running` by a killed worker (its lease expired) starts over: the export replaces its own folder.
    mine = ExportJob.objects.filter(pk=job.pk, lease_owner=owner)
    folder = job_folder(job)
    work = folder / "dataset"
    heartbeat = _Heartbeat(job.pk, owner)
    heartbeat.start()
    try:
        if job.kind == ExportJob.KIND_SFT:
            from .sft.job import build as build_sft

            summary = build_sft(job, work, _ProgressWriter(job.pk))
        else:
            summary = cprt_bench.export_dataset(
                work, job.splits, job.profile, include_annotations=job.include_annotations, include_images=job.include_images,
                face_variant=job.face_variant,
                progress=_ProgressWriter(job.pk), actor=job.created_by,
            )
        zip_path = hub_url = ""
        if job.destination == ExportJob.DESTINATION_ZIP:
            zip_path = zip_folder(work, folder / job.download_name).relative_to(Path(settings.CPRT_EXPORT_ROOT)).as_posix()
        else:
            hub_url = _push(work, job)
    except Exception as exc:
        error = _describe(exc)
        log.warning("export #%s failed: %s", job.pk, error)
        mine.update(status=ExportJob.STATUS_FAILED, error=error, finished_at=timezone.now(), lease_owner="", lease_expires_at=None)
        audit(job.created_by, "export.failed", job, error=error)
        return {"job_id": job.pk, "status": ExportJob.STATUS_FAILED}
    finally:
        heartbeat.stop()
        shutil.rmtree(work, ignore_errors=True)
    summary.pop("out_dir", None)  # a path on the server; nothing the page needs
    summary = json.loads(json.dumps(summary))  # as the JSON field will give it back (level keys become strings)
    if not mine.update(
        status=ExportJob.STATUS_FINISHED, summary=summary, zip_path=zip_path, hub_url=hub_url, done=F("total"), finished_at=timezone.now(),
        lease_owner="", lease_expires_at=None,
    ):
        log.warning("export #%s: this worker lost its lease while building; its result is not recorded", job.pk)
        return {"job_id": job.pk, "status": "lease lost"}
    audit(job.created_by, "export.finished", job, destination=job.destination, zip_path=zip_path, hub_url=hub_url,
          rows={split: stats["rows"] for split, stats in summary["splits"].items()})
    return {"job_id": job.pk, "status": ExportJob.STATUS_FINISHED}


def zip_folder(folder: Path, target: Path) -> Path:
    """Zip every file of `folder` under one top folder named like the zip; written aside, then renamed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    top = target.stem
    try:
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    archive.write(path, f"{top}/{path.relative_to(folder).as_posix()}")
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return target


def _push(folder: Path, job: ExportJob) -> str:
    if not settings.HF_TOKEN:
        raise cprt_bench.ExportError("HF_TOKEN is not set in the worker's environment: nothing was pushed.")
    try:
        return cprt_bench.push_dataset(folder, job.repo_id, settings.HF_TOKEN, public=not job.private)
    except cprt_bench.ExportError:
        raise
    except Exception as exc:  # network and Hub errors: reported plainly on the job page
        raise cprt_bench.ExportError(f"Upload to {job.repo_id} failed: {exc.__class__.__name__}: {exc}") from exc


def _describe(exc: Exception) -> str:
    if isinstance(exc, cprt_bench.ExportError):
        message = str(exc)
    else:
        message = f"The export failed: {exc.__class__.__name__}: {exc}"
    if settings.HF_TOKEN:  # an error text must never carry the token, whatever the library put in it
        message = message.replace(settings.HF_TOKEN, "***")
    return message[:4000]
