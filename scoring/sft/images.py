"""Image bytes for fine-tuning exports: the stored (cleaned, metadata-free) original, or its
face-anonymized variant.

The variant comes through one seam, `anonymized_source()`: `annotations.faces.anonymized_bytes(image_id)`
returning `(bytes, extension)` for an image that has a face-anonymized variant, or None. Until the
face-anonymization package provides that function, asking for anonymized faces is refused with a
message that says so (never silently replaced by the originals).
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Callable

from annotations.models import Image

FACES_ORIGINAL, FACES_ANONYMIZED = "original", "anonymized"
FACES = (FACES_ORIGINAL, FACES_ANONYMIZED)
MIME = {"jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp"}


class ImageUnavailable(ValueError):
    pass


def anonymized_source() -> Callable[[int], tuple[bytes, str] | None] | None:
    """annotations.faces.anonymized_bytes when installed, else None."""
    try:
        faces = importlib.import_module("annotations.faces")
    except ImportError:
        return None
    return getattr(faces, "anonymized_bytes", None)


class ImageReader:
    """read(image_id, file_name) -> (bytes, extension, variant) where variant is "original" or "anonymized"."""

    def __init__(self, faces: str = FACES_ORIGINAL):
        if faces not in FACES:
            raise ImageUnavailable(f"Unknown faces option {faces!r}: use {' or '.join(FACES)}.")
        self.faces = faces
        self.variant_of = None
        if faces == FACES_ANONYMIZED:
            self.variant_of = anonymized_source()
            if self.variant_of is None:
                raise ImageUnavailable(
                    "Face-anonymized variants are not available in this installation (annotations.faces.anonymized_bytes "
                    "is missing): export the originals, or build the variants first."
                )
        self.storage = Image._meta.get_field("file").storage

    def read(self, image_id: int, file_name: str) -> tuple[bytes, str, str]:
        if self.variant_of is not None:
            variant = self.variant_of(image_id)
            if variant is not None:
                data, ext = variant
                return data, ext.lower().lstrip("."), FACES_ANONYMIZED
        if not file_name:
            raise ImageUnavailable("no stored bytes")
        with self.storage.open(file_name, "rb") as fh:
            data = fh.read()
        return data, Path(file_name).suffix.lower().lstrip(".") or "jpg", FACES_ORIGINAL
