"""Anonymization jobs: launch (web request: store, audit, dispatch on commit), run (the worker),
cancel, resume and reconcile. Plain functions; `tasks.py` wraps `run_job` for Celery.

Exactly once: a job is claimed before it runs (one UPDATE from `queued` to `running` with a fresh
claim token), so a redelivered or duplicated message finds it claimed and does nothing. Each image's
variant is unique per (image, setting) and images that already have one are skipped, so a resumed
job never redoes or stores twice what was done. The worker writes progress and a heartbeat to the
row; the page reads them. Cancellation is a status flag the worker reads between images.
"""
from __future__ import annotations

import logging
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from annotations.models import Image
from core.audit import audit

from . import variants
from .models import AnonymizationJob, FaceVariant

log = logging.getLogger(__name__)
CHUNK = 900  # stay under SQLite's bound-parameter limit


def select_images(split: str = "") -> list[int]:
    images = Image.objects.exclude(file="")
    if split:
        images = images.filter(split=split)
    return list(images.order_by("pk").values_list("pk", flat=True))


def start_job(actor, *, split: str = "", method: str = "blur", threshold: float = 0.5, margin: float = 0.2,
              image_ids: list[int] | None = None, dispatch_task: bool = True) -> AnonymizationJob:
    """Store a queued job for the split's images (or the given ids), audit it, dispatch on commit."""
    method, threshold, margin = variants.check_setting(method, threshold, margin)
    splits = {value for value, _ in Image.SPLITS}
    if split and split not in splits:
        raise variants.VariantError(f"split must be one of {', '.join(sorted(splits))}, not {split!r}")
    ids = select_images(split) if image_ids is None else sorted(set(image_ids))
    if not ids:
        raise variants.VariantError("No images with a stored file to anonymize" + (f" in split {split}." if split else "."))
    with transaction.atomic():
        job = AnonymizationJob.objects.create(
            created_by=actor if getattr(actor, "is_authenticated", False) else None, split=split, image_ids=ids,
            total=len(ids), method=method, threshold=threshold, margin=margin,
        )
        audit(actor, "faces.launch", job, split=split, images=len(ids), method=method, threshold=threshold, margin=margin)
        if dispatch_task:
            transaction.on_commit(lambda: dispatch(job.pk))
    return job


def dispatch(job_id: int) -> None:
    from .tasks import anonymize_faces as task

    task.apply_async(args=[job_id], queue="default")


def claim(job_id: int) -> str | None:
    """Take a queued job for this execution; None when another execution has it or it is over."""
    token = uuid.uuid4().hex
    now = timezone.now()
    taken = AnonymizationJob.objects.filter(pk=job_id, status=AnonymizationJob.STATUS_QUEUED).update(
        status=AnonymizationJob.STATUS_RUNNING, claim=token, started_at=now, heartbeat_at=now, error="",
    )
    return token if taken else None


def _held(job_id: int, token: str) -> str | None:
    """Heartbeat; returns the status while this execution still holds the job, else None."""
    AnonymizationJob.objects.filter(pk=job_id, claim=token).update(heartbeat_at=timezone.now())
    return AnonymizationJob.objects.filter(pk=job_id, claim=token).values_list("status", flat=True).first()


def totals(job: AnonymizationJob) -> dict:
    """done / faces / images without face / residual faces, counted from the stored variants."""
    out = {"done": 0, "faces": 0, "images_without_face": 0, "residual_faces": 0}
    ids = job.image_ids
    for i in range(0, len(ids), CHUNK):
        agg = FaceVariant.objects.filter(
            image_id__in=ids[i : i + CHUNK], method=job.method, threshold=job.threshold, margin=job.margin,
        ).aggregate(n=Count("id"), found=Sum("faces"), none=Count("id", filter=Q(faces=0)), residual=Sum("residual_faces"))
        out["done"] += agg["n"]
        out["faces"] += agg["found"] or 0
        out["images_without_face"] += agg["none"]
        out["residual_faces"] += agg["residual"] or 0
    return out


def _todo(job: AnonymizationJob) -> list[Image]:
    ids = job.image_ids
    done: set[int] = set()
    for i in range(0, len(ids), CHUNK):
        done.update(FaceVariant.objects.filter(
            image_id__in=ids[i : i + CHUNK], method=job.method, threshold=job.threshold, margin=job.margin,
        ).values_list("image_id", flat=True))
    wanted = [i for i in ids if i not in done]
    found: dict[int, Image] = {}
    for i in range(0, len(wanted), CHUNK):
        found.update({img.pk: img for img in Image.objects.filter(pk__in=wanted[i : i + CHUNK]).only("pk", "vispr_id", "file")})
    return [found[i] for i in wanted if i in found]  # an image deleted since launch is skipped


def _write_progress(job: AnonymizationJob, failures: list) -> None:
    counts = totals(job)
    counts["done"] += len(failures)
    AnonymizationJob.objects.filter(pk=job.pk).update(failures=failures[-200:], **counts)


def run_job(job_id: int, threads: int | None = None) -> dict:
    """Claim the job and make the missing variants; marks it finished, cancelled or failed."""
    token = claim(job_id)
    job = AnonymizationJob.objects.get(pk=job_id)
    if token is None:
        return {"job_id": job_id, "status": job.status, "claimed": False}  # a duplicate or late message
    threads = max(1, threads or settings.CPRT_FACES_THREADS)
    failures = list(job.failures)
    failed_ids = {f[0] for f in failures}
    todo = [img for img in _todo(job) if img.pk not in failed_ids]
    status = AnonymizationJob.STATUS_RUNNING
    last_beat = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"faces-{job_id}") as pool:
            pending: dict = {}
            queue = iter(todo)
            while True:
                while status == AnonymizationJob.STATUS_RUNNING and len(pending) < threads:
                    image = next(queue, None)
                    if image is None:
                        break
                    try:  # reading is done here; the threads get bytes and touch no database
                        raw = variants.read_original(image)
                    except variants.VariantError as exc:
                        failures.append([image.pk, str(exc)])
                        continue
                    future = pool.submit(variants.compute, raw, variants.extension_of(image), job.method, job.threshold,
                                         job.margin, f"image {image.vispr_id}")
                    pending[future] = image
                if not pending:
                    break
                finished, _ = wait(pending, timeout=settings.CPRT_FACES_HEARTBEAT_S, return_when=FIRST_COMPLETED)
                for future in finished:
                    image = pending.pop(future)
                    try:
                        variants.store(image, job.method, job.threshold, job.margin, future.result(), job)
                    except variants.VariantError as exc:
                        failures.append([image.pk, str(exc)])
                if time.monotonic() - last_beat >= settings.CPRT_FACES_HEARTBEAT_S or not pending:
                    last_beat = time.monotonic()
                    _write_progress(job, failures)
                    held = _held(job_id, token)
                    if held is None:
                        return {"job_id": job_id, "status": "lost", "claimed": True}  # resumed elsewhere
                    if held == AnonymizationJob.STATUS_CANCELLING:
                        status = held
                        for future in pending:
                            future.cancel()
    except Exception as exc:
        error = f"The job failed: {exc.__class__.__name__}: {exc}"[:4000]
        log.warning("anonymization #%s failed: %s", job_id, error)
        _write_progress(job, failures)
        AnonymizationJob.objects.filter(pk=job_id, claim=token).update(
            status=AnonymizationJob.STATUS_FAILED, error=error, finished_at=timezone.now())
        audit(job.created_by, "faces.failed", job, error=error)
        return {"job_id": job_id, "status": AnonymizationJob.STATUS_FAILED, "claimed": True}
    _write_progress(job, failures)
    final = AnonymizationJob.STATUS_CANCELLED if status == AnonymizationJob.STATUS_CANCELLING else AnonymizationJob.STATUS_FINISHED
    AnonymizationJob.objects.filter(pk=job_id, claim=token).update(status=final, finished_at=timezone.now())
    job.refresh_from_db()
    audit(job.created_by, f"faces.{final}", job, done=job.done, faces=job.faces, residual_faces=job.residual_faces,
          failures=len(failures))
    return {"job_id": job_id, "status": final, "claimed": True}


def _silent(job: AnonymizationJob) -> bool:
    last = job.heartbeat_at or job.created_at
    return last < timezone.now() - timedelta(seconds=settings.CPRT_FACES_STALE_S)


def cancel_job(actor, job: AnonymizationJob) -> bool:
    """Ask the worker to stop (it reads the flag within a heartbeat); a job nobody runs is cancelled now."""
    if not job.is_active:
        return False
    if job.status == AnonymizationJob.STATUS_QUEUED or _silent(job):
        AnonymizationJob.objects.filter(pk=job.pk, status__in=AnonymizationJob.ACTIVE_STATUSES).update(
            status=AnonymizationJob.STATUS_CANCELLED, claim="", finished_at=timezone.now())
    else:
        AnonymizationJob.objects.filter(pk=job.pk, status=AnonymizationJob.STATUS_RUNNING).update(
            status=AnonymizationJob.STATUS_CANCELLING)
    audit(actor, "faces.cancel", job, done=job.done, total=job.total)
    return True


def can_resume(job: AnonymizationJob) -> bool:
    """A stopped job with images left, a finished one with failed images (retried), or a silent active one."""
    if job.status in (AnonymizationJob.STATUS_CANCELLED, AnonymizationJob.STATUS_FAILED, AnonymizationJob.STATUS_FINISHED):
        return job.done < job.total or bool(job.failures)
    return job.is_active and _silent(job)


def resume_job(actor, job: AnonymizationJob) -> bool:
    """Queue a stopped or silent job again (a new claim; images already done are skipped, failed ones retried)."""
    if not can_resume(job):
        return False
    with transaction.atomic():
        updated = AnonymizationJob.objects.filter(pk=job.pk, status=job.status, claim=job.claim).update(
            status=AnonymizationJob.STATUS_QUEUED, claim="", failures=[], error="", finished_at=None, heartbeat_at=timezone.now())
        if not updated:
            return False
        audit(actor, "faces.resume", job, done=job.done, total=job.total)
        transaction.on_commit(lambda: dispatch(job.pk))
    return True


def reconcile() -> list[int]:
    """Periodic (Celery beat): re-queue running jobs whose worker went silent. Returns their ids."""
    cutoff = timezone.now() - timedelta(seconds=settings.CPRT_FACES_STALE_S)
    resumed = []
    for job in AnonymizationJob.objects.filter(status=AnonymizationJob.STATUS_RUNNING, heartbeat_at__lt=cutoff):
        if resume_job(None, job):
            resumed.append(job.pk)
    return resumed
