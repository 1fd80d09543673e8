"""import_multipriv: MultiPriv's individual-level layout in, persons and their images stored apart.

A malformed file or folder refuses the whole import (nothing written, every problem listed);
entries that are not candidates are skipped with a reason; a second run adds nothing.
"""
from __future__ import annotations

import io
import json
import os

import pytest
from django.core.management import CommandError, call_command
from PIL import Image as PILImage

from annotations.models import Image
from benchmarks.multipriv.models import Person, PersonImage
from core.models import AuditEvent
from tests.conftest import png_bytes


def write_person(base, name, profile, images=("A1.png", "B1.png"), json_name=None):
    folder = base / name
    folder.mkdir(parents=True)
    (folder / (json_name or f"{name}.json")).write_text(json.dumps([profile], ensure_ascii=False), encoding="utf-8")
    for i, image in enumerate(images):
        (folder / image).write_bytes(png_bytes(color=(10 * i, 20, hash(name) % 200)))
    return folder


@pytest.fixture
def release(tmp_path):
    """A copy of the release's shape: VLM/individual-level/, one English, one Chinese person (its
    profile file named after another number, as released), and a file that is not a person."""
    base = tmp_path / "MultiPriv-PII" / "VLM" / "individual-level"
    write_person(base, "person_1", {"Name": "Amy", "ID Number": "2015188005046234", "Birth": "1990.5.4", "Terminal": "None"},
                 images=("A1.png", "A2.png", "D3.png"))
    write_person(base, "person_21", {"姓名": "Bob", "证件号": "110116199204015678", "出生日期": "1992年4月1日"},
                 images=("B1.png",), json_name="person_2.json")
    (base / "README.txt").write_text("not a person")
    return tmp_path / "MultiPriv-PII"


def run(root, *args) -> dict:
    out = io.StringIO()
    call_command("import_multipriv", str(root), "--json", *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.django_db
def test_imports_persons_images_and_profiles(release):
    done = run(release)
    assert (done["persons"], done["images"], done["fields"]) == (2, 4, 6)  # "None" is absent, not a field
    assert (done["added_persons"], done["added_images"]) == (2, 4)
    assert done["skipped"] == [{"path": "README.txt", "reason": "not a person folder"}]
    amy = Person.objects.get(name="person_1")
    assert amy.profile == {"Name": "Amy", "ID Number": "2015188005046234", "Birth": "1990.5.4", "Terminal": None}
    assert [i.label for i in amy.images.all()] == ["A1", "A2", "D3"]
    bob = Person.objects.get(name="person_21")
    assert bob.profile == {"Name": "Bob", "ID Number": "110116199204015678", "Birth": "1992年4月1日"}  # Chinese names mapped
    assert bob.raw_profile["姓名"] == "Bob" and bob.profile_file == "person_2.json"
    # Stored apart from the CPRT images: never in the labeling queue, run selections or exports.
    assert Image.objects.count() == 0
    stored = PersonImage.objects.first()
    assert stored.file.name.endswith(f"{stored.sha256}.png") and stored.file.storage.exists(stored.file.name)
    assert AuditEvent.objects.filter(action="import_multipriv").count() == 1


@pytest.mark.django_db
def test_a_second_run_adds_nothing_and_a_changed_profile_is_updated(release):
    run(release)
    out = io.StringIO()
    call_command("import_multipriv", str(release), stdout=out)
    assert "Nothing new" in out.getvalue()
    profile = release / "VLM" / "individual-level" / "person_1" / "person_1.json"
    profile.write_text(json.dumps([{"Name": "Amy B.", "Birth": "1990.5.4"}]), encoding="utf-8")
    done = run(release)
    assert (done["added_persons"], done["updated_persons"], done["added_images"], done["unchanged_images"]) == (0, 1, 0, 4)
    assert Person.objects.get(name="person_1").profile == {"Name": "Amy B.", "Birth": "1990.5.4"}


@pytest.mark.django_db
def test_the_individual_level_folder_itself_is_accepted(release):
    assert run(release / "VLM" / "individual-level")["persons"] == 2


def bomb_png() -> bytes:
    buf = io.BytesIO()
    PILImage.new("1", (10000, 10000)).save(buf, format="PNG")
    return buf.getvalue()


def _break_symlink(person):
    (person / "A9.png").symlink_to(person / "A1.png")


HOSTILE = {
    "malformed JSON": (lambda p: (p / "person_1.json").write_text("[{\"Name\": "), "not valid UTF-8 JSON"),
    "not a list of one object": (lambda p: (p / "person_1.json").write_text("[{}, {}]"), "one object"),
    "an empty profile": (lambda p: (p / "person_1.json").write_text("[{}]"), "no fields"),
    "a nested value": (lambda p: (p / "person_1.json").write_text('[{"Name": {"first": "A"}}]'), "expected text or a number"),
    "two profiles": (lambda p: (p / "other.json").write_text('[{"Name": "B"}]'), "expected one profile .json file"),
    "no profile": (lambda p: (p / "person_1.json").unlink(), "found none"),
    "an image that is text": (lambda p: (p / "C1.png").write_text("hello"), "not an image"),
    "a decompression bomb": (lambda p: (p / "C2.png").write_bytes(bomb_png()), "pixel"),
    "a symbolic link": (_break_symlink, "symbolic link"),
    "the same slot twice": (lambda p: (p / "A1.jpg").write_bytes(png_bytes(color=(1, 2, 3))), "same category and index"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_folders_are_refused_and_nothing_is_written(release, case, settings):
    settings.CPRT_MAX_IMAGE_PIXELS = 1_000_000
    person = release / "VLM" / "individual-level" / "person_1"
    damage, message = HOSTILE[case]
    damage(person)
    with pytest.raises(CommandError) as err:
        run(release)
    assert "nothing was written" in str(err.value) and message in str(err.value), str(err.value)
    assert Person.objects.count() == PersonImage.objects.count() == 0
    assert not AuditEvent.objects.filter(action="import_multipriv").exists()


@pytest.mark.django_db
def test_a_folder_without_persons_is_refused(tmp_path):
    (tmp_path / "photos").mkdir()
    with pytest.raises(CommandError, match="no person_<n> folders found"):
        run(tmp_path / "photos")
    with pytest.raises(CommandError, match="is not a folder"):
        run(tmp_path / "missing")


@pytest.mark.django_db
def test_odd_names_are_skipped_with_a_reason(release):
    person = release / "VLM" / "individual-level" / "person_1"
    (person / "notes.txt").write_text("x")
    (person / "Z1.png").write_bytes(png_bytes())
    (release / "VLM" / "individual-level" / "person_x").mkdir()
    os.mkfifo(person / "H1.png")
    done = run(release)
    reasons = {s["path"]: s["reason"] for s in done["skipped"]}
    assert "neither a profile" in reasons["person_1/notes.txt"] and "neither a profile" in reasons["person_1/Z1.png"]
    assert reasons["person_x"] == "folder name is not person_<n>"
    assert reasons["person_1/H1.png"] == "not a regular file"
    assert done["images"] == 4
