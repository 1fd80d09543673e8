"""clean_image's bytes are those of the way it first dropped metadata (issue 37 replaced a rebuild of the
picture from its raw pixel bytes by a plain copy with no `info`): the stored bytes of every kind of
picture, metadata and all, stay exactly what they were. `frombytes_reference` is that first way."""
from __future__ import annotations

import hashlib
import io
import random

import pytest
from PIL import ExifTags, ImageCms, ImageOps, PngImagePlugin
from PIL import Image as PILImage

from annotations.images import clean_image


def frombytes_reference(raw: bytes) -> tuple[bytes, str]:
    """The cleaned bytes and extension as clean_image made them before issue 37 (limits left out)."""
    with PILImage.open(io.BytesIO(raw), formats=("JPEG", "PNG")) as probe:
        fmt = probe.format
        probe.load()
        img = probe
        if probe.getexif().get(ExifTags.Base.Orientation, 1) in range(2, 9):
            img = ImageOps.exif_transpose(probe)
        if fmt == "JPEG":
            if img.mode != "RGB":
                img = img.convert("RGB")
        elif img.mode not in ("RGB", "RGBA", "L", "LA"):
            img = img.convert("RGBA" if "A" in img.getbands() else "RGB")
        img = PILImage.frombytes(img.mode, img.size, img.tobytes())
        out = io.BytesIO()
        img.save(out, format="JPEG", quality=95) if fmt == "JPEG" else img.save(out, format="PNG")
    return out.getvalue(), "jpg" if fmt == "JPEG" else "png"


def noise(mode: str, size=(61, 43), seed: int = 1) -> PILImage.Image:
    rng = random.Random(seed)
    bands = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I": 4, "F": 4}.get(mode, len(mode))
    data = rng.randbytes(size[0] * size[1] * bands) if mode != "1" else rng.randbytes((size[0] + 7) // 8 * size[1])
    return PILImage.frombytes(mode, size, data)


def saved(image: PILImage.Image, fmt: str, **params) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format=fmt, **params)
    return buf.getvalue()


def exif(orientation: int) -> bytes:
    tags = PILImage.Exif()
    tags[ExifTags.Base.Orientation] = orientation
    tags[ExifTags.Base.Make] = "Camera"
    return tags.tobytes()


SRGB = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


def png_text() -> PngImagePlugin.PngInfo:
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "GPS 48.85N")
    return info


def palette_with_transparency() -> bytes:
    image = noise("RGB").convert("P", palette=PILImage.Palette.ADAPTIVE, colors=16)
    return saved(image, "PNG", transparency=3)


def mpo() -> bytes:
    return saved(noise("RGB", seed=2), "MPO", save_all=True, append_images=[noise("RGB", seed=3)])


CASES = {
    "jpeg rgb": lambda: saved(noise("RGB", (640, 480)), "JPEG", quality=85),
    "jpeg turned, comment, icc, dpi": lambda: saved(noise("RGB"), "JPEG", exif=exif(6), comment=b"hi", icc_profile=SRGB, dpi=(300, 300)),
    "jpeg mirrored": lambda: saved(noise("RGB"), "JPEG", exif=exif(2)),
    "jpeg grey": lambda: saved(noise("L"), "JPEG"),
    "jpeg cmyk": lambda: saved(noise("CMYK"), "JPEG"),
    "jpeg progressive 4:4:4": lambda: saved(noise("RGB"), "JPEG", progressive=True, subsampling=0),
    "mpo": mpo,
    "png rgb with text, icc, dpi": lambda: saved(noise("RGB"), "PNG", pnginfo=png_text(), icc_profile=SRGB, dpi=(72, 72)),
    "png rgba turned": lambda: saved(noise("RGBA"), "PNG", exif=exif(8)),
    "png grey": lambda: saved(noise("L"), "PNG"),
    "png grey alpha": lambda: saved(noise("LA"), "PNG"),
    "png 1-bit": lambda: saved(noise("1"), "PNG"),
    "png palette with transparency": palette_with_transparency,
    "png 16-bit": lambda: saved(noise("I;16"), "PNG"),
    "png rgb transparency": lambda: saved(noise("RGB"), "PNG", transparency=(1, 2, 3)),
}


@pytest.mark.parametrize("name", CASES)
def test_clean_image_bytes_are_those_of_the_frombytes_rebuild(name):
    raw = CASES[name]()
    data, extension = frombytes_reference(raw)
    clean = clean_image(raw)
    assert (clean.data, clean.extension) == (data, extension)
    assert clean.sha256 == hashlib.sha256(data).hexdigest()
