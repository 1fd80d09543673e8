"""import_vispr on a folder in VISPR's real layout: splits, labels, attributes, the vispr annotator,
idempotence, and hostile input (refused with a message per file, nothing written)."""
from __future__ import annotations

import io
import json
import os

import pytest
from django.core.management import CommandError, call_command

from annotations import taxonomy
from annotations.models import Annotator, Image, Label, VisprAttribute
from core.models import AuditEvent
from tests.support.vispr_release import jpeg, write_annotation, write_release

SPLITS = {
    "test2017": {"2017_10000001": ["a4_gender", "a9_face_complete"], "2017_10000002": ["a0_safe"],
                 "2017_10000003": ["a30_credit_card", "a2_weight_approx"]},
    "val2017": {"2017_20000001": ["a73_landmark", "a82_date_time"]},
    "train2017": {"2017_30000001": ["a31_passport"]},
}


@pytest.fixture
def release(tmp_path):
    return write_release(tmp_path / "vispr", SPLITS)


def run(*args) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_vispr", *map(str, args), stdout=out, stderr=err)
    return out.getvalue()


def vispr_values(vispr_id: str) -> dict:
    return {label.attribute.key: label.value
            for label in Label.objects.filter(image__vispr_id=vispr_id, annotator__name="vispr").select_related("attribute")}


def nothing_written():
    return not (Image.objects.exists() or VisprAttribute.objects.exists() or Label.objects.exists()
                or AuditEvent.objects.filter(action="import_vispr").exists())


@pytest.mark.django_db
def test_release_imports_test_and_val_with_labels_mapping_shown(release):
    out = run(release)
    assert "Splits: test2017 -> test, val2017 -> train; present, not imported: train2017 (ask with --vispr-split)." in out
    assert "11 attributes" in out and "Images added: 4;" in out
    image = Image.objects.get(vispr_id="2017_10000001")
    assert (image.split, image.vispr_split, image.vispr_labels) == ("test", "test2017", ["a4_gender", "a9_face_complete"])
    assert image.has_file and image.sha256 and image.width == 24
    assert Image.objects.get(vispr_id="2017_20000001").split == "train"
    assert not Image.objects.filter(vispr_id="2017_30000001").exists()
    assert VisprAttribute.objects.get(attribute_id="a9_face_complete").description == "Full face"
    assert VisprAttribute.objects.count() == 11
    # The vispr annotator: kind dataset, 0/1 on the 21 mapped attributes, no label on emotion_mental_health.
    annotator = Annotator.objects.get(name="vispr")
    assert annotator.kind == Annotator.KIND_DATASET
    values = vispr_values("2017_10000001")
    assert len(values) == 21 and "emotion_mental_health" not in values
    assert values["biometrics"] == 1.0 and values["gender"] == 1.0 and values["financial_data"] == 0.0
    assert Label.objects.get(image=image, annotator=annotator, attribute__key="biometrics").rationale == "VISPR: a9_face_complete"
    assert set(vispr_values("2017_10000002").values()) == {0.0}  # a0_safe alone: nothing private
    assert vispr_values("2017_10000003")["financial_data"] == 1.0  # the unmapped a2 stays on the image only
    assert Image.objects.get(vispr_id="2017_10000003").vispr_labels == ["a2_weight_approx", "a30_credit_card"]
    assert vispr_values("2017_20000001")["location"] == 1.0 and vispr_values("2017_20000001")["metadata"] == 1.0
    event = AuditEvent.objects.get(action="import_vispr")
    assert event.data["added"] == 4 and event.data["splits"] == {"test2017": "test", "val2017": "train"}


@pytest.mark.django_db
def test_train2017_only_when_asked_and_the_mapping_is_configurable(release):
    out = run(release, "--vispr-split", "train2017", "--map", "train2017=other")
    assert "Splits: train2017 -> other; present, not imported: test2017, val2017" in out
    assert list(Image.objects.values_list("vispr_id", "split", "vispr_split")) == [("2017_30000001", "other", "train2017")]
    with pytest.raises(CommandError, match="split\\(s\\) val2016 not found"):
        run(release, "--vispr-split", "val2016")
    with pytest.raises(CommandError, match="expected VISPR_SPLIT=OURS"):
        run(release, "--map", "test2017=validation")
    with pytest.raises(CommandError, match="--split is for a plain folder"):
        run(release, "--split", "test")
    assert Image.objects.count() == 1


@pytest.mark.django_db
def test_second_run_adds_nothing_and_changed_annotations_update_labels(release):
    run(release)
    before = list(Image.objects.order_by("id").values_list("id", "file", "sha256", "vispr_labels"))
    labels_before = Label.objects.count()
    out = run(release)
    assert "Images added: 0; attached to existing records: 0; labels updated: 0; unchanged: 4; files skipped: 0." in out
    assert "Nothing new" in out
    assert list(Image.objects.order_by("id").values_list("id", "file", "sha256", "vispr_labels")) == before
    assert Label.objects.count() == labels_before
    # An annotation changes: its labels (and the vispr annotator's) follow, with a history row.
    write_annotation(release, "test2017", "2017_10000002", ["a43_medicine"])
    out = run(release)
    assert "labels updated: 1; unchanged: 3;" in out and "1 changed" in out and "Nothing new" not in out
    assert Image.objects.get(vispr_id="2017_10000002").vispr_labels == ["a43_medicine"]
    assert vispr_values("2017_10000002")["medical_data"] == 1.0
    label = Label.objects.get(image__vispr_id="2017_10000002", annotator__name="vispr", attribute__key="medical_data")
    assert [h.value for h in label.history.order_by("history_date")] == [0.0, 1.0]


@pytest.mark.django_db
def test_json_output(release):
    data = json.loads(run(release, "--json"))
    assert data["added"] == 4 and data["splits"] == {"test2017": "test", "val2017": "train"} and data["not_imported"] == ["train2017"]
    assert data["vispr_labels"]["created"] == 4 * 21 and data["nothing_new"] is False
    assert json.loads(run(release, "--json"))["nothing_new"] is True


def bomb() -> bytes:
    from PIL import Image as PILImage

    buf = io.BytesIO()
    PILImage.new("1", (10000, 10000)).save(buf, format="PNG")
    return buf.getvalue()


# name -> (how to break the release, the file named, the reason shown)
HOSTILE = {
    "malformed JSON": (lambda r: (r / "annotations/test2017/2017_10000001.json").write_text("{not json"),
                       "annotations/test2017/2017_10000001.json", "malformed JSON"),
    "id disagrees": (lambda r: write_annotation(r, "test2017", "2017_10000001", ["a4_gender"], id="2017_99999999"),
                     "annotations/test2017/2017_10000001.json", "disagrees with its file name"),
    "unknown attribute": (lambda r: write_annotation(r, "test2017", "2017_10000002", ["a0_safe", "a999_alien"]),
                          "annotations/test2017/2017_10000002.json", "unknown attribute id(s) a999_alien (not in attributes.tsv)"),
    "labels not a list": (lambda r: (r / "annotations/val2017/2017_20000001.json").write_text('{"id": "2017_20000001", "labels": "a4_gender"}'),
                          "annotations/val2017/2017_20000001.json", '"labels" must be a list'),
    "NaN in JSON": (lambda r: (r / "annotations/val2017/2017_20000001.json").write_text('{"id": "2017_20000001", "labels": [], "x": NaN}'),
                    "annotations/val2017/2017_20000001.json", "malformed JSON"),
    "image_path names another": (lambda r: write_annotation(r, "test2017", "2017_10000003", [], image_path="images/test2017/2017_1.jpg"),
                                 "annotations/test2017/2017_10000003.json", "names another image"),
    "not an image": (lambda r: (r / "images/test2017/2017_10000002.jpg").write_bytes(b"GIF89a hello"),
                     "images/test2017/2017_10000002.jpg", "not an image Pillow can read"),
    "decompression bomb": (lambda r: (r / "images/val2017/2017_20000001.jpg").write_bytes(bomb()),
                           "images/val2017/2017_20000001.jpg", "decompression bomb"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_file_refuses_the_import_with_a_message_and_writes_nothing(release, case, settings):
    settings.CPRT_MAX_IMAGE_PIXELS = 1_000_000
    breaking, name, reason = HOSTILE[case]
    breaking(release)
    with pytest.raises(CommandError) as exc:
        run(release)
    message = str(exc.value)
    assert "nothing was written" in message and "1 file(s) cannot be imported" in message
    line = next(line for line in message.splitlines() if line.startswith(f"  {name}:"))
    assert reason in line, line
    assert nothing_written()


@pytest.mark.django_db
def test_every_problem_is_listed_at_once(release):
    for case in ("malformed JSON", "unknown attribute", "not an image"):
        HOSTILE[case][0](release)
    with pytest.raises(CommandError, match="3 file\\(s\\) cannot be imported"):
        run(release)
    assert nothing_written()


@pytest.mark.django_db
@pytest.mark.parametrize("content, reason", [
    (None, "attributes.tsv is missing"),
    ("0\ta0_safe\tSafe\nnot a line\n", "line 2: expected idx<TAB>attribute_id<TAB>description"),
    ("0\ta0_safe\tSafe\n1\ta0_safe\tagain\n", "line 2: a0_safe again (also line 1)"),
    ("", "no attribute listed"),
])
def test_bad_attributes_tsv_refuses(release, content, reason):
    path = release / "attributes.tsv"
    path.unlink()
    if content is not None:
        path.write_text(content)
    with pytest.raises(CommandError) as exc:
        run(release)
    assert reason in str(exc.value) and "nothing was written" in str(exc.value)
    assert nothing_written()


@pytest.mark.django_db
def test_files_that_are_not_candidates_are_skipped_with_reasons(release, tmp_path):
    images, annotations = release / "images" / "test2017", release / "annotations" / "test2017"
    outside = tmp_path / "secret.jpg"
    outside.write_bytes(jpeg(99))
    os.symlink(outside, images / "2017_10000009.jpg")  # a link: never followed
    (images / "2017_10000010.jpg").write_bytes(jpeg(50))  # an image without annotation
    write_annotation(release, "test2017", "2017_10000011", ["a4_gender"])  # an annotation without image
    (images / "bad name!.jpg").write_bytes(jpeg(51))
    (annotations / "notes.txt").write_text("hello")
    (images / "2017_10000012.jpg").write_bytes(jpeg(52))
    write_annotation(release, "test2017", "2017_10000012", ["a4_gender"])  # not listed in test2017.txt
    os.symlink(outside, annotations / "2017_10000013.json")
    os.mkfifo(annotations / "2017_10000014.json")  # reading it could block: never opened
    out = run(release)
    expected = {
        "images/test2017/2017_10000009.jpg": "a symbolic link (not followed)",
        "images/test2017/2017_10000010.jpg": "no annotation file (annotations/test2017/2017_10000010.json)",
        "annotations/test2017/2017_10000011.json": "not listed in test2017.txt",
        "images/test2017/bad name!.jpg": "file name is not a VISPR id",
        "annotations/test2017/notes.txt": "not an annotation file name",
        "annotations/test2017/2017_10000012.json": "not listed in test2017.txt",
        "images/test2017/2017_10000012.jpg": "its annotation annotations/test2017/2017_10000012.json was skipped: not listed in test2017.txt",
        "annotations/test2017/2017_10000013.json": "a symbolic link (not followed)",
        "annotations/test2017/2017_10000014.json": "not a regular file",
    }
    for name, reason in expected.items():
        line = next((line for line in out.splitlines() if line.startswith(f"  skipped {name}:")), None)
        assert line is not None and reason in line, (name, out)
    assert "Images added: 4;" in out
    assert not Image.objects.filter(vispr_id__in=["2017_10000009", "2017_10000010", "2017_10000011", "2017_10000012"]).exists()
    # Without the split list, an annotation without image is named as such.
    (release / "test2017.txt").unlink()
    out = run(release)
    assert "skipped annotations/test2017/2017_10000011.json: no image file (images/test2017/2017_10000011.jpg)" in out
    assert "Images added: 1;" in out  # 2017_10000012, now that no list leaves it out


@pytest.mark.django_db
def test_plain_folder_still_needs_a_split_and_release_options_are_refused_there(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "2017_1.jpg").write_bytes(jpeg(1))
    with pytest.raises(CommandError, match="give --split test\\|train\\|other"):
        run(folder)
    with pytest.raises(CommandError, match="--vispr-split and --map apply to a release only"):
        run(folder, "--split", "test", "--vispr-split", "test2017")
    assert not Image.objects.exists()
    assert json.loads(run(folder, "--split", "test", "--json"))["added"] == 1


@pytest.mark.django_db
def test_a_plainly_imported_image_gets_its_labels_from_the_release(release, tmp_path):
    run(release / "images" / "test2017", "--split", "test")
    assert Image.objects.get(vispr_id="2017_10000001").vispr_labels == []
    out = run(release)
    assert "Images added: 1; attached to existing records: 0; labels updated: 3;" in out
    assert Image.objects.get(vispr_id="2017_10000001").vispr_split == "test2017"
    assert vispr_values("2017_10000001")["biometrics"] == 1.0


@pytest.mark.django_db
def test_progress_goes_to_stderr(release):
    err = io.StringIO()
    call_command("import_vispr", str(release), stdout=io.StringIO(), stderr=err)
    assert "files," in err.getvalue() and "/s" in err.getvalue()
    assert len(taxonomy.active().keys) == 22
