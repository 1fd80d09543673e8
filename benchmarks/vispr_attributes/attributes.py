"""The data this benchmark reads, all stored by the VISPR import (annotations/services/vispr_release.py):
the release's attribute list (`VisprAttribute`, from attributes.tsv, never a list in code) and each
image's VISPR labels (`Image.vispr_labels`, presence-only: listed = 1, else 0).

A run freezes the attribute list it asked about in its prompt (`Run.prompt_text["attributes"]`), so
its figures keep the attributes it was asked even after another release is imported.
"""
from __future__ import annotations

from annotations.models import Image, VisprAttribute

IMPORT_HINT = "import VISPR first: manage.py import_vispr /path/to/vispr (or Images → Import data)"


def imported() -> list[tuple[str, str]]:
    """(attribute id, description) of the imported attributes.tsv, in its order."""
    return list(VisprAttribute.objects.order_by("idx", "attribute_id").values_list("attribute_id", "description"))


def vispr_images():
    """Images the VISPR import wrote (they carry a VISPR split and their labels)."""
    return Image.objects.exclude(vispr_split="")


def imported_splits() -> list[str]:
    return sorted(set(vispr_images().values_list("vispr_split", flat=True).distinct()))


def missing() -> str | None:
    """Why no run can be launched yet (None: VISPR attributes and images are imported)."""
    if not VisprAttribute.objects.exists():
        return f"No VISPR attributes are imported; {IMPORT_HINT}."
    if not vispr_images().exclude(file="").exists():
        return f"No VISPR image with stored bytes is imported; {IMPORT_HINT}."
    return None


def truth(image_ids) -> dict[int, set[str]]:
    """image id -> the VISPR attribute ids present on it (as imported now)."""
    out: dict[int, set[str]] = {}
    todo = sorted(set(image_ids))
    for i in range(0, len(todo), 900):  # stay under SQLite's bound-parameter limit
        for pk, labels in Image.objects.filter(pk__in=todo[i : i + 900]).values_list("pk", "vispr_labels"):
            out[pk] = {str(v) for v in labels or ()}
    return out
