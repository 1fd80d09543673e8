"""Anonymization jobs: launch (web request: store, audit, dispatch on commit), run (the worker),
cancel, resume and reconcile. Plain functions; `tasks.py` wraps `run_job` for Celery, sent by name
("annotations.anonymize_faces") through core.dispatch.

The job stands on the job base (core/jobs.py). Exactly once: a job is claimed before it runs (the
"start" transition and a lease in one UPDATE, from `queued` only), so a redelivered or duplicated
message finds it claimed and does nothing. The worker renews its lease (CPRT_FACES_STALE_S) with each
heartbeat (CPRT_FACES_HEARTBEAT_S); a job whose lease expired lost its worker and is re-queued by the
reconciler or a resume, and the old execution, if it still runs, stops at its next heartbeat. Each
image's variant is unique per (image, setting) and images that already have one are skipped, so a
resumed job never redoes or stores twice what was done. Cancellation is a status flag the worker
reads between images.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import FIRST_COMPLETED, wait

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from annotations.models import Image
from core.audit import audit
from core.dispatch import send_job_on_commit
from core.jobs import Lease, expired_condition
from core.logs import ContextThreadPoolExecutor

from . import variants
from .models import AnonymizationJob, FaceVariant

log = logging.getLogger(__name__)
TASK = "annotations.anonymize_faces"
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
            send_job_on_commit(AnonymizationJob, job.pk, TASK)
    return job


def claim(job_id: int) -> Lease | None:
    """Take a queued job for this execution (its lease); None when another execution has it or it is over."""
    lease = Lease(AnonymizationJob.objects.filter(pk=job_id), settings.CPRT_FACES_STALE_S)
    now = timezone.now()
    started = AnonymizationJob.start(lease, where=Q(status=AnonymizationJob.STATUS_QUEUED), started_at=now, heartbeat_at=now, error="")
    return lease if started else None


def heartbeat(lease: Lease) -> str | None:
    """Renew the lease and write the heartbeat; the job's status while this execution still holds it, else None."""
    if not lease.renew(heartbeat_at=timezone.now()):
        return None
    return lease.queryset.values_list("status", flat=True).first()


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
    lease = claim(job_id)
    job = AnonymizationJob.objects.get(pk=job_id)
    if lease is None:
        return {"job_id": job_id, "status": job.status, "claimed": False}  # a duplicate or late message
    threads = max(1, threads or settings.CPRT_FACES_THREADS)
    failures = list(job.failures)
    failed_ids = {f[0] for f in failures}
    todo = [img for img in _todo(job) if img.pk not in failed_ids]
    status = AnonymizationJob.STATUS_RUNNING
    last_beat = time.monotonic()
    try:
        with ContextThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"faces-{job_id}") as pool:
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
                    held = heartbeat(lease)
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
        AnonymizationJob.move(job_id, "fail", where=Q(lease_owner=lease.owner), error=error)
        audit(job.created_by, "faces.failed", job, error=error)
        return {"job_id": job_id, "status": AnonymizationJob.STATUS_FAILED, "claimed": True}
    _write_progress(job, failures)
    mine = Q(lease_owner=lease.owner)
    # A cancel asked for after the last heartbeat still wins over "finish".
    if status == AnonymizationJob.STATUS_CANCELLING or not AnonymizationJob.move(job_id, "finish", where=mine):
        AnonymizationJob.move(job_id, "cancel", where=mine)
    job.refresh_from_db()
    final = job.status
    audit(job.created_by, f"faces.{final}", job, done=job.done, faces=job.faces, residual_faces=job.residual_faces,
          failures=len(failures))
    return {"job_id": job_id, "status": final, "claimed": True}


def _nobody_works_on(job: AnonymizationJob) -> bool:
    """Its worker's lease expired, or (queued) no worker took it for CPRT_FACES_STALE_S (a lost message)."""
    if job.lease_owner:
        return job.lease_expires_at is None or job.lease_expires_at < timezone.now()
    return job.silent_for(settings.CPRT_FACES_STALE_S)


def cancel_job(actor, job: AnonymizationJob) -> bool:
    """Ask the worker to stop (it reads the flag within a heartbeat); a job nobody runs is cancelled now."""
    nobody = Q(status=AnonymizationJob.STATUS_QUEUED) | Q(lease_owner="") | expired_condition()
    if not (AnonymizationJob.move(job.pk, "cancel", where=nobody) or AnonymizationJob.move(job.pk, "request_cancel")):
        return False
    audit(actor, "faces.cancel", job, done=job.done, total=job.total)
    return True


def can_resume(job: AnonymizationJob) -> bool:
    """A stopped job with images left, a finished one with failed images (retried), or an active one nobody works on."""
    if job.status in (AnonymizationJob.STATUS_CANCELLED, AnonymizationJob.STATUS_FAILED, AnonymizationJob.STATUS_FINISHED):
        return job.done < job.total or bool(job.failures)
    return job.is_active and _nobody_works_on(job)


def resume_job(actor, job: AnonymizationJob) -> bool:
    """Queue a stopped or abandoned job again (a new lease; images already done are skipped, failed ones retried).
    Compare-and-set on the status and lease seen: of two resumes at once, one queues the job."""
    if not can_resume(job):
        return False
    seen = Q(status=job.status, lease_owner=job.lease_owner)
    with transaction.atomic():
        if job.status == AnonymizationJob.STATUS_CANCELLING:  # its worker is gone: confirm the cancel, then queue
            if not AnonymizationJob.move(job.pk, "cancel", where=seen):
                return False
            seen = Q(status=AnonymizationJob.STATUS_CANCELLED)
        if not AnonymizationJob.move(job.pk, "requeue", where=seen, failures=[], error="", heartbeat_at=timezone.now(),
                                     lease_owner="", lease_expires_at=None):
            return False
        audit(actor, "faces.resume", job, done=job.done, total=job.total)
        send_job_on_commit(AnonymizationJob, job.pk, TASK)
    return True


def reconcile() -> list[int]:
    """Periodic (Celery beat): re-queue running jobs whose worker's lease expired, and confirm the cancel
    of cancelling ones whose worker is gone. Returns the ids re-queued."""
    AnonymizationJob.moves(AnonymizationJob.objects.filter(expired_condition(), status=AnonymizationJob.STATUS_CANCELLING), "cancel")
    resumed = []
    for job in AnonymizationJob.objects.filter(expired_condition(), status=AnonymizationJob.STATUS_RUNNING):
        if resume_job(None, job):
            resumed.append(job.pk)
    return resumed
