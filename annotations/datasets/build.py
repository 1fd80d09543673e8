"""Dataset builds: launch (store, audit, dispatch on commit), run (the worker, or `build_dataset` in
its own process), cancel, resume and reconcile. `tasks.py` wraps `run_build` for Celery, sent by name
("annotations.build_dataset") through core.dispatch.

A build stands on the job base (core/jobs.py): it is claimed before it runs (the "start" transition
and a lease in one UPDATE, from `queued` only), so a duplicated message does nothing. The worker reads
the images of the recipe's VISPR splits in chunks (keyset on the primary key), renewing its lease and
writing `done` after each chunk, and stops at a cancel it reads back there. The version and its
members are written in one transaction with the "finish" move; nothing is written before, so a
cancelled, failed or lost build leaves no version, and a resume builds from the start.
"""
from __future__ import annotations

import hashlib
import logging
import os
import stat
from pathlib import Path

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from annotations.models import Image
from core.audit import audit
from core.dispatch import send_job_on_commit
from core.jobs import Lease, expired_condition

from .models import DatasetBuild, DatasetVersion
from .recipes import NAME, Recipe, RecipeError, parse
from .selection import Collector, labels_digest

log = logging.getLogger(__name__)
TASK = "annotations.build_dataset"
CHUNK = 2000
STALE_S = 300.0  # a build renews its lease after every chunk (well under a second each)
OUR_SPLITS = {value for value, _ in Image.SPLITS}


class BuildError(ValueError):
    """A build refused at launch (nothing stored), or a build that failed (its message)."""


def resolve_splits(names: list[str]) -> list[str]:
    """VISPR split names from `--vispr-split` values: a VISPR split (test2017) as is, our split name
    (test, train, other) as the VISPR splits its images were imported from (import_vispr's mapping)."""
    out: list[str] = []
    for name in names:
        if name in OUR_SPLITS:
            found = sorted(Image.objects.filter(split=name).exclude(vispr_split="").values_list("vispr_split", flat=True).distinct())
            if not found:
                raise BuildError(f"No VISPR image is in our split {name!r}: import VISPR first (manage.py import_vispr).")
            out += found
        else:
            out.append(name)
    return list(dict.fromkeys(out))


def _splits(recipe: Recipe) -> list[str]:
    return sorted({s for rule in recipe.rules for s in recipe.splits_of(rule)})


def _images(splits: list[str]):
    return Image.objects.filter(vispr_split__in=splits)


def start_build(actor, recipe: Recipe, name: str, *, dispatch: bool = True) -> DatasetBuild:
    """Store a queued build of `recipe` into the version `name`, audit it, dispatch it on commit.
    Refused (BuildError, nothing stored) when the name is taken or no stored image is in the splits."""
    if not NAME.match(name or ""):
        raise BuildError(f"{name!r} is not a dataset version name: use letters, digits, '-' and '_' (at most 100).")
    try:
        recipe = parse({**recipe.as_json(), "target": name})
    except RecipeError as exc:
        raise BuildError(str(exc)) from None
    splits = _splits(recipe)
    with transaction.atomic():
        if DatasetVersion.objects.filter(name=name).exists():
            raise BuildError(f"A dataset version named {name!r} exists; a version never changes: choose another name.")
        if DatasetBuild.objects.filter(name=name, status__in=DatasetBuild.ACTIVE_STATUSES).exists():
            raise BuildError(f"A build of {name!r} is already under way.")
        total = _images(splits).count()
        if not total:
            raise BuildError(f"No stored image is in the VISPR split(s) {', '.join(splits)}: import VISPR first (manage.py import_vispr).")
        job = DatasetBuild.objects.create(
            created_by=actor if getattr(actor, "is_authenticated", False) else None, name=name, recipe=recipe.as_json(),
            seed=recipe.seed, total=total,
        )
        audit(actor, "dataset.build.launch", job, name=name, recipe=recipe.name or "(uploaded)", vispr_splits=splits,
              seed=recipe.seed, rules=[r.name for r in recipe.rules])
        if dispatch:
            send_job_on_commit(DatasetBuild, job.pk, TASK)
    return job


def claim(job_id: int) -> Lease | None:
    lease = Lease(DatasetBuild.objects.filter(pk=job_id), STALE_S)
    now = timezone.now()
    started = DatasetBuild.start(lease, where=Q(status=DatasetBuild.STATUS_QUEUED), started_at=now, heartbeat_at=now, error="", done=0)
    return lease if started else None


def file_checksums(root: Path, splits: list[str]) -> dict[str, str]:
    """sha256 of the VISPR release's files the labels came from, where the release is at hand:
    attributes.tsv, each `<split>.txt`, and per split one digest over every annotation JSON file
    (`name<TAB>sha256` lines in name order). Regular files only; links are not followed."""
    out: dict[str, str] = {}

    def digest(path: Path) -> str | None:
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                return None
        except OSError:
            return None
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()

    for name in ["attributes.tsv", *(f"{s}.txt" for s in splits)]:
        if (value := digest(root / name)) is not None:
            out[name] = value
    for split in splits:
        folder = root / "annotations" / split
        if not folder.is_dir() or folder.is_symlink():
            continue
        manifest = hashlib.sha256()
        count = 0
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                manifest.update(f"{entry.name}\t{digest(Path(entry.path))}\n".encode())
                count += 1
        if count:
            out[f"annotations/{split}/*.json ({count} files)"] = manifest.hexdigest()
    return out


def run_build(job_id: int, vispr_root: str | Path | None = None) -> dict:
    """Claim the build and make its version; marks the build finished, cancelled or failed."""
    lease = claim(job_id)
    job = DatasetBuild.objects.get(pk=job_id)
    if lease is None:
        return {"job_id": job_id, "status": job.status, "claimed": False}
    mine = Q(lease_owner=lease.owner)
    try:
        recipe = parse(job.recipe)
        splits = _splits(recipe)
        collector = Collector(recipe)
        stored: dict[str, list[tuple[str, list[str]]]] = {s: [] for s in splits}
        seen: set[str] = set()
        last, done = 0, 0
        while True:
            chunk = list(_images(splits).filter(pk__gt=last).order_by("pk").values_list("pk", "vispr_id", "vispr_split", "vispr_labels")[:CHUNK])
            if not chunk:
                break
            for pk, vispr_id, vispr_split, labels in chunk:
                labels = [x for x in (labels or []) if isinstance(x, str)]
                collector.add(vispr_id, vispr_split, labels)
                stored[vispr_split].append((vispr_id, labels))
                seen.update(labels)
            last, done = chunk[-1][0], done + len(chunk)
            if not lease.renew(heartbeat_at=timezone.now(), done=done):
                return {"job_id": job_id, "status": "lost", "claimed": True}
            if DatasetBuild.objects.filter(pk=job_id, status=DatasetBuild.STATUS_CANCELLING).exists():
                DatasetBuild.move(job_id, "cancel", where=mine)
                audit(job.created_by, "dataset.build.cancelled", job, done=done)
                return {"job_id": job_id, "status": DatasetBuild.STATUS_CANCELLED, "claimed": True}
        outcome = collector.finish()
        members = outcome.members
        if not members:
            raise BuildError(f"No image of {', '.join(splits)} matched any rule ({', '.join(r.name for r in recipe.rules)}); "
                             "no version was created.")
        checksums = {f"stored labels {s}": labels_digest(rows) for s, rows in stored.items()}
        if vispr_root:
            checksums.update(file_checksums(Path(vispr_root), splits))
        # Ids no image of the splits carries: a typo, or an attribute this release does not have (shown on the page).
        unseen = sorted({i for rule in recipe.rules for i in (*rule.any, *rule.none)} - seen)
        applied = {**recipe.as_json(), "candidates": outcome.candidate_counts, "unseen_ids": unseen,
                   "checksums_of": "files" if vispr_root else "stored labels"}
        version = _write_version(job, recipe, applied, splits, outcome, members, checksums, mine)
    except Exception as exc:
        error = str(exc) if isinstance(exc, (BuildError, RecipeError)) else f"The build failed: {exc.__class__.__name__}: {exc}"
        log.warning("dataset build #%s failed: %s", job_id, error)
        DatasetBuild.move(job_id, "fail", where=mine, error=error[:4000])
        audit(job.created_by, "dataset.build.failed", job, error=error[:4000])
        return {"job_id": job_id, "status": DatasetBuild.STATUS_FAILED, "claimed": True, "error": error}
    if version is None:  # cancelled (or taken over) during the final write: nothing was kept
        if DatasetBuild.objects.filter(pk=job_id, status=DatasetBuild.STATUS_CANCELLING).exists():
            DatasetBuild.move(job_id, "cancel", where=mine)
        job.refresh_from_db()
        return {"job_id": job_id, "status": job.status, "claimed": True}
    audit(job.created_by, "dataset.build.finished", version, build=job.pk, members=len(members), rules=version.rule_counts)
    return {"job_id": job_id, "status": DatasetBuild.STATUS_FINISHED, "claimed": True, "version": version.pk}


class _Lost(Exception):
    pass


def _write_version(job, recipe: Recipe, applied: dict, splits, outcome, members: list[str], checksums: dict, mine: Q):
    """The version, its members and the "finish" move in one transaction; None when the build was
    cancelled or taken over meanwhile (everything rolled back)."""
    pk_of = {}
    for i in range(0, len(members), CHUNK):
        pk_of.update(Image.objects.filter(vispr_id__in=members[i:i + CHUNK]).values_list("vispr_id", "pk"))
    try:
        with transaction.atomic():
            version = DatasetVersion.objects.create(
                name=job.name, description=recipe.description, recipe=applied, seed=recipe.seed, vispr_splits=splits,
                rule_counts=outcome.rule_counts, overlaps=outcome.overlaps, checksums=checksums, created_by=job.created_by,
            )
            through = DatasetVersion.members.through
            rows = [through(datasetversion_id=version.pk, image_id=pk_of[v]) for v in members if v in pk_of]
            through.objects.bulk_create(rows, batch_size=CHUNK)
            if not DatasetBuild.move(job.pk, "finish", where=mine, version=version, done=job.total):
                raise _Lost()
    except _Lost:
        return None
    except IntegrityError:
        raise BuildError(f"A dataset version named {job.name!r} was created meanwhile; this build kept nothing.") from None
    return version


def _nobody_works_on(job: DatasetBuild) -> bool:
    if job.lease_owner:
        return job.lease_expires_at is None or job.lease_expires_at < timezone.now()
    return job.silent_for(STALE_S)


def cancel_build(actor, job: DatasetBuild) -> bool:
    """A build nobody runs is cancelled now; a running one stops after its current chunk."""
    nobody = Q(status=DatasetBuild.STATUS_QUEUED) | Q(lease_owner="") | expired_condition()
    if not (DatasetBuild.move(job.pk, "cancel", where=nobody) or DatasetBuild.move(job.pk, "request_cancel")):
        return False
    audit(actor, "dataset.build.cancel", job, done=job.done, total=job.total)
    return True


def can_resume(job: DatasetBuild) -> bool:
    """Cancelled or failed (and its name still free), or active with nobody working on it."""
    if job.status in (DatasetBuild.STATUS_CANCELLED, DatasetBuild.STATUS_FAILED):
        return not DatasetVersion.objects.filter(name=job.name).exists()
    return job.is_active and _nobody_works_on(job)


def resume_build(actor, job: DatasetBuild) -> bool:
    """Queue the build again (it starts over); compare-and-set on the status and lease seen."""
    if not can_resume(job):
        return False
    seen = Q(status=job.status, lease_owner=job.lease_owner)
    with transaction.atomic():
        if job.status == DatasetBuild.STATUS_CANCELLING:
            if not DatasetBuild.move(job.pk, "cancel", where=seen):
                return False
            seen = Q(status=DatasetBuild.STATUS_CANCELLED)
        if not DatasetBuild.move(job.pk, "requeue", where=seen, error="", done=0, heartbeat_at=timezone.now(),
                                 lease_owner="", lease_expires_at=None):
            return False
        audit(actor, "dataset.build.resume", job)
        send_job_on_commit(DatasetBuild, job.pk, TASK)
    return True


def reconcile() -> list[int]:
    """Periodic (beat): re-queue running builds whose worker's lease expired; confirm the cancel of
    cancelling ones whose worker is gone. Returns the ids re-queued."""
    DatasetBuild.moves(DatasetBuild.objects.filter(expired_condition(), status=DatasetBuild.STATUS_CANCELLING), "cancel")
    return [job.pk for job in DatasetBuild.objects.filter(expired_condition(), status=DatasetBuild.STATUS_RUNNING)
            if resume_build(None, job)]
