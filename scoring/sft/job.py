"""SFT exports launched from the browser, on the dataset export's job machinery (scoring/exports.py):
the same ExportJob row (kind "sft", the SFT options in `options`), task ("scoring.run_export", sent by
name), progress, heartbeat, cancel/resume, reconciler, zip and download. This module only stores the
job and builds its folder."""
from __future__ import annotations

from pathlib import Path

from django.db import transaction

from core.audit import audit
from core.dispatch import send_job_on_commit
from scoring.models import ExportJob, ScoringProfile

from . import export
from .hygiene import LeakError
from .images import FACES_ORIGINAL, face_variants


def start_sft_export(actor, data: dict) -> ExportJob:
    """Store a queued SFT job from the form's cleaned data, audit it, and dispatch it on commit.

    `data`: format, prompt_version, split, profile (ScoringProfile), include_images, faces, annotation_stages,
    dataset_version (a DatasetVersion or None: only its images).
    """
    if not isinstance(data["profile"], ScoringProfile):
        raise ValueError("profile must be a scoring profile.")
    version = export.check_options(data["format"], data["prompt_version"], data["split"], bool(data["include_images"]), data["faces"])
    options = {
        "format": data["format"], "prompt_version": version, "split": data["split"], "faces": data["faces"],
        "annotation_stages": bool(data["annotation_stages"]),
    }
    if data.get("dataset_version"):
        options["dataset_version"] = data["dataset_version"].name
    with transaction.atomic():
        job = ExportJob(
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
            kind=ExportJob.KIND_SFT,
            options=options,
            splits=[data["split"], export.EVALUATION_SPLIT],
            profile=data["profile"],
            include_images=bool(data["include_images"]),
            face_variant=face_variant_setting(data["faces"]),
            dataset_version=data.get("dataset_version"),
            destination=ExportJob.DESTINATION_ZIP,
        )
        job.full_clean()
        job.save()
        audit(actor, "export.launch", job, kind=job.kind, profile=job.profile.label, include_images=job.include_images, **options)
        send_job_on_commit(ExportJob, job.pk, "scoring.run_export")
    return job


def face_variant_setting(faces: str) -> dict:
    """The job's `face_variant` (shown on the job page like the dataset export's): {} for the originals."""
    if faces == FACES_ORIGINAL:
        return {}
    module = face_variants()
    return dict(module.parse_setting_key(faces)) if module is not None else {}


def build(job: ExportJob, folder: Path, progress) -> dict:
    """The worker's side: write the job's SFT export into `folder` (called by scoring.exports.run_export)."""
    o = job.options
    try:
        return export.export_sft(
            folder, o["format"], o["prompt_version"], o["split"], job.profile, include_images=job.include_images,
            annotation_stages=o.get("annotation_stages", False), faces=o.get("faces", "original"), progress=progress, actor=job.created_by,
            dataset_version=job.dataset_version,
        )
    except LeakError as exc:
        raise export.SFTError(str(exc)) from None
