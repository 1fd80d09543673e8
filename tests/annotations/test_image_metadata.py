"""Stored images carry pixels only: every kind of metadata is gone from the stored BYTES.

Each case builds a JPEG or PNG that really carries one kind of metadata (checked first), stores it the
way every import does (`clean_image` + `attach`), reads the stored file back and walks its segments
(JPEG) or chunks (PNG): only the structure needed to decode the pixels may remain.
"""
from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image as PILImage
from PIL import ImageCms, PngImagePlugin

from annotations.images import attach, clean_image
from annotations.models import Image

GPS_COMMENT = b"GPS 48.8583N 2.2945E"
XMP = b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:Description GPSLatitude="48,51.5N" creator="Jane Doe"/></x:xmpmeta>'
# What stored JPEG bytes may contain: start/end, the JFIF header, tables, frame, scan, restart interval.
JPEG_ALLOWED = {0xD8, 0xD9, 0xE0, 0xDB, 0xC4, 0xC0, 0xC1, 0xC2, 0xDA, 0xDD}
PNG_ALLOWED = {b"IHDR", b"PLTE", b"IDAT", b"IEND"}


def pixels(mode="RGB") -> PILImage.Image:
    image = PILImage.new(mode, (48, 32), (200, 40, 90) if mode == "RGB" else (200, 40, 90, 255))
    image.putpixel((3, 4), (0, 0, 0) if mode == "RGB" else (0, 0, 0, 0))
    return image


def jpeg_segments(data: bytes) -> list[tuple[int, bytes]]:
    """(marker, payload) of every segment up to the scan; the entropy-coded data is not walked."""
    assert data[:2] == b"\xff\xd8"
    segments, i = [(0xD8, b"")], 2
    while i < len(data):
        assert data[i] == 0xFF, f"not a marker at {i}"
        marker = data[i + 1]
        length = struct.unpack(">H", data[i + 2 : i + 4])[0]
        segments.append((marker, data[i + 4 : i + 2 + length]))
        if marker == 0xDA:
            break
        i += 2 + length
    # After the scan: only EOI (a second APPn/COM after the image data would show up here).
    tail = data[i:]
    assert tail.endswith(b"\xff\xd9")
    return segments


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, i = [], 8
    while i < len(data):
        length = struct.unpack(">I", data[i : i + 4])[0]
        kind = data[i + 4 : i + 8]
        chunks.append((kind, data[i + 8 : i + 8 + length]))
        i += 12 + length
    return chunks


def insert_jpeg_segment(data: bytes, marker: int, payload: bytes) -> bytes:
    """A segment right after SOI (what cameras and editors write)."""
    return data[:2] + bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload + data[2:]


def png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF)


def insert_png_chunk(data: bytes, kind: bytes, payload: bytes) -> bytes:
    end = 8 + 12 + struct.unpack(">I", data[8:12])[0]  # after IHDR
    return data[:end] + png_chunk(kind, payload) + data[end:]


def srgb_icc() -> bytes:
    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


def jpeg(**save) -> bytes:
    out = io.BytesIO()
    pixels().save(out, format="JPEG", quality=90, **save)
    return out.getvalue()


def png(**save) -> bytes:
    out = io.BytesIO()
    pixels("RGBA").save(out, format="PNG", **save)
    return out.getvalue()


def exif_with_gps() -> bytes:
    exif = PILImage.Exif()
    exif[0x010F] = "SecretCam"
    exif[0x8825] = {1: "N", 2: (48.0, 51.0, 29.0), 3: "E", 4: (2.0, 17.0, 40.0)}
    return exif.tobytes()


JPEG_CASES = {
    "exif-gps": (jpeg(exif=exif_with_gps()), b"SecretCam"),
    "xmp": (insert_jpeg_segment(jpeg(), 0xE1, b"http://ns.adobe.com/xap/1.0/\x00" + XMP), b"Jane Doe"),
    "icc": (jpeg(icc_profile=srgb_icc()), b"ICC_PROFILE"),
    "comment": (jpeg(comment=GPS_COMMENT), GPS_COMMENT),
    "comment-inserted": (insert_jpeg_segment(jpeg(), 0xFE, GPS_COMMENT), GPS_COMMENT),
    "photoshop-app13": (insert_jpeg_segment(jpeg(), 0xED, b"Photoshop 3.0\x008BIM\x04\x04\x00\x00" + GPS_COMMENT), GPS_COMMENT),
    "app15-vendor": (insert_jpeg_segment(jpeg(), 0xEF, b"VENDOR " + GPS_COMMENT), GPS_COMMENT),
}


def png_text(kind: str) -> bytes:
    info = PngImagePlugin.PngInfo()
    {"tEXt": lambda: info.add_text("Comment", GPS_COMMENT.decode()),
     "zTXt": lambda: info.add_text("Comment", GPS_COMMENT.decode(), zip=True),
     "iTXt": lambda: info.add_itxt("XML:com.adobe.xmp", XMP.decode())}[kind]()
    return png(pnginfo=info)


PNG_CASES = {
    "tEXt": (png_text("tEXt"), GPS_COMMENT),
    "zTXt": (png_text("zTXt"), zlib.compress(GPS_COMMENT)[2:6]),
    "iTXt-xmp": (png_text("iTXt"), b"Jane Doe"),
    "icc": (png(icc_profile=srgb_icc()), b"iCCP"),
    "exif": (png(exif=exif_with_gps()), b"SecretCam"),
    "phys-time": (insert_png_chunk(png(dpi=(300, 300)), b"tIME", struct.pack(">HBBBBB", 2017, 5, 4, 12, 0, 0)), b"tIME"),
}


def stored_bytes(raw: bytes) -> bytes:
    image = Image(vispr_id="2017_00000001", split="test", source="x")
    attach(image, clean_image(raw))
    image.save()
    with image.file.open("rb") as fh:
        return fh.read()


@pytest.mark.django_db
@pytest.mark.parametrize("name", JPEG_CASES)
def test_jpeg_metadata_is_not_in_the_stored_bytes(name):
    raw, needle = JPEG_CASES[name]
    assert needle in raw, "the fixture must carry the metadata"
    data = stored_bytes(raw)
    assert needle not in data and GPS_COMMENT not in data
    segments = jpeg_segments(data)
    assert {marker for marker, _ in segments} <= JPEG_ALLOWED, [hex(m) for m, _ in segments]
    app0 = [payload for marker, payload in segments if marker == 0xE0]
    assert len(app0) == 1 and app0[0].startswith(b"JFIF\x00") and len(app0[0]) == 14, "JFIF header only, no thumbnail"
    with PILImage.open(io.BytesIO(data)) as stored:
        assert stored.format == "JPEG" and stored.size == (48, 32)
        assert not ({"comment", "icc_profile", "exif", "xmp", "photoshop"} & set(stored.info)), stored.info


@pytest.mark.django_db
@pytest.mark.parametrize("name", PNG_CASES)
def test_png_metadata_is_not_in_the_stored_bytes(name):
    raw, needle = PNG_CASES[name]
    assert needle in raw, "the fixture must carry the metadata"
    data = stored_bytes(raw)
    assert needle not in data and GPS_COMMENT not in data
    assert {kind for kind, _ in png_chunks(data)} <= PNG_ALLOWED, [kind for kind, _ in png_chunks(data)]
    with PILImage.open(io.BytesIO(data)) as stored:
        assert stored.format == "PNG" and stored.size == (48, 32) and stored.getpixel((3, 4)) == (0, 0, 0, 0)
        assert not stored.info, stored.info


@pytest.mark.django_db
def test_pixels_survive_the_re_encoding():
    data = stored_bytes(png_text("tEXt"))
    with PILImage.open(io.BytesIO(data)) as stored:
        assert stored.tobytes() == pixels("RGBA").tobytes()
