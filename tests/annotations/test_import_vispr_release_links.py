"""import_vispr on a release whose folders are symbolic links (images kept on another disk): followed
and named in the output [decision], refused naming a link that leads nowhere; and skip reasons that
name the real cause (the same pixels as another image; an annotation left out of <split>.txt)."""
from __future__ import annotations

import io
import json
import os
import shutil

import pytest
from django.core.management import CommandError, call_command

from annotations.models import Image
from core.models import AuditEvent
from tests.support.vispr_release import jpeg, write_annotation, write_release

SPLITS = {
    "test2017": {"2017_10000001": ["a4_gender"], "2017_10000002": ["a0_safe"]},
    "val2017": {"2017_20000001": ["a73_landmark"]},
}


def run(*args) -> str:
    out = io.StringIO()
    call_command("import_vispr", *map(str, args), stdout=out, stderr=io.StringIO())
    return out.getvalue()


def move_and_link(release, relative: str, elsewhere):
    """Move release/relative to `elsewhere` and leave a symbolic link in its place."""
    shutil.move(release / relative, elsewhere)
    os.symlink(elsewhere, release / relative)


@pytest.fixture
def release(tmp_path):
    return write_release(tmp_path / "vispr", SPLITS)


@pytest.mark.django_db
@pytest.mark.parametrize("relative", ["images", "images/test2017", "annotations", "annotations/test2017"])
def test_a_linked_folder_is_followed_and_named_in_the_output(release, tmp_path, relative):
    elsewhere = tmp_path / "other-disk" / relative.replace("/", "-")
    elsewhere.parent.mkdir()
    move_and_link(release, relative, elsewhere)
    out = run(release)
    assert f"Followed symbolic link {relative} -> {elsewhere.resolve()}." in out
    assert "Images added: 3;" in out and "files skipped: 0." in out
    assert sorted(Image.objects.values_list("vispr_id", "split")) == [
        ("2017_10000001", "test"), ("2017_10000002", "test"), ("2017_20000001", "train")]
    event = AuditEvent.objects.get(action="import_vispr")
    assert event.data["links"] == [{"link": relative, "target": str(elsewhere.resolve())}]
    assert json.loads(run(release, "--json"))["links"] == [{"link": relative, "target": str(elsewhere.resolve())}]


@pytest.mark.django_db
def test_a_split_link_that_leads_nowhere_refuses_naming_it(release, tmp_path):
    shutil.rmtree(release / "images" / "test2017")
    os.symlink(tmp_path / "unplugged-disk" / "test2017", release / "images" / "test2017")
    with pytest.raises(CommandError, match=r"images/test2017 \(a symbolic link to '.*unplugged-disk/test2017'\) does not lead to a folder"):
        run(release)
    with pytest.raises(CommandError, match=r"split\(s\) test2017 not found .*images/test2017 \(a symbolic link"):
        shutil.rmtree(release / "annotations" / "test2017")
        run(release, "--vispr-split", "test2017")
    assert not Image.objects.exists()


@pytest.mark.django_db
def test_an_images_link_that_leads_nowhere_is_named(release, tmp_path):
    shutil.rmtree(release / "images")
    os.symlink(tmp_path / "unplugged-disk", release / "images")
    with pytest.raises(CommandError, match=r"not a VISPR release folder .*\(images/ is a symbolic link to '.*unplugged-disk', "
                                           r"which does not lead to a folder\)"):
        run(release)
    assert not Image.objects.exists()


@pytest.mark.django_db
def test_links_to_single_files_are_still_not_followed(release, tmp_path):
    outside = tmp_path / "outside.jpg"
    outside.write_bytes(jpeg(77))
    os.symlink(outside, release / "images" / "test2017" / "2017_10000009.jpg")
    write_annotation(release, "test2017", "2017_10000009", ["a4_gender"])
    listed = release / "test2017.txt"
    listed.write_text(listed.read_text() + "annotations/test2017/2017_10000009.json\n")
    out = run(release)
    assert "skipped images/test2017/2017_10000009.jpg: a symbolic link (not followed)" in out
    assert ("skipped annotations/test2017/2017_10000009.json: its image images/test2017/2017_10000009.jpg was not imported: "
            "a symbolic link (not followed)") in out
    assert not Image.objects.filter(vispr_id="2017_10000009").exists()


@pytest.mark.django_db
def test_a_linked_split_list_is_not_followed_and_says_so(release, tmp_path):
    move_and_link(release, "test2017.txt", tmp_path / "test2017.txt")
    out = run(release)
    assert "skipped test2017.txt: a symbolic link (not followed): the split's annotations are not filtered by a list" in out


@pytest.mark.django_db
def test_an_image_with_the_same_pixels_as_another_names_that_cause_for_its_annotation_too(release):
    images = release / "images"
    (images / "test2017" / "2017_10000003.jpg").write_bytes((images / "test2017" / "2017_10000001.jpg").read_bytes())
    write_annotation(release, "test2017", "2017_10000003", ["a4_gender"])
    (images / "val2017" / "2017_20000002.jpg").write_bytes((images / "test2017" / "2017_10000002.jpg").read_bytes())
    write_annotation(release, "val2017", "2017_20000002", ["a0_safe"])
    for split, vid in (("test2017", "2017_10000003"), ("val2017", "2017_20000002")):
        listed = release / f"{split}.txt"
        listed.write_text(listed.read_text() + f"annotations/{split}/{vid}.json\n")
    out = run(release)
    assert "skipped images/test2017/2017_10000003.jpg: same content as 2017_10000001.jpg" in out
    assert ("skipped annotations/test2017/2017_10000003.json: its image images/test2017/2017_10000003.jpg was not imported: "
            "same content as 2017_10000001.jpg") in out
    # Across splits the first file is named with its folder.
    assert ("skipped annotations/val2017/2017_20000002.json: its image images/val2017/2017_20000002.jpg was not imported: "
            "same content as images/test2017/2017_10000002.jpg") in out
    assert "no image file" not in out
    # Again, once the first copy is stored: the stored image is named.
    out = run(release)
    assert ("skipped annotations/test2017/2017_10000003.json: its image images/test2017/2017_10000003.jpg was not imported: "
            "same content as 2017_10000001") in out


@pytest.mark.django_db
def test_an_annotation_left_out_of_the_split_list_names_that_cause_for_its_image_too(release):
    listed = release / "test2017.txt"
    listed.write_text("annotations/test2017/2017_10000001.json\n")
    out = run(release)
    assert "skipped annotations/test2017/2017_10000002.json: not listed in test2017.txt" in out
    assert ("skipped images/test2017/2017_10000002.jpg: its annotation annotations/test2017/2017_10000002.json was skipped: "
            "not listed in test2017.txt") in out
    assert "no annotation file" not in out
    # An image with no annotation file at all is still named as such.
    (release / "images" / "test2017" / "2017_10000004.jpg").write_bytes(jpeg(40))
    out = run(release)
    assert "skipped images/test2017/2017_10000004.jpg: no annotation file (annotations/test2017/2017_10000004.json)" in out
