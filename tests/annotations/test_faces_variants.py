"""Face detection and the anonymized variant of one image, on real photographs (annotations/faces)."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image as PILImage

from annotations.faces import detector, pixels, variants
from annotations.faces.models import FaceVariant
from tests.support import faces as photos


def test_detector_finds_the_astronauts_face_and_nothing_on_coffee():
    faces = detector.detect(photos.astronaut())
    assert len(faces) == 1
    face = faces[0]
    assert face.score > 0.8
    x1, y1, x2, y2 = photos.ASTRONAUT_FACE
    assert abs(face.x1 - x1) < 15 and abs(face.y1 - y1) < 15 and abs(face.x2 - x2) < 15 and abs(face.y2 - y2) < 15
    assert detector.detect(photos.coffee()) == []


def test_the_session_takes_only_the_image_so_onnxruntime_can_treat_the_weights_as_constants():
    # The ONNX file lists its 194 weights as graph inputs too; left there, onnxruntime keeps them
    # overridable and skips the constant-weight optimizations (about 1.5x slower, docs/faces.md).
    assert detector.session().get_overridable_initializers() == []
    assert [i.name for i in detector.session().get_inputs()] == ["input.1"]


def test_boxes_are_mapped_back_to_the_original_size():
    big = photos.astronaut().resize((2048, 2048))  # detected at DETECT_MAX_SIDE, boxes in 2048-pixel units
    (face,) = detector.detect(big)
    x1, y1, x2, y2 = (4 * v for v in photos.ASTRONAUT_FACE)
    assert abs(face.x1 - x1) < 60 and abs(face.y2 - y2) < 60 and abs(face.x2 - x2) < 60


@pytest.mark.parametrize("method", pixels.METHODS)
def test_variant_removes_the_face_keeps_the_rest_and_passes_the_residual_check(db, method):
    image = photos.store("2017_astro_png", photos.encoded(photos.astronaut()))
    variant, created = variants.make_variant(image, method=method)
    assert created and variant.faces == 1 and len(variant.boxes) == 1
    assert variant.residual_faces == 0 and variant.residual_boxes == []
    assert (variant.method, variant.threshold, variant.margin) == (method, 0.5, 0.2)
    before, after = photos.pixels(image.file), photos.pixels(variant.file)
    assert before.shape == after.shape
    left, top, right, bottom = pixels.region(variant.boxes[0], variant.margin, (image.width, image.height))
    inside = np.zeros(before.shape[:2], dtype=bool)
    inside[top:bottom, left:right] = True
    face_change = np.abs(before - after)[inside].mean()
    assert face_change > 15, face_change  # the face really changed
    assert np.abs(before - after)[~inside].max() == 0  # PNG in, PNG out: the rest is untouched
    x1, y1, x2, y2 = photos.ASTRONAUT_FACE
    assert left <= x1 and top <= y1 and right >= x2 and bottom >= y2


def test_jpeg_variant_keeps_the_rest_within_a_small_tolerance_and_carries_no_metadata(db):
    raw = photos.encoded(photos.astronaut(), gps=True)
    assert b"CameraMaker" in raw  # the upload carried camera and GPS fields
    image = photos.store("2017_astro_jpg", raw)
    variant, _ = variants.make_variant(image)
    assert variant.file.name.endswith(".jpg")
    with variant.file.storage.open(variant.file.name, "rb") as fh:
        stored = fh.read()
    with PILImage.open(variant.file.storage.path(variant.file.name)) as img:
        assert not img.getexif()
        assert "icc_profile" not in img.info and "xmp" not in img.info and "exif" not in img.info
    assert b"CameraMaker" not in stored and b"Exif" not in stored and b"http://ns.adobe.com/xap" not in stored
    before, after = photos.pixels(image.file), photos.pixels(variant.file)
    left, top, right, bottom = pixels.region(variant.boxes[0], variant.margin, (image.width, image.height))
    outside = np.ones(before.shape[:2], dtype=bool)
    outside[max(0, top - 8):bottom + 8, max(0, left - 8):right + 8] = False  # JPEG blocks touching the region
    assert np.abs(before - after)[outside].mean() < 1.5
    assert variant.residual_faces == 0


def test_no_face_image_gets_no_box_and_unchanged_pixels(db):
    image = photos.store("2017_coffee", photos.encoded(photos.coffee()))
    variant, created = variants.make_variant(image, method="fill")
    assert created and variant.boxes == [] and variant.faces == 0 and variant.residual_faces == 0
    assert np.array_equal(photos.pixels(image.file), photos.pixels(variant.file))


def test_same_setting_twice_is_stored_once(db):
    image = photos.store("2017_astro_twice", photos.encoded(photos.astronaut()))
    first, created = variants.make_variant(image)
    again, created_again = variants.make_variant(image)
    assert created and not created_again and again.pk == first.pk
    other, created_other = variants.make_variant(image, method="pixelate")
    assert created_other and other.pk != first.pk
    assert FaceVariant.objects.count() == 2


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"method": "smudge"}, "method must be one of blur, pixelate, fill"),
    ({"threshold": 0}, "threshold must be a number between 0.01 and 0.99"),
    ({"threshold": 1.5}, "threshold must be a number between 0.01 and 0.99"),
    ({"threshold": "0.5"}, "threshold must be a number"),
    ({"threshold": True}, "threshold must be a number"),
    ({"margin": -0.1}, "margin must be a number between 0 and 1"),
])
def test_bad_setting_is_refused_and_changes_nothing(db, kwargs, message):
    image = photos.store("2017_astro_bad", photos.encoded(photos.astronaut()))
    with pytest.raises(variants.VariantError, match=message):
        variants.make_variant(image, **kwargs)
    assert not FaceVariant.objects.exists()


def test_missing_original_file_is_a_clear_error(db, make_image):
    image = make_image("2017_gone")
    image.file.storage.delete(image.file.name)
    with pytest.raises(variants.VariantError, match=r"image 2017_gone: the stored file .* is missing"):
        variants.make_variant(image)
    no_file = make_image("2017_nofile", with_file=False)
    with pytest.raises(variants.VariantError, match="has no stored file"):
        variants.make_variant(no_file)
    assert not FaceVariant.objects.exists()


def test_unreadable_original_is_a_clear_error(db, make_image):
    image = make_image("2017_garbled", color=(1, 2, 3))
    path = image.file.storage.path(image.file.name)
    with open(path, "wb") as fh:
        fh.write(b"\x89PNG\r\n\x1a\nnot really")
    with pytest.raises(variants.VariantError, match="is not a readable image"):
        variants.make_variant(image)
    assert not FaceVariant.objects.exists()


def test_unreadable_variant_fails_the_residual_pass_and_changes_nothing(db):
    image = photos.store("2017_astro_garbled_variant", photos.encoded(photos.astronaut()))
    variant, _ = variants.make_variant(image)
    # Content-addressed storage: the variant's file is its own (the face changed), so garbling it touches no original.
    assert variant.file.name != image.file.name
    with open(variant.file.storage.path(variant.file.name), "wb") as fh:
        fh.write(b"garbage")
    with pytest.raises(variants.VariantError, match="the anonymized variant of 2017_astro_garbled_variant .*not a readable image"):
        variants.residual_pass(variant)
    variant.refresh_from_db()
    assert variant.residual_faces == 0 and variant.faces == 1
    variant.file.storage.delete(variant.file.name)
    with pytest.raises(variants.VariantError, match="is missing"):
        variants.residual_pass(variant)


def test_two_workers_storing_the_same_setting_keep_one_row(db):
    """Two executions that computed the same variant (a resume racing a slow worker): the unique
    constraint keeps the first row, the second store returns it and writes no second row."""
    image = photos.store("2017_astro_race", photos.encoded(photos.astronaut()))
    with image.file.storage.open(image.file.name, "rb") as fh:
        raw = fh.read()
    computed = variants.compute(raw, "png", "fill", 0.5, 0.2)
    first, created = variants.store(image, "fill", 0.5, 0.2, computed)
    second, created_again = variants.store(image, "fill", 0.5, 0.2, computed)
    assert created and not created_again and second.pk == first.pk
    assert FaceVariant.objects.filter(image=image).count() == 1


def test_the_residual_pass_looks_only_where_pixels_changed_and_still_finds_a_face_left_there(db, monkeypatch):
    """One network pass for an image without a face; with a face, the second pass runs on the region
    around the anonymized box only, and an anonymization that changed nothing is caught there."""
    seen = []
    real_detect = detector.detect

    def counting(img, threshold=detector.DEFAULT_THRESHOLD):
        seen.append(img.size)
        return real_detect(img, threshold)

    monkeypatch.setattr(detector, "detect", counting)
    variants.make_variant(photos.store("2017_coffee_once", photos.encoded(photos.coffee())))
    assert len(seen) == 1  # no face: no second pass
    seen.clear()
    astronaut = photos.astronaut()
    monkeypatch.setattr(pixels, "anonymize", lambda img, boxes, method, margin: img.copy())  # a method that removes nothing
    variant, _ = variants.make_variant(photos.store("2017_astro_kept", photos.encoded(astronaut)), method="fill")
    assert len(seen) == 2 and seen[1][0] * seen[1][1] < astronaut.size[0] * astronaut.size[1] / 2  # the region, not the image
    assert variant.residual_faces == 1
    (found,), (whole,) = variant.residual_boxes, real_detect(astronaut)
    assert all(abs(a - b) < 12 for a, b in zip(found[:4], whole.as_list()[:4]))  # in the image's coordinates
