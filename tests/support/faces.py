"""Real photographs for the face-anonymization tests: scikit-image ships them inside its wheel."""
from __future__ import annotations

import io

import numpy as np
from PIL import Image as PILImage

# Where CenterFace finds the astronaut's face (pixels of the 512x512 picture), checked by eye once.
ASTRONAUT_FACE = (181, 58, 270, 178)


def astronaut() -> PILImage.Image:
    from skimage import data

    return PILImage.fromarray(data.astronaut())


def coffee() -> PILImage.Image:
    """A cup of coffee: no face."""
    from skimage import data

    return PILImage.fromarray(data.coffee())


def encoded(img: PILImage.Image, fmt: str = "PNG", gps: bool = False) -> bytes:
    """The picture's bytes; with gps, a JPEG carrying EXIF camera and GPS fields (what cleaning must drop)."""
    out = io.BytesIO()
    if gps:
        exif = PILImage.Exif()
        exif[0x010F] = "CameraMaker"  # Make
        exif[0x8825] = {1: "N", 2: (48.0, 51.0, 24.0), 3: "E", 4: (2.0, 21.0, 3.0)}  # GPSInfo
        img.save(out, format="JPEG", quality=95, exif=exif.tobytes())
    else:
        img.save(out, format=fmt)
    return out.getvalue()


def store(vispr_id: str, raw: bytes, split: str = "test"):
    """An Image row whose stored bytes went through the project's ingestion (clean_image + attach)."""
    from annotations.images import attach, clean_image
    from annotations.models import Image

    image = Image(vispr_id=vispr_id, split=split, source="test")
    attach(image, clean_image(raw))
    image.save()
    return image


def pixels(field) -> np.ndarray:
    with field.storage.open(field.name, "rb") as fh:
        return np.asarray(PILImage.open(fh).convert("RGB"), dtype=np.int16)
