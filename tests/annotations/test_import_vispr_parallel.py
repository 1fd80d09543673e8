"""The VISPR import's decode/clean/store loop at scale (issue 37): images cleaned on a few threads, in
the folder's order; their hashes looked up by chunk (one query per chunk, not one per image); the
results exactly those of one image at a time (same content skipped against the folder and the store,
refusals listed); no warnings filter left behind by the threads."""
from __future__ import annotations

import warnings

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from PIL import Image as PILImage

from annotations.images import ImageRejected, clean_image
from annotations.services import vispr
from tests.conftest import png_bytes

pytestmark = pytest.mark.django_db


def write_images(folder, n: int, start: int = 0):
    for i in range(start, start + n):
        (folder / f"2017_{10000000 + i}.png").write_bytes(png_bytes(color=(i % 256, (i * 7) % 256, 40)))


def test_hashes_are_looked_up_per_chunk_not_per_image(tmp_path, monkeypatch):
    folder, parking = tmp_path / "f", tmp_path / "p"
    folder.mkdir()
    parking.mkdir()
    monkeypatch.setattr(vispr, "CLEAN_CHUNK", 8)
    write_images(folder, 20)
    with CaptureQueriesContext(connection) as ctx:
        accepted, skipped, refused = vispr.check_folder(folder, "test", parking)
    assert [a.vispr_id for a in accepted] == [f"2017_{10000000 + i}" for i in range(20)] and not skipped and not refused
    hash_queries = [q for q in ctx.captured_queries if '"sha256" IN' in q["sql"]]
    assert len(hash_queries) == 3 and len(ctx.captured_queries) <= 4  # 20 images in chunks of 8; the known ids once


def test_same_content_is_skipped_as_one_at_a_time_did(tmp_path, make_image, monkeypatch):
    stored = make_image("2017_09999999", color=(3, 3, 3))
    folder, parking = tmp_path / "f", tmp_path / "p"
    folder.mkdir()
    parking.mkdir()
    monkeypatch.setattr(vispr, "CLEAN_CHUNK", 2)
    (folder / "2017_10000001.png").write_bytes(png_bytes(color=(5, 5, 5)))
    (folder / "2017_10000002.png").write_bytes(png_bytes(color=(3, 3, 3)))  # as the stored image
    (folder / "2017_10000003.png").write_bytes(png_bytes(color=(5, 5, 5)))  # as the first file, in another chunk
    (folder / "2017_10000004.png").write_bytes(b"not an image")
    ticks = []
    accepted, skipped, refused = vispr.check_folder(folder, "test", parking, progress=ticks.append)
    assert [a.vispr_id for a in accepted] == ["2017_10000001"]
    assert skipped == [("2017_10000002.png", f"same content as {stored.vispr_id}"), ("2017_10000003.png", "same content as 2017_10000001.png")]
    assert [name for name, _ in refused] == ["2017_10000004.png"]
    assert sum(ticks) == 4  # every entry counted once


def test_threads_leave_the_warnings_filters_alone_and_pillows_bomb_limit_still_refuses(tmp_path, settings, monkeypatch):
    before = list(warnings.filters)
    folder, parking = tmp_path / "f", tmp_path / "p"
    folder.mkdir()
    parking.mkdir()
    write_images(folder, 12)
    vispr.check_folder(folder, "test", parking)
    assert warnings.filters == before
    settings.CPRT_MAX_IMAGE_PIXELS = 10_000_000
    monkeypatch.setattr(PILImage, "MAX_IMAGE_PIXELS", 500)  # Pillow's limit under ours: its warning refuses too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ImageRejected, match="decompression bomb"):
            clean_image(png_bytes(40, 30))


def test_a_failed_write_removes_every_file_it_stored(tmp_path, monkeypatch):
    from annotations.models import Image
    from annotations.services.vispr_release import import_release
    from tests.support.vispr_release import write_release

    from .test_import_vispr_release import SPLITS

    root = write_release(tmp_path / "vispr", SPLITS)
    storage = Image._meta.get_field("file").storage  # stored under tmp_path for this test only
    for name in ("base_location", "location"):
        monkeypatch.setattr(storage, name, str(tmp_path / "store"))

    def cancelled():
        assert list((tmp_path / "store").rglob("*.jpg")), "the files are stored before the commit"
        raise RuntimeError("cancelled")

    with pytest.raises(RuntimeError, match="cancelled"):
        import_release(root, before_commit=cancelled)
    assert not list((tmp_path / "store").rglob("*.*")) and not Image.objects.exists()


@pytest.mark.parametrize("mode", [None, 0o640])
def test_parked_files_are_renamed_into_place_as_the_storage_would_write_them(tmp_path, monkeypatch, mode):
    """Cleaned bytes are parked inside the storage's folder and renamed into place (no second copy): the
    stored file has the bytes clean_image made, the permissions the storage gives a file it writes
    itself, and no parking folder stays behind."""
    import os

    from annotations.models import Image

    storage = Image._meta.get_field("file").storage
    for name in ("base_location", "location"):
        monkeypatch.setattr(storage, name, str(tmp_path / "store"))
    monkeypatch.setattr(storage, "file_permissions_mode", mode)
    folder = tmp_path / "f"
    folder.mkdir()
    write_images(folder, 5)
    result = vispr.import_folder(folder, "test")
    assert result.added == 5
    umask = os.umask(0)
    os.umask(umask)
    for image in Image.objects.all():
        path = tmp_path / "store" / image.file.name
        expected = clean_image((folder / f"{image.vispr_id}.png").read_bytes())
        assert path.read_bytes() == storage.open(image.file.name).read() and image.sha256 == expected.sha256
        assert path.read_bytes() == expected.data
        assert path.stat().st_mode & 0o777 == (mode if mode is not None else 0o666 & ~umask)
    assert [p.name for p in (tmp_path / "store").iterdir() if p.name.startswith(".")] == []
