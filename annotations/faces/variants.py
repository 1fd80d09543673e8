"""Make and check the face-anonymized variant of one image (the job and the command call these).

`make_variant` reads the original from private storage, detects faces, removes them, re-encodes the
result through `annotations.images.clean_image` (so the variant carries pixels only, like every
stored image), stores it content-addressed beside the originals, runs the detector again on the
stored bytes around the anonymized boxes (the residual pass; none when no face was found) and
records everything in one FaceVariant row. Bad input raises
VariantError with a message a person can act on, before anything is written.
"""
from __future__ import annotations

import io
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Count
from PIL import Image as PILImage

from annotations.images import CleanImage, ImageRejected, attach, clean_image

from . import detector, pixels
from .models import FaceVariant

JPEG, PNG = "jpg", "png"


class VariantError(ValueError):
    """The variant cannot be made or read; the message says why."""


def check_setting(method: str, threshold, margin) -> tuple[str, float, float]:
    """Validate a (method, threshold, margin) triple from any edge; returns it normalised."""
    try:
        pixels.check_method(method)
        pixels.check_margin(margin)
    except ValueError as exc:
        raise VariantError(str(exc)) from None
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.01 <= threshold <= 0.99:
        raise VariantError(f"threshold must be a number between 0.01 and 0.99, not {threshold!r}")
    return method, round(float(threshold), 4), round(float(margin), 4)


def _read_stored(field, what: str) -> bytes:
    if not field.name:
        raise VariantError(f"{what} has no stored file.")
    try:
        with field.storage.open(field.name, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise VariantError(f"{what}: the stored file {field.name} is missing.") from None


def decode(raw: bytes, what: str) -> PILImage.Image:
    try:
        img = PILImage.open(io.BytesIO(raw), formats=("JPEG", "PNG"))
        img.load()
    except Exception as exc:  # noqa: BLE001 - any decoder failure on stored bytes is reported, never a crash
        raise VariantError(f"{what} is not a readable image ({exc.__class__.__name__}).") from None
    return img


def read_original(image) -> bytes:
    return _read_stored(image.file, f"image {image.vispr_id}")


def read_variant(variant: FaceVariant) -> PILImage.Image:
    what = f"the anonymized variant of {variant.image.vispr_id}"
    return decode(_read_stored(variant.file, what), what)


def encode(img: PILImage.Image, extension: str) -> bytes:
    out = io.BytesIO()
    if extension == JPEG:
        img.save(out, format="JPEG", quality=95)
    else:
        img.save(out, format="PNG")
    return out.getvalue()


@dataclass
class Computed:
    clean: CleanImage  # the variant's bytes as they will be stored
    boxes: list
    residual_boxes: list


def compute(raw: bytes, extension: str, method: str, threshold: float, margin: float, what: str = "the image") -> Computed:
    """Detect, anonymize, re-encode and run the residual pass: no database, no storage (threads run this)."""
    img = decode(raw, what)
    boxes = [f.as_list() for f in detector.detect(img, threshold)]
    anonymized = pixels.anonymize(img, boxes, method, margin)
    try:
        clean = clean_image(encode(anonymized, extension))
    except ImageRejected as exc:  # pragma: no cover - our own encoder's output; reported if it ever happens
        raise VariantError(f"the anonymized variant of {what} could not be stored: {exc}") from None
    if not boxes:
        # [decision] Nothing was anonymized: the variant is the original re-encoded, in which the first
        # pass found no face, so no second network pass (docs/faces.md).
        return Computed(clean=clean, boxes=boxes, residual_boxes=[])
    # The residual pass reads the stored bytes back, as a model or an export will see them, and looks
    # where pixels changed: around the anonymized boxes (elsewhere the first pass found no face).
    residual = residual_in_regions(decode(clean.data, f"the anonymized variant of {what}"), boxes, threshold)
    return Computed(clean=clean, boxes=boxes, residual_boxes=[f.as_list() for f in residual])


def residual_in_regions(img: PILImage.Image, boxes: list, threshold: float) -> list[detector.Face]:
    """Faces in the part of `img` around `boxes`: their bounding rectangle grown by the largest box's
    size on every side (a face the anonymization left partly visible still fits), in `img`'s pixels."""
    width, height = img.size
    grow = max(max(b[2] - b[0], b[3] - b[1]) for b in boxes)
    left = max(0, int(min(b[0] for b in boxes) - grow))
    top = max(0, int(min(b[1] for b in boxes) - grow))
    right = min(width, int(max(b[2] for b in boxes) + grow) + 1)
    bottom = min(height, int(max(b[3] for b in boxes) + grow) + 1)
    if (left, top, right, bottom) == (0, 0, width, height):
        return detector.detect(img, threshold)
    found = detector.detect(img.crop((left, top, right, bottom)), threshold)
    return [detector.Face(f.x1 + left, f.y1 + top, f.x2 + left, f.y2 + top, f.score) for f in found]


def extension_of(image) -> str:
    return JPEG if image.file.name.endswith(".jpg") else PNG


def find(image, method: str, threshold: float, margin: float) -> FaceVariant | None:
    return FaceVariant.objects.filter(image=image, method=method, threshold=threshold, margin=margin).first()


def store(image, method: str, threshold: float, margin: float, computed: Computed, job=None) -> tuple[FaceVariant, bool]:
    """Write the computed variant's bytes and row; (variant, created). A setting stored already wins."""
    variant = FaceVariant(image=image, method=method, threshold=threshold, margin=margin, job=job,
                          detector=detector.detector_name(), boxes=computed.boxes, faces=len(computed.boxes),
                          residual_boxes=computed.residual_boxes, residual_faces=len(computed.residual_boxes))
    attach(variant, computed.clean)
    try:
        with transaction.atomic():
            variant.save()
    except IntegrityError:  # another worker stored this setting first: keep theirs
        return find(image, method, threshold, margin), False
    return variant, True


def make_variant(image, method: str = pixels.DEFAULT_METHOD, threshold: float = detector.DEFAULT_THRESHOLD,
                 margin: float = pixels.DEFAULT_MARGIN, job=None) -> tuple[FaceVariant, bool]:
    """(variant, created) for `image` under this setting; an existing variant is returned as it is."""
    method, threshold, margin = check_setting(method, threshold, margin)
    existing = find(image, method, threshold, margin)
    if existing is not None:
        return existing, False
    computed = compute(read_original(image), extension_of(image), method, threshold, margin, f"image {image.vispr_id}")
    return store(image, method, threshold, margin, computed, job)


def residual_pass(variant: FaceVariant) -> int:
    """Run the detector again on the stored variant and record what it finds; returns the count."""
    faces = detector.detect(read_variant(variant), variant.threshold)
    variant.residual_boxes = [f.as_list() for f in faces]
    variant.residual_faces = len(faces)
    FaceVariant.objects.filter(pk=variant.pk).update(residual_boxes=variant.residual_boxes, residual_faces=variant.residual_faces)
    return len(faces)


# --- for the higher layers (judge runs, exports, the comparison page) -------------------------

def setting_key(method: str, threshold: float, margin: float) -> str:
    """`blur:0.5:0.2`: how a form or the API names one setting."""
    return f"{method}:{threshold:g}:{margin:g}"


def parse_setting_key(key: str) -> dict:
    """{"method", "threshold", "margin"} from `method:threshold:margin`; VariantError if malformed."""
    parts = key.split(":") if isinstance(key, str) else []
    if len(parts) != 3:
        raise VariantError(f"an anonymization setting is written method:threshold:margin (e.g. blur:0.5:0.2), not {key!r}")
    try:
        threshold, margin = float(parts[1]), float(parts[2])
    except ValueError:
        raise VariantError(f"threshold and margin must be numbers in {key!r}") from None
    method, threshold, margin = check_setting(parts[0], threshold, margin)
    return {"method": method, "threshold": threshold, "margin": margin}


def describe_setting(setting: dict) -> str:
    return f"faces {setting['method']}, threshold {setting['threshold']:g}, margin {setting['margin']:g}"


def available_settings() -> list[tuple[str, str, int]]:
    """(key, label, images) for every setting that has variants, most images first."""
    rows = (FaceVariant.objects.values("method", "threshold", "margin").annotate(n=Count("id")).order_by("-n", "method"))
    return [(setting_key(r["method"], r["threshold"], r["margin"]), f"{describe_setting(r)} ({r['n']} images)", r["n"]) for r in rows]


def variant_files(image_ids, setting: dict) -> dict[int, str]:
    """image id -> stored file name of its variant under `setting` (images without one are absent)."""
    ids = list(image_ids)
    out: dict[int, str] = {}
    for i in range(0, len(ids), 900):  # stay under SQLite's bound-parameter limit
        out.update(FaceVariant.objects.filter(image_id__in=ids[i : i + 900], **setting).values_list("image_id", "file"))
    return out
