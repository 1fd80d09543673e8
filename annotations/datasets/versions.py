"""What the rest of the workbench asks of a dataset version: its images (`dataset_image_ids`, the one
helper every scoping uses: runs, exports, the leaderboard), its summary (`build_dataset --json`, the
page), and a labeling batch made from it."""
from __future__ import annotations

from django.db import transaction
from django.db.models import Count

from annotations.models import Batch, Image
from core.audit import audit

from .models import DatasetVersion


def dataset_image_ids(version: DatasetVersion | int) -> list[int]:
    """The primary keys of the version's member images, sorted."""
    version_id = version.pk if isinstance(version, DatasetVersion) else int(version)
    return sorted(DatasetVersion.members.through.objects.filter(datasetversion_id=version_id).values_list("image_id", flat=True))


def version_choices() -> list[tuple[str, str]]:
    """(name, "name (N images)") of every version, newest first: the forms' scoping choice."""
    versions = DatasetVersion.objects.annotate(n=Count("members")).order_by("-created_at", "-id")
    return [(name, f"{name} ({n} images)") for name, n in versions.values_list("name", "n")]


def by_name(name: str) -> DatasetVersion | None:
    return DatasetVersion.objects.filter(name=name).first()


def summary(version: DatasetVersion) -> dict:
    """The version as `build_dataset --json` prints it."""
    members = sorted(Image.objects.filter(dataset_versions=version).values_list("vispr_id", flat=True))
    return {
        "name": version.name, "members": members, "count": len(members), "rules": dict(version.rule_counts),
        "candidates": dict(version.recipe.get("candidates", {})), "unseen_ids": list(version.recipe.get("unseen_ids", [])),
        "overlaps": dict(version.overlaps), "seed": version.seed,
        "vispr_splits": list(version.vispr_splits), "checksums": dict(version.checksums), "recipe": version.recipe,
    }


class BatchError(ValueError):
    """A batch refused (nothing changed)."""


def create_batch(actor, version: DatasetVersion, name: str, description: str = "") -> tuple[Batch, int]:
    """A new labeling batch holding the version's images; returns (batch, images moved from another
    batch). An image belongs to one batch at a time, so those images leave their previous batch."""
    name = name.strip()
    if not name:
        raise BatchError("Name the batch.")
    ids = dataset_image_ids(version)
    if not ids:
        raise BatchError(f"Dataset version {version.name} has no images.")
    with transaction.atomic():
        if Batch.objects.filter(name=name).exists():
            raise BatchError(f"A batch named {name!r} exists: choose another name.")
        batch = Batch.objects.create(name=name, description=description or f"The images of dataset version {version.name}.")
        moved = 0
        for i in range(0, len(ids), 900):
            part = ids[i:i + 900]
            moved += Image.objects.filter(pk__in=part, batch__isnull=False).count()
            Image.objects.filter(pk__in=part).update(batch=batch)
        audit(actor, "dataset.batch", batch, dataset_version=version.name, images=len(ids), moved_from_other_batches=moved)
    return batch, moved
