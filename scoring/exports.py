"""Dataset export jobs launched from the browser: `start_export` (the web request: store, audit,
dispatch on commit by task name) and `run_export` (the worker: build the export with
`cprt_bench.export_dataset`, then zip it under CPRT_EXPORT_ROOT or push it to the Hugging Face Hub);
`cancel_export` and `resume_export` (the job page's buttons) and `reconcile` (beat).

An export stands on the job base (core/jobs.py). A delivery of `run_export` first claims the job
(the "start" transition and a lease in one UPDATE): a second delivery while a live worker builds it
does nothing. The worker renews the lease with a `Heartbeat` every CPRT_EXPORT_HEARTBEAT_S; a job
whose lease expired (CPRT_EXPORT_STALE_S) lost its worker: `reconcile` fails it, a redelivery that
comes first takes it over, and an admin can resume it.

Cancel: a queued job (or one nobody works on) is cancelled at once; a running one is marked
`cancelling` and its worker stops at its next heartbeat: it removes its working folder and delivers
nothing. Resume: a failed, cancelled or worker-lost job is queued again and rebuilt from scratch
(compare-and-set, so of two resumes one queues it, and one delivery builds it).

The job row is the only state: status, progress (done/total, written at most every
PROGRESS_EVERY_S), summary, error, zip path and Hub URL. The job page reads it; the task takes only
the job id. Each execution works in its own folder, removed whatever happens; only the zip stays.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
import zipfile
from datetime import timedelta
from pathlib import Path
from typing import Callable

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.audit import audit
from core.dispatch import send_job_on_commit
from core.jobs import JobExecution, Stopped, expired_condition

from . import cprt_bench
from .models import ExportJob, ScoringProfile

log = logging.getLogger(__name__)

TASK = "scoring.run_export"
PROGRESS_EVERY_S = 0.5  # the page polls every 2 s; writing more often only costs database writes
RUNNING, CANCELLING = ExportJob.STATUS_RUNNING, ExportJob.STATUS_CANCELLING


def start_export(actor, data: dict) -> ExportJob:
    """Store a queued job from the launch form's cleaned data, audit it, and dispatch it on commit.

    `data`: splits (list), profile (ScoringProfile), dataset_version (a DatasetVersion or None: only its
    images), include_annotations, include_images (bools),
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
            dataset_version=data.get("dataset_version"),
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
            dataset_version=job.dataset_version.name if job.dataset_version else "",
        )
        send_job_on_commit(ExportJob, job.pk, TASK)
    return job


# ---------------------------------------------------------------------------------------------
# The admin's buttons


def _lost_worker(job: ExportJob) -> bool:
    """Claimed by a worker whose lease expired (it stopped renewing: killed, or its machine is gone)."""
    return bool(job.lease_owner) and job.lease_expires_at is not None and job.lease_expires_at < timezone.now()


def cancel_export(actor, job: ExportJob) -> str | None:
    """Cancel a queued job (or one whose worker is gone) at once; ask a running one's worker to stop at
    its next heartbeat. Returns the status it moved to ("cancelled" or "cancelling"); None when the job
    is not active (or already cancelling)."""
    nobody = Q(status=ExportJob.STATUS_QUEUED) | Q(lease_owner="") | expired_condition()
    if ExportJob.move(job.pk, "cancel", where=nobody):
        outcome = ExportJob.STATUS_CANCELLED
    elif ExportJob.move(job.pk, "request_cancel", where=Q(status=RUNNING)):
        outcome = CANCELLING
    else:
        return None
    audit(actor, "export.cancel", job, status=job.status, outcome=outcome, done=job.done, total=job.total)
    return outcome


def can_resume(job: ExportJob) -> bool:
    """Failed, cancelled, or active with a worker that is gone (an expired lease)."""
    if job.status in (ExportJob.STATUS_FAILED, ExportJob.STATUS_CANCELLED):
        return True
    return job.status in (RUNNING, CANCELLING) and _lost_worker(job)


def resume_export(actor, job: ExportJob) -> bool:
    """Queue the job again and dispatch it; it is rebuilt from scratch. Compare-and-set on the status and
    lease seen, so of two resumes at once exactly one queues (and dispatches) it."""
    if not can_resume(job):
        return False
    seen = Q(status=job.status, lease_owner=job.lease_owner)
    if job.status in (RUNNING, CANCELLING):
        seen &= expired_condition()
    with transaction.atomic():
        if job.status == CANCELLING:  # its worker is gone: nobody else will confirm the cancel
            if not ExportJob.move(job.pk, "cancel", where=seen):
                return False
            seen = Q(status=ExportJob.STATUS_CANCELLED)
        if not ExportJob.move(job.pk, "requeue", where=seen, error="", done=0, total=0, summary={}, zip_path="", hub_url="",
                              started_at=None, heartbeat_at=None, lease_owner="", lease_expires_at=None):
            return False
        audit(actor, "export.resume", job, status=job.status, error=job.error)
        send_job_on_commit(ExportJob, job.pk, TASK)
    return True


def reconcile() -> list[int]:
    """Periodic (Celery beat): a running export whose lease expired (no renewal for CPRT_EXPORT_STALE_S)
    lost its worker; mark it failed with a message that says so (a late redelivery of its message then
    finds it failed and does nothing; the page offers Resume). A cancelling one whose worker is gone is
    cancelled. A queued job is waiting for a worker, not lost. Returns the ids of the jobs failed."""
    cutoff = timezone.now() - timedelta(seconds=settings.CPRT_EXPORT_STALE_S)
    # (A running job without a lease was started before leases existed: lost once it is silent.)
    expired = expired_condition() | Q(lease_owner="", heartbeat_at__lt=cutoff)
    ExportJob.moves(ExportJob.objects.filter(expired, status=CANCELLING), "cancel")
    stale = list(ExportJob.objects.filter(expired, status=RUNNING).values_list("pk", flat=True))
    for job_id in stale:
        error = (f"The worker building this export stopped (no heartbeat for more than {settings.CPRT_EXPORT_STALE_S:.0f} s). "
                 "Nothing was delivered; resume the export to build it again.")
        if ExportJob.move(job_id, "fail", where=expired & Q(status=RUNNING), error=error):
            audit(None, "export.worker_lost", ExportJob(pk=job_id), error=error)
    return stale


# ---------------------------------------------------------------------------------------------
# The worker


class _Execution(JobExecution):
    """One worker's build of one export (core.jobs.JobExecution): it stops at the heartbeat's cancel,
    checks at every progress call, and writes progress at most every PROGRESS_EVERY_S."""

    def __init__(self, job_id: int):
        super().__init__(ExportJob, job_id, settings.CPRT_EXPORT_STALE_S, settings.CPRT_EXPORT_HEARTBEAT_S, name="export")

    @property
    def progress_every(self) -> float:
        return PROGRESS_EVERY_S


def job_folder(job: ExportJob) -> Path:
    return Path(settings.CPRT_EXPORT_ROOT) / str(job.pk)


def run_export(job_id: int) -> dict:
    """Build the job's export and deliver it; marks the job finished, failed or cancelled (never raises for export errors)."""
    job = ExportJob.objects.select_related("profile", "created_by", "dataset_version").get(pk=job_id)
    if job.status not in (ExportJob.STATUS_QUEUED, RUNNING):
        return {"job_id": job.pk, "status": job.status}  # a redelivered message, or a cancelled job: nothing to do
    execution = _Execution(job.pk)
    if not execution.claim():
        # Another worker holds a live lease on it (a second delivery while it builds), or it was cancelled: leave it alone.
        job.refresh_from_db(fields=["status"])
        if job.status != RUNNING:
            return {"job_id": job.pk, "status": job.status}
        return {"job_id": job.pk, "status": job.status, "skipped": "another worker is building this export"}
    # A job left `running` by a killed worker (its lease expired) starts over, in a folder of this execution's own.
    folder = job_folder(job)
    work = folder / f"work-{uuid.uuid4().hex[:12]}"
    zip_file: Path | None = None
    zip_path = hub_url = ""
    execution.heartbeat.start()
    try:
        summary = _build(job, work, execution.progress)
        execution.check()
        if job.destination == ExportJob.DESTINATION_ZIP:
            zip_file = zip_folder(work, folder / job.download_name, keep_going=execution.check)
            zip_path = zip_file.relative_to(Path(settings.CPRT_EXPORT_ROOT)).as_posix()
        else:
            hub_url = _push(work, job)
    except Stopped as stop:
        return _stopped(job, execution, str(stop))
    except Exception as exc:
        error = _describe(exc)
        log.warning("export #%s failed: %s", job.pk, error)
        if ExportJob.move(job.pk, "fail", where=execution.mine, error=error):
            audit(job.created_by, "export.failed", job, error=error)
        return {"job_id": job.pk, "status": ExportJob.STATUS_FAILED}
    finally:
        execution.heartbeat.stop()
        shutil.rmtree(work, ignore_errors=True)
    summary.pop("out_dir", None)  # a path on the server; nothing the page needs
    summary = json.loads(json.dumps(summary))  # as the JSON field will give it back (level keys become strings)
    if ExportJob.move(job.pk, "finish", where=execution.mine, summary=summary, zip_path=zip_path, hub_url=hub_url, done=F("total")):
        audit(job.created_by, "export.finished", job, destination=job.destination, zip_path=zip_path, hub_url=hub_url,
              rows={split: stats["rows"] for split, stats in summary["splits"].items()})
        return {"job_id": job.pk, "status": ExportJob.STATUS_FINISHED}
    # Cancelled while the last step ran: a zip is removed; an upload that completed cannot be taken back.
    note = f"Cancelled after the upload had completed: {hub_url} holds this export." if hub_url else ""
    return _stopped(job, execution, "cancelled", zip_file=zip_file, error=note)


def _build(job: ExportJob, work: Path, progress: Callable[[int, int], None]) -> dict:
    if job.kind == ExportJob.KIND_SFT:
        from .sft.job import build as build_sft

        return build_sft(job, work, progress)
    return cprt_bench.export_dataset(
        work, job.splits, job.profile, include_annotations=job.include_annotations, include_images=job.include_images,
        face_variant=job.face_variant, progress=progress, actor=job.created_by, dataset_version=job.dataset_version,
    )


def _stopped(job: ExportJob, execution: _Execution, why: str, zip_file: Path | None = None, error: str = "") -> dict:
    """Confirm a cancel (nothing delivered), or step aside for the worker that took the job over."""
    if why == "cancelled" and ExportJob.move(job.pk, "cancel", where=execution.mine & Q(status=CANCELLING), error=error):
        if zip_file is not None:
            zip_file.unlink(missing_ok=True)
        audit(job.created_by, "export.cancelled", job)
        return {"job_id": job.pk, "status": ExportJob.STATUS_CANCELLED}
    log.warning("export #%s: this worker lost its lease while building; its result is not recorded", job.pk)
    return {"job_id": job.pk, "status": "lease lost"}


def zip_folder(folder: Path, target: Path, keep_going: Callable[[], None] = lambda: None) -> Path:
    """Zip every file of `folder` under one top folder named like the zip; written aside, then renamed.
    `keep_going` is called before each file (it raises to stop: the partial file is removed)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.partial")
    top = target.stem
    try:
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(folder.rglob("*")):
                keep_going()
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
