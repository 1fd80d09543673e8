"""Dataset export jobs launched from the browser: `start_export` (the web request: store, audit,
dispatch on commit) and `run_export` (the worker: build the export with `cprt_bench.export_dataset`,
then zip it under CPRT_EXPORT_ROOT or push it to the Hugging Face Hub).

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
from django.db.models import F
from django.utils import timezone

from core.audit import audit

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


class _Heartbeat(threading.Thread):
    """Writes heartbeat_at every CPRT_EXPORT_HEARTBEAT_S while the job runs (also through a long zip or
    upload that reports no progress), so that `reconcile` can tell a slow export from a lost worker."""

    def __init__(self, job_id: int):
        super().__init__(name=f"export-{job_id}-heartbeat", daemon=True)
        self.job_id = job_id
        self._stop_event = threading.Event()

    def run(self) -> None:
        try:
            while not self._stop_event.wait(settings.CPRT_EXPORT_HEARTBEAT_S):
                ExportJob.objects.filter(pk=self.job_id, status=ExportJob.STATUS_RUNNING).update(heartbeat_at=timezone.now())
        finally:
            connection.close()  # this thread's own database connection

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=10)


def reconcile() -> list[int]:
    """Periodic (Celery beat): a running export whose heartbeat is older than CPRT_EXPORT_STALE_S lost
    its worker; mark it failed with a message that says so (a late redelivery of its message then
    finds it failed and does nothing). Returns the job ids."""
    cutoff = timezone.now() - timedelta(seconds=settings.CPRT_EXPORT_STALE_S)
    stale = list(
        ExportJob.objects.filter(status=ExportJob.STATUS_RUNNING, heartbeat_at__lt=cutoff).values_list("pk", flat=True)
    )
    for job_id in stale:
        error = (f"The worker building this export stopped (no heartbeat for more than {settings.CPRT_EXPORT_STALE_S:.0f} s). "
                 "Nothing was delivered; launch the export again.")
        if ExportJob.objects.filter(pk=job_id, status=ExportJob.STATUS_RUNNING, heartbeat_at__lt=cutoff).update(
            status=ExportJob.STATUS_FAILED, error=error, finished_at=timezone.now()
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
    # A job left `running` by a killed worker starts over: the export replaces its own folder.
    now = timezone.now()
    ExportJob.objects.filter(pk=job.pk).update(status=ExportJob.STATUS_RUNNING, started_at=now, heartbeat_at=now, done=0, total=0, error="")
    folder = job_folder(job)
    work = folder / "dataset"
    heartbeat = _Heartbeat(job.pk)
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
        ExportJob.objects.filter(pk=job.pk).update(status=ExportJob.STATUS_FAILED, error=error, finished_at=timezone.now())
        audit(job.created_by, "export.failed", job, error=error)
        return {"job_id": job.pk, "status": ExportJob.STATUS_FAILED}
    finally:
        heartbeat.stop()
        shutil.rmtree(work, ignore_errors=True)
    summary.pop("out_dir", None)  # a path on the server; nothing the page needs
    summary = json.loads(json.dumps(summary))  # as the JSON field will give it back (level keys become strings)
    ExportJob.objects.filter(pk=job.pk).update(
        status=ExportJob.STATUS_FINISHED, summary=summary, zip_path=zip_path, hub_url=hub_url, done=F("total"), finished_at=timezone.now(),
    )
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
