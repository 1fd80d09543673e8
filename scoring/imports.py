"""Imports started from the browser (issue 28): a VISPR release folder or a CPRT-Bench file on the
server, read only from under settings.CPRT_IMPORT_ROOT, run by a worker as a job of the job base.

`start_import` (the web request: check the path, store, audit, dispatch on commit by task name) and
`run_import` (the worker: claim with a lease, heartbeat, progress into the row, the import itself:
`annotations.services.vispr_release.import_release` or `scoring.cprt_bench.import_bench_file`, the
same services the `import_vispr` and `import_cprt` commands call). `cancel_import` and `resume_import`
are the job page's buttons.

Cancel: a queued job (or one whose worker is gone) is cancelled at once; a running one is marked
`cancelling`, and its worker stops at the next file it reads, or, at the latest, just before its one
write transaction commits: nothing is written. Resume: a failed or cancelled import is queued again
and runs from the start (imports are idempotent: what is already stored is not stored twice).
"""
from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotations.services.vispr import FolderRefused
from annotations.services.vispr_labels import MappingError
from annotations.services.vispr_release import import_release, is_release, linked_folders
from core.audit import audit
from core.dispatch import send_job_on_commit
from core.jobs import JobExecution, Stopped, expired_condition

from . import cprt_bench
from .models import ImportJob

log = logging.getLogger(__name__)

TASK = "scoring.run_import"
PROGRESS_EVERY_S = 0.5
RUNNING, CANCELLING = ImportJob.STATUS_RUNNING, ImportJob.STATUS_CANCELLING
BENCH_SUFFIXES = (".json", ".jsonl", ".parquet")


class PathRefused(ValueError):
    """A path the page may not import; the message says why."""


def import_root() -> Path:
    return Path(settings.CPRT_IMPORT_ROOT).resolve()


def resolve_path(relative: str, kind: str) -> Path:
    """`relative` under CPRT_IMPORT_ROOT, resolved (links followed) and checked to stay there, of the kind's shape."""
    root = import_root()
    text = (relative or "").strip()
    if not text or "\x00" in text:
        raise PathRefused("Give a path under the import folder.")
    target = (root / text).resolve()
    if target != root and not target.is_relative_to(root):
        raise PathRefused(f"{text} is outside the import folder {root}; only paths under it can be imported from the page.")
    if kind == ImportJob.KIND_VISPR:
        if not target.is_dir() or not is_release(target):
            raise PathRefused(f"{text} is not a VISPR release folder under {root} (images/ and annotations/ expected).")
        _links_stay_under(root, target, text)
    elif not target.is_file() or target.suffix.lower() not in BENCH_SUFFIXES:
        raise PathRefused(f"{text} is not a CPRT-Bench file under {root} (.json, .jsonl or .parquet).")
    return target


def _links_stay_under(root: Path, target: Path, text: str) -> None:
    """A release's linked folders (which the import follows) must lead under the import folder too:
    from the page, nothing outside it is read. `manage.py import_vispr` follows them anywhere."""
    for link in linked_folders(target):
        real = (target / link).resolve()
        if real != root and not real.is_relative_to(root):
            raise PathRefused(f"{text}/{link.as_posix()} is a symbolic link to a folder outside the import folder {root}; "
                              f"from the page only folders under it are read (manage.py import_vispr follows such links).")


def _under_root(path: str) -> str:
    """A followed link's target as the page shows it: relative to the import folder (where it must lead)."""
    root, target = import_root(), Path(path)
    return target.relative_to(root).as_posix() if target.is_relative_to(root) else path


def candidates(limit: int = 50) -> list[str]:
    """What the form suggests: the import folder's top-level entries of either kind."""
    root = import_root()
    if not root.is_dir():
        return []
    out = []
    for path in sorted(root.iterdir())[:500]:
        if (path.is_dir() and is_release(path)) or (path.is_file() and path.suffix.lower() in BENCH_SUFFIXES):
            out.append(path.name)
    return out[:limit]


def start_import(actor, kind: str, path: str, options: dict) -> ImportJob:
    """Store a queued job (the path checked again here), audit it and dispatch it on commit."""
    target = resolve_path(path, kind)
    relative = target.relative_to(import_root()).as_posix()
    with transaction.atomic():
        job = ImportJob.objects.create(kind=kind, path=relative, options=options, created_by=actor)
        audit(actor, "import.start", job, kind=kind, path=relative, options=options)
        send_job_on_commit(ImportJob, job.pk, TASK)
    return job


# ---------------------------------------------------------------------------------------------
# The page's buttons


def _lost_worker(job: ImportJob) -> bool:
    return bool(job.lease_owner) and job.lease_expires_at is not None and job.lease_expires_at < timezone.now()


def cancel_import(actor, job: ImportJob) -> str | None:
    nobody = Q(status=ImportJob.STATUS_QUEUED) | Q(lease_owner="") | expired_condition()
    if ImportJob.move(job.pk, "cancel", where=nobody):
        outcome = ImportJob.STATUS_CANCELLED
    elif ImportJob.move(job.pk, "request_cancel", where=Q(status=RUNNING)):
        outcome = CANCELLING
    else:
        return None
    audit(actor, "import.cancel", job, status=job.status, outcome=outcome)
    return outcome


def can_resume(job: ImportJob) -> bool:
    if job.status in (ImportJob.STATUS_FAILED, ImportJob.STATUS_CANCELLED):
        return True
    return job.status in (RUNNING, CANCELLING) and _lost_worker(job)


def resume_import(actor, job: ImportJob) -> bool:
    if not can_resume(job):
        return False
    seen = Q(status=job.status, lease_owner=job.lease_owner)
    if job.status in (RUNNING, CANCELLING):
        seen &= expired_condition()
    with transaction.atomic():
        if job.status == CANCELLING:
            if not ImportJob.move(job.pk, "cancel", where=seen):
                return False
            seen = Q(status=ImportJob.STATUS_CANCELLED)
        if not ImportJob.move(job.pk, "requeue", where=seen, error="", done=0, total=0, result={}, started_at=None,
                              heartbeat_at=None, lease_owner="", lease_expires_at=None):
            return False
        audit(actor, "import.resume", job, status=job.status, error=job.error)
        send_job_on_commit(ImportJob, job.pk, TASK)
    return True


# ---------------------------------------------------------------------------------------------
# The worker


class _Execution(JobExecution):
    """One worker's run of one import (core.jobs.JobExecution). Its heartbeat skips a beat that finds
    SQLite busy (the import's one write transaction holds it); `check` also reads a cancel from the
    row (it guards that transaction's commit); progress is throttled first, then checked, and is a
    sign of life."""

    def __init__(self, job_id: int):
        super().__init__(ImportJob, job_id, settings.CPRT_IMPORT_STALE_S, settings.CPRT_IMPORT_HEARTBEAT_S, name="import",
                         skip_busy_beats=True, check_reads_cancel=True, check_every_progress=False, progress_heartbeat=True)

    @property
    def progress_every(self) -> float:
        return PROGRESS_EVERY_S


def run_import(job_id: int) -> dict:
    """Run one import job; marks it finished, failed or cancelled (never raises for an import's errors)."""
    job = ImportJob.objects.select_related("created_by").get(pk=job_id)
    if job.status not in (ImportJob.STATUS_QUEUED, RUNNING):
        return {"job_id": job.pk, "status": job.status}
    execution = _Execution(job.pk)
    if not execution.claim():
        job.refresh_from_db(fields=["status"])
        return {"job_id": job.pk, "status": job.status, "skipped": "another worker holds this import"}
    execution.heartbeat.start()
    try:
        target = resolve_path(job.path, job.kind)  # checked again: the folder may have changed since the launch
        result = _import(job, target, execution)
    except Stopped as stop:
        if ImportJob.move(job.pk, "cancel", where=execution.mine, error="Cancelled: nothing was written." if str(stop) == "cancelled" else ""):
            audit(job.created_by, "import.cancelled", job)
        return {"job_id": job.pk, "status": ImportJob.STATUS_CANCELLED}
    except (PathRefused, FolderRefused, MappingError, cprt_bench.BenchFileError, ValueError) as exc:
        return _fail(job, execution, str(exc))
    except Exception as exc:  # noqa: BLE001 - the job records the failure; the worker goes on
        log.exception("import #%s failed", job.pk)
        return _fail(job, execution, f"{exc.__class__.__name__}: {exc}")
    finally:
        execution.heartbeat.stop()
    if ImportJob.move(job.pk, "finish", where=execution.mine, result=result):
        audit(job.created_by, "import.finished", job, kind=job.kind, path=job.path, result=_short(result))
        return {"job_id": job.pk, "status": ImportJob.STATUS_FINISHED}
    return {"job_id": job.pk, "status": ImportJob.objects.get(pk=job.pk).status}


def _fail(job: ImportJob, execution: _Execution, error: str) -> dict:
    if ImportJob.move(job.pk, "fail", where=execution.mine, error=error[:20000]):
        audit(job.created_by, "import.failed", job, error=error[:2000])
    return {"job_id": job.pk, "status": ImportJob.STATUS_FAILED}


def _import(job: ImportJob, target: Path, execution: _Execution) -> dict:
    if job.kind == ImportJob.KIND_VISPR:
        done = import_release(target, vispr_splits=job.options.get("vispr_splits") or None, progress=execution.progress,
                              user=job.created_by, before_commit=execution.check)
        ImportJob.objects.filter(execution.mine, pk=job.pk).update(done=execution_total(job.pk))
        data = done.as_json()
        data["skipped"] = data["skipped"][:200]
        data["skipped_count"] = len(done.skipped)
        data["root"] = job.path
        data["links"] = [{"link": link["link"], "target": _under_root(link["target"])} for link in done.links]
        return data
    ImportJob.objects.filter(execution.mine, pk=job.pk).update(done=0, total=1)
    with transaction.atomic():
        imported = cprt_bench.import_bench_file(target, job.options.get("split", "test"), actor=job.created_by)
        execution.check()  # a cancel that came while the file was read: roll it all back
    ImportJob.objects.filter(execution.mine, pk=job.pk).update(done=1)
    return {"rows": imported.rows, "images_created": imported.images_created, "images_updated": imported.images_updated,
            "profile": imported.profile.label, "activated": imported.activated,
            "scored": imported.scored.get("scored", 0), "root": job.path}


def execution_total(job_id: int) -> int:
    return ImportJob.objects.filter(pk=job_id).values_list("total", flat=True).first() or 0


def _short(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "skipped"}
