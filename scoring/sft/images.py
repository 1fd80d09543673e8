"""Image bytes for fine-tuning exports: the stored (cleaned, metadata-free) originals, or their
face-anonymized variants under one anonymization setting.

The variants come through one seam, `face_variants()`: the face-anonymization package
(`annotations.faces.variants`: `parse_setting_key("blur:0.5:0.2")`, `variant_files(image_ids, setting)`,
`available_settings()`). Where it is not installed, asking for variants is refused with a message
that says so. An image without a variant under the chosen setting is left out and listed, never
replaced by its original.
"""
from __future__ import annotations

import importlib
from pathlib import Path

from annotations.models import Image

FACES_ORIGINAL = "original"
MIME = {"jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp"}


class ImageUnavailable(ValueError):
    pass


def face_variants():
    """annotations.faces.variants when the face-anonymization package is installed, else None."""
    try:
        return importlib.import_module("annotations.faces.variants")
    except ImportError:
        return None


def face_settings() -> list[tuple[str, str]]:
    """(setting key, label) of every anonymization setting that has variants; [] without the package."""
    module = face_variants()
    return [(key, label) for key, label, _ in module.available_settings()] if module is not None else []


class ImageReader:
    """`prepare(image_ids)` once per part, then `read(image_id, file_name)` -> (bytes, extension, "original" | "anonymized")."""

    def __init__(self, faces: str = FACES_ORIGINAL):
        self.faces = faces
        self.storage = Image._meta.get_field("file").storage
        self.variants: dict[int, str] | None = None
        if faces == FACES_ORIGINAL:
            return
        module = face_variants()
        if module is None:
            raise ImageUnavailable(
                "Face-anonymized variants are not available in this installation (annotations.faces is missing): "
                "export the originals."
            )
        try:
            self.setting = module.parse_setting_key(faces)
        except ValueError as exc:
            raise ImageUnavailable(f"Unknown faces option {faces!r}: use original or an anonymization setting ({exc}).") from None
        self.module = module
        model = getattr(module, "FaceVariant", None)
        self.variant_storage = model._meta.get_field("file").storage if model is not None else self.storage
        self.variants = {}

    def prepare(self, image_ids) -> None:
        if self.variants is not None:
            self.variants = dict(self.module.variant_files(list(image_ids), self.setting))

    def read(self, image_id: int, file_name: str) -> tuple[bytes, str, str]:
        if self.variants is not None:
            name = self.variants.get(image_id)
            if name is None:
                raise ImageUnavailable(f"no face-anonymized variant under {self.faces}")
            with self.variant_storage.open(name, "rb") as fh:
                return fh.read(), Path(name).suffix.lower().lstrip(".") or "jpg", "anonymized"
        if not file_name:
            raise ImageUnavailable("no stored bytes")
        with self.storage.open(file_name, "rb") as fh:
            data = fh.read()
        return data, Path(file_name).suffix.lower().lstrip(".") or "jpg", FACES_ORIGINAL
