"""import_vispr: safe registration of a VISPR-style image folder.

One file that is not an acceptable image refuses the whole folder (every such file listed, nothing
written); files that are not candidates, duplicates and ids already imported are listed and skipped.
More malformed images (hand-made bombs, other formats, garbage EXIF) in tests/cross/test_malformed_input.py.
"""
from __future__ import annotations

import io
import random
import shutil

import pytest
from django.core.management import CommandError, call_command
from PIL import Image as PILImage

from annotations.models import Image

from core.models import AuditEvent
from tests.conftest import png_bytes


def jpeg_with_gps() -> bytes:
    img = PILImage.new("RGB", (64, 48), (10, 120, 200))
    exif = PILImage.Exif()
    exif[0x010F] = "SecretCam"  # Make
    gps = exif.get_ifd(0x8825)
    gps[1], gps[2], gps[3], gps[4] = "N", (52.0, 31.0, 12.0), "E", (13.0, 24.0, 36.0)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", exif=exif)
    return buf.getvalue()


def noisy_png(size=300) -> bytes:
    rng = random.Random(0)
    img = PILImage.frombytes("RGB", (size, size), bytes(rng.getrandbits(8) for _ in range(size * size * 3)))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def bomb_png() -> bytes:
    # 10000 x 10000 one-bit pixels: a tiny file whose header declares 100 million pixels.
    buf = io.BytesIO()
    PILImage.new("1", (10000, 10000)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def folder(tmp_path, settings):
    settings.CPRT_MAX_IMAGE_PIXELS = 1_000_000
    settings.CPRT_MAX_IMAGE_BYTES = 200_000
    d = tmp_path / "test2017"
    d.mkdir()
    (d / "2017_10000580.jpg").write_bytes(jpeg_with_gps())
    (d / "2017_10000581.png").write_bytes(png_bytes(color=(9, 9, 9)))
    (d / "2017_10000582.jpg").write_bytes(png_bytes(color=(8, 8, 8)))  # a PNG named .jpg is still an image
    (d / "2017_20000006.jpg").write_bytes((d / "2017_10000580.jpg").read_bytes())  # same content, other id
    (d / "2017_10000581.jpeg").write_bytes(png_bytes(color=(7, 7, 7)))  # same id, other extension
    (d / "notes.txt").write_text("hello")
    (d / "sub").mkdir()
    return d


# File name -> (bytes, why it is refused)
BAD_FILES = {
    "2017_20000001.png": (bomb_png, "decompression bomb"),
    "2017_20000002.jpg": (lambda: b"this is not a picture", "not an image Pillow can read"),
    "2017_20000003.jpg": (lambda: b"", "empty file"),
    "2017_20000004.png": (noisy_png, "over the 200,000-byte limit"),
    "2017_20000005.jpg": (lambda: jpeg_with_gps()[:300], "unreadable or truncated image"),
}


def run(*args) -> str:
    out = io.StringIO()
    call_command("import_vispr", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_good_images_are_added_others_listed_with_reasons(folder):
    out = run(str(folder), "--split", "test")
    assert sorted(Image.objects.values_list("vispr_id", flat=True)) == ["2017_10000580", "2017_10000581", "2017_10000582"]
    assert "Images added: 3; attached to existing records: 0; files skipped: 4." in out
    expected = {
        "2017_20000006.jpg": "same content as 2017_10000580.jpg",
        "2017_10000581.png": "duplicate id 2017_10000581 (also 2017_10000581.jpeg)",
        "notes.txt": "not an image file name",
        "sub": "a folder",
    }
    for name, reason in expected.items():
        line = next(line for line in out.splitlines() if line.startswith(f"  skipped {name}:"))
        assert reason in line, line
    assert "Traceback" not in out
    image = Image.objects.get(vispr_id="2017_10000581")  # the .jpeg came first in name order
    assert image.split == "test" and image.width == 32 and image.height == 24 and image.source == "import_vispr test2017"
    event = AuditEvent.objects.get(action="import_vispr")
    assert event.data["added"] == 3 and event.data["skipped"] == 4


@pytest.mark.django_db
def test_one_bad_image_refuses_the_whole_folder_and_every_bad_one_is_listed(folder):
    for name, (content, _) in BAD_FILES.items():
        (folder / name).write_bytes(content())
    with pytest.raises(CommandError) as exc:
        run(str(folder), "--split", "test")
    message = str(exc.value)
    assert "nothing was written" in message and "5 file(s) cannot be imported" in message
    for name, (_, reason) in BAD_FILES.items():
        line = next(line for line in message.splitlines() if line.startswith(f"  {name}:"))
        assert reason in line, line
    assert "2017_10000580" not in message  # the good files are not the problem
    assert not Image.objects.exists() and not AuditEvent.objects.filter(action="import_vispr").exists()


@pytest.mark.django_db
def test_exif_and_gps_are_stripped_from_stored_bytes(folder):
    raw = (folder / "2017_10000580.jpg").read_bytes()
    assert b"Exif" in raw and b"SecretCam" in raw
    run(str(folder), "--split", "test")
    image = Image.objects.get(vispr_id="2017_10000580")
    stored = image.file.open("rb").read()
    image.file.close()
    assert b"Exif" not in stored and b"SecretCam" not in stored
    with PILImage.open(io.BytesIO(stored)) as img:
        assert img.format == "JPEG" and len(img.getexif()) == 0
    assert image.file.name.endswith(".jpg") and "2017_10000580" not in image.file.name


@pytest.mark.django_db
def test_second_run_adds_nothing_and_reports_existing_ids(folder):
    run(str(folder), "--split", "test")
    before = list(Image.objects.order_by("id").values_list("id", "vispr_id", "sha256", "file"))
    out = run(str(folder), "--split", "test")
    assert list(Image.objects.order_by("id").values_list("id", "vispr_id", "sha256", "file")) == before
    assert out.startswith("Images added: 0; attached to existing records: 0; files skipped: 7.")
    assert "skipped 2017_10000580.jpg: already imported as 2017_10000580" in out


@pytest.mark.django_db
def test_same_content_as_a_stored_image_is_refused(folder, tmp_path):
    run(str(folder), "--split", "test")
    second = tmp_path / "more"
    second.mkdir()
    shutil.copy(folder / "2017_10000582.jpg", second / "2017_30000000.png")
    out = run(str(second), "--split", "test")
    assert "skipped 2017_30000000.png: same content as 2017_10000582" in out
    assert not Image.objects.filter(vispr_id="2017_30000000").exists()


@pytest.mark.django_db
def test_files_attach_to_records_created_by_the_cprt_import(folder):
    Image.objects.create(vispr_id="2017_10000580", split="test", published_level=1, published_score=0.9)
    Image.objects.create(vispr_id="2017_10000582", split="train", published_level=2, published_score=0.6)
    out = run(str(folder), "--split", "test")
    assert "Images added: 1; attached to existing records: 1;" in out
    attached = Image.objects.get(vispr_id="2017_10000580")
    assert attached.has_file and attached.published_score == 0.9 and attached.width == 64
    assert "skipped 2017_10000582.jpg: 2017_10000582 is registered in split train, not test" in out
    assert not Image.objects.get(vispr_id="2017_10000582").has_file


@pytest.mark.django_db
def test_missing_folder_and_bad_split_change_nothing(tmp_path):
    before = (Image.objects.count(), AuditEvent.objects.count())
    with pytest.raises(CommandError, match="is not a folder"):
        run(str(tmp_path / "missing"), "--split", "test")
    with pytest.raises(CommandError):
        run(str(tmp_path), "--split", "validation")
    assert (Image.objects.count(), AuditEvent.objects.count()) == before
